"""The code paths --verify takes on GPU hosts, run where there is no GPU: which CUDA library
files are preloaded, how slots are assigned to GPUs, the memory limit GPU jobs get (CUDA
reserves large host address ranges), and a GPU job end to end on the CPU build of MXNet.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mxlint.rule import Finding, Location
from mxlint.verify import plan
from mxlint.verify.gpu import CUDA_LIBS, find_lib, nvidia_lib_dirs
from mxlint.verify.runner import VerifyOptions
from mxlint.verify.slots import Slots

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = ROOT / "fixtures" / "verify" / "hybrid" / "bad" / "blocks.py"


def _real_library() -> Path:
    """A real shared library of this host to stand in for a CUDA one (dlopen needs ELF)."""
    import ctypes.util

    for name in ("z", "m", "c"):
        found = ctypes.util.find_library(name)
        if found:
            for base in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/lib"):
                path = Path(base) / found
                if path.is_file():
                    return path.resolve()
    pytest.skip("no shared library found to copy")


def _site(tmp_path: Path, layout: dict[str, list[str]]) -> Path:
    """A site-packages with nvidia/<subdir>/lib/<soname> files, as the nvidia-*-cu11 wheels."""
    site = tmp_path / "site-packages"
    lib = _real_library()
    for subdir, sonames in layout.items():
        d = site / "nvidia" / subdir / "lib"
        d.mkdir(parents=True)
        for soname in sonames:
            shutil.copy(lib, d / soname)
    return site


def test_a_library_is_taken_from_its_own_wheel_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = _site(
        tmp_path,
        {"cublas": ["libcublas.so.11"], "cudnn": ["libcudnn.so.8", "libcublas.so.11"]},
    )
    monkeypatch.syspath_prepend(str(site))
    dirs = nvidia_lib_dirs()
    assert site / "nvidia" / "cublas" / "lib" in dirs and site / "nvidia" / "cudnn" / "lib" in dirs
    assert find_lib("cublas", "libcublas.so.11") == site / "nvidia/cublas/lib/libcublas.so.11"
    # A library found only in another wheel's directory is still found there.
    assert find_lib("cudnn", "libcudnn.so.8") == site / "nvidia/cudnn/lib/libcudnn.so.8"
    assert find_lib("cufft", "libcufft.so.10") is None


def test_preload_loads_what_the_wheels_hold_and_names_the_package_of_the_rest(
    tmp_path: Path,
) -> None:
    site = _site(tmp_path, {"cuda_runtime": ["libcudart.so.11.0"], "nccl": ["libnccl.so.2"]})
    code = (
        "import json, sys\n"
        f"sys.path.append({str(site)!r})\n"
        "from mxlint.verify.gpu import preload_cuda\n"
        "print(json.dumps(preload_cuda()))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    report = {soname: (status, package) for soname, status, package in json.loads(proc.stdout)}
    assert list(report) == [soname for _sub, soname, _pkg in CUDA_LIBS]
    assert report["libcudart.so.11.0"] == (
        f"loaded from {site / 'nvidia/cuda_runtime/lib/libcudart.so.11.0'}",
        "nvidia-cuda-runtime-cu11",
    )
    assert report["libnccl.so.2"][0] == f"loaded from {site / 'nvidia/nccl/lib/libnccl.so.2'}"
    status, package = report["libcudnn.so.8"]
    assert status.startswith("missing: libcudnn.so.8") and package == "nvidia-cudnn-cu11<9"


def test_slots_share_gpus_round_robin_and_cores_without_devices() -> None:
    assert [Slots(2, 4).env_for(i) for i in range(4)] == [
        {"CUDA_VISIBLE_DEVICES": "0"},
        {"CUDA_VISIBLE_DEVICES": "1"},
        {"CUDA_VISIBLE_DEVICES": "0"},
        {"CUDA_VISIBLE_DEVICES": "1"},
    ]
    assert Slots(0, 2).env_for(1) == {}


def test_a_slot_runs_one_job_at_a_time() -> None:
    slots = Slots(2, 2)
    busy: list[int] = []
    peak: list[int] = []
    held: list[int] = []
    lock = threading.Lock()

    def job() -> None:
        with slots.slot() as slot:
            with lock:
                assert slot not in busy
                busy.append(slot)
                held.append(slot)
                peak.append(len(busy))
            time.sleep(0.05)
            with lock:
                busy.remove(slot)

    threads = [threading.Thread(target=job) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert max(peak) <= 2 and sorted(set(held)) == [0, 1] and len(held) == 6


LIMITED = """
import ctypes, sys
from mxlint.verify import limits
limits.apply(1024, sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [
    ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long
]
# What CUDA does at start-up: reserve a large inaccessible host address range
# (PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE).
address = libc.mmap(None, 64 << 30, 0, 0x02 | 0x20 | 0x4000, -1, 0)
print("reserved" if address not in (None, ctypes.c_void_p(-1).value) else "reservation refused")
try:
    import numpy as np
    np.empty(2 << 30, dtype=np.uint8)
    print("allocated")
except MemoryError:
    print("allocation refused")
"""


@pytest.mark.parametrize(
    ("gpu", "expected"),
    [
        (True, ["reserved", "allocation refused"]),
        (False, ["reservation refused", "allocation refused"]),
    ],
)
def test_gpu_jobs_limit_data_not_address_space(gpu: bool, expected: list[str]) -> None:
    from mxlint.verify.limits import memory_limit_kind

    proc = subprocess.run(
        [sys.executable, "-c", LIMITED, memory_limit_kind(gpu)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert proc.stdout.split("\n")[:2] == expected


@pytest.mark.slow
def test_gpu_jobs_on_a_cpu_build_run_with_their_device_and_limit() -> None:
    """Two GPU slots run two real jobs at once: each job sees its own CUDA_VISIBLE_DEVICES,
    tries the CUDA preload, gets the data-segment limit, and still runs the block."""
    finding = Finding("MXL102", "x", str(BLOCKS), Location(34, 17), Location(34, 18))
    tasks, skipped = plan.build([finding], [BLOCKS], {"config": {}, "steps": 8})
    assert not skipped
    slots = Slots(2, 2)
    options = VerifyOptions(bench=False, timeout=120)
    results: list[dict[str, object]] = []

    def run() -> None:
        results.append(slots.run(tasks[0].job, options).payload)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    envs = [r["env"] for r in results]
    assert sorted(e["cuda_visible_devices"] for e in envs) == ["0", "1"]  # type: ignore[index]
    for payload, env in zip(results, envs):
        assert env["memory_limit"] == "data"  # type: ignore[index]
        assert [p[0] for p in env["preload"]] == [s for _d, s, _p in CUDA_LIBS]  # type: ignore[index]
        stage = payload["stages"]["hybridize"]  # type: ignore[index]
        assert stage["exception"]["frames"][-2] == [str(BLOCKS), 34]
