"""MXL511 invalid-mxnet-setting: checks the values of MXNet's engine and GPU memory-pool settings
(`MXNET_ENGINE_TYPE`, `MXNET_GPU_MEM_POOL_TYPE`, `MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF`,
`MXNET_GPU_MEM_POOL_RESERVE`, `MXNET_GPU_MEM_POOL_PAGE_SIZE`,
`MXNET_GPU_MEM_LARGE_ALLOC_ROUND_SIZE`) against what MXNet 1.9.1 accepts.

The function after the class decides and words its findings; the environment checkers
(`rules/versions/environment.py`) run it on Python files, Dockerfiles and shell scripts. Its
tests are the examples below (run by `tests/test_rule_examples.py`), `tests/test_sync.py` and
`tests/snapshots/MXL511.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid

#: What `src/engine/engine.cc` and `src/storage/storage.cc` of MXNet 1.9.1 compare against
#: (exact, case-sensitive strings; an empty value is not the default, it is no match).
ENGINES = ("NaiveEngine", "ThreadedEngine", "ThreadedEnginePerDevice")
POOLS = ("Naive", "Round", "Unpooled")
#: `MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF`: log2 sizes the Round pool takes (1 MB to 16 GB).
CUTOFF_RANGE = (20, 34)


class InvalidMxnetSetting(Rule):
    code = "MXL511"
    name = "invalid-mxnet-setting"
    message = "`{setting}`: {problem}"
    runtime = Runtime(
        "engine", error=r"Cannot find Engine|Unknown memory pool|Invalid Parameter format|MXNET_GPU"
    )
    what = """
        Checks the values of MXNet's engine and GPU memory-pool settings against what MXNet
        1.9.1 accepts: `MXNET_ENGINE_TYPE` (`NaiveEngine`, `ThreadedEngine`,
        `ThreadedEnginePerDevice`), `MXNET_GPU_MEM_POOL_TYPE` (`Naive`, `Round`, `Unpooled`),
        `MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF` (an integer from 20 to 34),
        `MXNET_GPU_MEM_POOL_RESERVE` (an integer percentage), `MXNET_GPU_MEM_POOL_PAGE_SIZE`
        (an integer of at least 32, a power of two for the Round pool) and
        `MXNET_GPU_MEM_LARGE_ALLOC_ROUND_SIZE` (a positive integer) — set in Python
        (`os.environ`), in a Dockerfile (`ENV`) or in a launch script (`export`). Settings in
        tests are not judged (a test may set a bad value on purpose).
    """
    why = """
        MXNet reads these when it creates its engine (at the first operator) and its GPU memory
        pool (at the first GPU allocation), and a value it does not accept is fatal there:
        `MXNetError: Cannot find Engine Naive`, `Unknown memory pool strategy specified:
        round`, or dmlc's `Invalid Parameter format ... expect int` for a number it cannot
        parse. The names are compared exactly: `round` or `naive` fail, and so does an empty
        value (`export MXNET_ENGINE_TYPE=` to "reset" it). For the memory pool the failure
        comes only on a GPU host, often far from where the variable was set. A linear cutoff
        outside 20-34 is rejected by the Round pool (and ignored by the default pool); a
        reserve outside 0-100 is not a percentage: the pool then frees everything it cached on
        each allocation it cannot serve from its cache.
    """
    example = """
        import os
        os.environ["MXNET_GPU_MEM_POOL_TYPE"] = "round"
        os.environ["MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF"] = "16"
    """
    use_instead = """
        import os
        os.environ["MXNET_GPU_MEM_POOL_TYPE"] = "Round"
        os.environ["MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF"] = "24"
    """
    fix_safety = """
        A name MXNet spells differently (`round`, `threadedengineperdevice`) is replaced by
        MXNet's spelling; the fix is safe, the value meant is the only one it can be. Other
        values get no fix. In Dockerfiles and shell scripts there is no fix. `--verify` runs
        an entry script that sets an unknown engine (MXNet fails on CPU too); the memory-pool
        settings need a GPU, and are inconclusive on a host without one.
    """
    fixable = "safe"
    invalid = (
        Example(
            """
import os
os.environ["MXNET_GPU_MEM_POOL_TYPE"] = "round"
import mxnet as mx
""",
            line=3,
            expected_fix="""
import os
os.environ["MXNET_GPU_MEM_POOL_TYPE"] = "Round"
import mxnet as mx
""",
        ),
        Example(
            """
