"""GPU detection and the CUDA 11 library preload for `mxlint[gpu]` (mxnet-cu112 from PyPI).

`libmxnet.so` of mxnet-cu112 links against libcudart.so.11.0, libcublas.so.11, libcudnn.so.8 ...
but does not look in site-packages/nvidia/*/lib where the nvidia-*-cu11 wheels put them. Loading
them first with RTLD_GLOBAL makes the dynamic loader find them when mxnet is imported.
"""

from __future__ import annotations

import ctypes
import shutil
import site
import subprocess
import sys
from pathlib import Path

#: Load order matters: dependencies before dependents.
CUDA_LIBS = (
    ("cuda_runtime", "libcudart.so.11.0", "nvidia-cuda-runtime-cu11"),
    ("cuda_nvrtc", "libnvrtc.so.11.2", "nvidia-cuda-nvrtc-cu11"),
    ("cublas", "libcublasLt.so.11", "nvidia-cublas-cu11"),
    ("cublas", "libcublas.so.11", "nvidia-cublas-cu11"),
    ("cufft", "libcufft.so.10", "nvidia-cufft-cu11"),
    ("curand", "libcurand.so.10", "nvidia-curand-cu11"),
    ("cusparse", "libcusparse.so.11", "nvidia-cusparse-cu11"),
    ("cusolver", "libcusolver.so.11", "nvidia-cusolver-cu11"),
    ("cudnn", "libcudnn.so.8", "nvidia-cudnn-cu11<9"),
    ("nccl", "libnccl.so.2", "nvidia-nccl-cu11"),
)


def nvidia_lib_dirs() -> list[Path]:
    roots = [Path(p) for p in site.getsitepackages() + [site.getusersitepackages()]]
    roots += [Path(p) for p in sys.path if p.endswith("site-packages")]
    dirs: list[Path] = []
    for root in roots:
        base = root / "nvidia"
        if base.is_dir():
            for lib in sorted(base.glob("*/lib")):
                if lib not in dirs:
                    dirs.append(lib)
    return dirs


def find_lib(subdir: str, soname: str) -> Path | None:
    for d in nvidia_lib_dirs():
        if d.parent.name == subdir and (d / soname).exists():
            return d / soname
    for d in nvidia_lib_dirs():
        if (d / soname).exists():
            return d / soname
    return None


def preload_cuda() -> list[tuple[str, str, str]]:
    """Load the CUDA 11 libraries globally; returns (soname, status, pip package) per library."""
    report: list[tuple[str, str, str]] = []
    for subdir, soname, package in CUDA_LIBS:
        path = find_lib(subdir, soname)
        try:
            ctypes.CDLL(str(path) if path else soname, mode=ctypes.RTLD_GLOBAL)
            report.append((soname, f"loaded from {path}" if path else "loaded (system)", package))
        except OSError as exc:
            report.append((soname, f"missing: {exc}", package))
    return report


def nvidia_smi_gpus() -> int:
    """GPUs the driver sees, without importing mxnet (0 when there is no driver)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return 0
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
