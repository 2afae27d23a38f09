"""MXL5xx: the environment an MXNet project declares (requirements, pyproject, setup.py/cfg,
conda environment.yml, Dockerfile) — pins, variants, CUDA and the numpy/onnx releases that break
MXNet 1.x.

One file per rule; `checker.py` holds the text checker, which loads the evaluation
(`_dependency_sets.py`: packaging, the requirements and Dockerfile readers) only when a run has
a dependency file; `_files.py` says which files those are.
"""