import os
import mxnet as mx

os.environ.update(MXNET_GPU_MEM_POOL_TYPE="Round", MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF="16")
""",
            line=5,
        ),
        Example(
            """
import os
os.environ["MXNET_ENGINE_TYPE"] = ""
import mxnet as mx
""",
            line=3,
        ),
    )
    valid = (
        Valid("""
import os
os.environ["MXNET_GPU_MEM_POOL_TYPE"] = "Round"
os.environ["MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF"] = "26"
import mxnet as mx
"""),
        Valid("""
import os
import mxnet as mx

os.environ.setdefault("MXNET_ENGINE_TYPE", "ThreadedEnginePerDevice")
os.environ["MXNET_GPU_MEM_POOL_TYPE"] = os.environ.get("POOL", "Naive")
"""),
        Valid(
            """
import os
import pytest
import mxnet as mx


def test_unknown_engine_fails():
    os.environ["MXNET_ENGINE_TYPE"] = "Bogus"
    with pytest.raises(mx.base.MXNetError):
        mx.nd.ones(1).asnumpy()
""",
            filename="tests/test_engine.py",
        ),
    )


def _integer(value: str) -> int | None:
    """How dmlc parses an integer setting: an optional sign and digits, blanks around."""
    text = value.strip()
    digits = text[1:] if text[:1] in "+-" else text
    return int(text) if digits.isdigit() else None


def problem(name: str, value: str | None) -> tuple[str, str | None] | None:
    """(what is wrong with `name=value`, MXNet's spelling of the value meant) when MXNet 1.9.1
    does not accept it; None when it does, or when the value is not known."""
    if value is None:
        return None
    if name in ("MXNET_ENGINE_TYPE", "MXNET_GPU_MEM_POOL_TYPE"):
        accepted = ENGINES if name == "MXNET_ENGINE_TYPE" else POOLS
        if value in accepted:
            return None
        spelled = next((a for a in accepted if a.lower() == value.strip().lower()), None)
        if spelled is None:
            import difflib  # only when a name is not known

            close = difflib.get_close_matches(value, accepted, n=1, cutoff=0.75)
            spelled = close[0] if close else None
        fails = (
            "MXNet fails at its first operator with `Cannot find Engine`"
            if name == "MXNET_ENGINE_TYPE"
            else "MXNet fails at the first GPU allocation with `Unknown memory pool strategy`"
        )
        shown = "an empty value" if not value else f"`{value}`"
        hint = f"; did you mean `{spelled}`?" if spelled else ""
        choices = ", ".join(f"`{a}`" for a in accepted)
        return f"MXNet accepts only {choices} (exactly), not {shown}: {fails}{hint}", spelled
    if not value.strip():
        return None  # dmlc reads an empty number as the default
    number = _integer(value)
    if name == "MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF":
        low, high = CUTOFF_RANGE
        if number is None or not low <= number <= high:
            return (
                f"the Round memory pool accepts an integer from {low} to {high} (log2 of 1 MB to "
                f"16 GB), not `{value}`: it fails at the first GPU allocation (the default pool "
                "ignores the setting)",
                None,
            )
        return None
    if name == "MXNET_GPU_MEM_POOL_RESERVE":
        if number is None:
            return f"{_not_int(value)} (a percentage of GPU memory)", None
        if not 0 <= number <= 100:
            return (
                f"`{value}` is not a percentage of GPU memory: the pool then frees everything it "
                "cached on each allocation it cannot serve from its cache",
                None,
            )
        return None
    if name == "MXNET_GPU_MEM_POOL_PAGE_SIZE":
        if number is None:
            return _not_int(value), None
        if number < 32:
            return (
                f"MXNet rejects a page size below 32 (got `{value}`) at the first GPU allocation",
                None,
            )
        if number & (number - 1):
            return (
                f"the Round memory pool rejects a page size that is not a power of two (`{value}`) "
                "at the first GPU allocation",
                None,
            )
        return None
    if name == "MXNET_GPU_MEM_LARGE_ALLOC_ROUND_SIZE":
        if number is None:
            return _not_int(value), None
        if number <= 0:
            return f"MXNet rejects a rounding size of `{value}` (it must be positive)", None
    return None


def _not_int(value: str) -> str:
    return (
        f"MXNet reads an integer and fails on `{value}` at the first GPU allocation "
        "(`Invalid Parameter format ... expect int`)"
    )
