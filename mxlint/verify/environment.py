"""The environment of a verify job: only what Python, MXNet and CUDA read, never credentials.

The parent's environment commonly holds tokens (cloud keys, CI secrets, agent sockets); the
project's code gets none of it. Kept: the search paths, the locale, and the MXNet, CUDA,
OpenMP and BLAS settings; HOME, TMPDIR and the caches point into the job's scratch directory.
Names a project needs (a dataset directory) are passed with `pass-env`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

KEEP = frozenset(
    {
        "PATH",
        "LD_LIBRARY_PATH",
        "PYTHONPATH",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "LANG",
        "LANGUAGE",
        "TZ",
        "USER",
        "LOGNAME",
    }
)
KEEP_PREFIXES = (
    "CUDA_",
    "CUDNN_",
    "NCCL_",
    "NVIDIA_",
    "MXNET_",
    "OMP_",
    "KMP_",
    "MKL_",
    "OPENBLAS_",
    "LC_",
)
#: Dropped even under a kept prefix.
SECRET = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|(^|_)KEY($|_)", re.IGNORECASE)


def scrubbed(
    parent: Mapping[str, str], scratch_home: str, scratch_tmp: str, passed: Iterable[str] = ()
) -> dict[str, str]:
    """The parent's environment reduced to what a job may see."""
    wanted = set(passed)
    env = {
        name: value
        for name, value in parent.items()
        if name in wanted
        or ((name in KEEP or name.startswith(KEEP_PREFIXES)) and not SECRET.search(name))
    }
    env["HOME"] = scratch_home
    env["TMPDIR"] = scratch_tmp
    env["XDG_CACHE_HOME"] = os.path.join(scratch_home, ".cache")
    env["MPLCONFIGDIR"] = os.path.join(scratch_home, ".config", "matplotlib")
    # Pretrained weights already downloaded stay readable (read-only, offline).
    env.setdefault("MXNET_HOME", parent.get("MXNET_HOME") or _default_mxnet_home(parent))
    # Imports of the project must not try to write __pycache__ into it (read-only).
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _default_mxnet_home(parent: Mapping[str, str]) -> str:
    return os.path.join(parent.get("HOME") or os.path.expanduser("~"), ".mxnet")
