"""MXL5xx: the environment an MXNet project declares (requirements, pyproject, setup.py/cfg,
conda environment.yml, Dockerfile) — pins, variants, CUDA and the numpy/onnx releases that break
MXNet 1.x.

One file per rule: the rule's class and its check of one dependency set (MXL505 and MXL506
share one cap check), or the wording of its finding (MXL507 on what the readers could not read,
MXL508 on a package's metadata). `checker.py` holds the text checker, which loads the evaluation
(`_dependency_sets.py`: the requirements and Dockerfile readers, grouped into dependency sets,
and what the project declares as a whole) only when a run has a dependency file; `_releases.py`
holds the release tables and the version arithmetic (`packaging`, which the rules' checks import
when they run); `_files.py` says which files are dependency files; `_packages.py` whether
importing a package imports mxnet.
"""
