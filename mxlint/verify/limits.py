"""Resource limits a verify job applies to itself first thing (a preexec_fn is unsafe with
threads), from the settings its parent puts in the environment.

CPU jobs limit their address space (RLIMIT_AS): a runaway allocation becomes a MemoryError
instead of the host's OOM killer. GPU jobs cannot: CUDA reserves tens of GiB of host address
space at start-up (inaccessible mappings for its unified address space), so an address-space
limit makes CUDA fail to initialise. They limit the data segment instead (RLIMIT_DATA, Linux
>= 4.7), which counts private writable memory — the heap, NumPy arrays, thread stacks — and
not those reservations. Core dumps are off and one file written may not exceed `FILE_MB`.
"""

from __future__ import annotations

import os

MEMORY_ENV = "MXLINT_VERIFY_MEMORY_MB"
KIND_ENV = "MXLINT_VERIFY_MEMORY_LIMIT"
#: The largest file a job may write (checkpoints of small test models are far below it).
FILE_MB = 2048


def memory_limit_kind(gpu: bool) -> str:
    """`data` (RLIMIT_DATA) for GPU jobs, `address-space` (RLIMIT_AS) for CPU jobs."""
    return "data" if gpu else "address-space"


def describe(memory_mb: int) -> str:
    """The limits for the run's first lines and the README."""
    return (
        f"memory {memory_mb} MiB as address space (RLIMIT_AS) on CPU, as data segment "
        f"(RLIMIT_DATA) on GPU; files up to {FILE_MB} MiB; no core dumps"
    )


def env_for(memory_mb: int, gpu: bool) -> dict[str, str]:
    """What the parent puts in a job's environment for `apply_from_env`."""
    return {MEMORY_ENV: str(memory_mb), KIND_ENV: memory_limit_kind(gpu)}


def apply(memory_mb: int, kind: str) -> None:
    import resource

    def lower(which: int, limit: int) -> None:
        hard = resource.getrlimit(which)[1]
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(which, (limit, limit))

    if memory_mb > 0:
        which = resource.RLIMIT_DATA if kind == "data" else resource.RLIMIT_AS
        lower(which, memory_mb * 1024 * 1024)
    lower(resource.RLIMIT_FSIZE, FILE_MB * 1024 * 1024)
    lower(resource.RLIMIT_CORE, 0)


def apply_from_env() -> str:
    """Apply the limits the parent set; returns the kind of memory limit."""
    kind = os.environ.get(KIND_ENV, "address-space")
    apply(int(os.environ.get(MEMORY_ENV, "0") or 0), kind)
    return kind
