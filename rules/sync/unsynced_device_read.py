"""MXL604 unsynced-device-read: finds a read of device memory (`mx.context.gpu_memory_info`,
`nvidia-smi` run through `subprocess`/`os.popen`, NVML) or of MXNet's profiler
(`mx.profiler.dump()`/`dumps()`) while MXNet work queued before it may still be running: no
`waitall()` or other synchronising call between the work and the read on every path to it.

The functions after the class decide and word its findings; the family's checker
(`rules/memory/checker.py`) runs them on each function (and the module's top level). Its tests
are the examples below (run by `tests/test_rule_examples.py`), `tests/test_sync.py` and
`tests/snapshots/MXL604.txt`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from mxlint.checker import FixSpec, NodeEdit, shortened
from mxlint.flow import post_order_calls
from mxlint.names import dotted_name
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.semantic.dataflow import Dataflow
from mxlint.semantic.effects import Effects, is_sync_call

if TYPE_CHECKING:
    from mxlint.rules.memory.checker import MemoryChecker


class UnsyncedDeviceRead(Rule):
    code = "MXL604"
    name = "unsynced-device-read"
    message = (
        "`{expr}` reads {what} while the MXNet work queued before it (line {line}) may still be "
        "running: operators return before they run, so {consequence}; call `{waitall}` first"
    )
    runtime = Runtime("profiler")
    what = """
        Finds a read of device memory — `mx.context.gpu_memory_info()`, `nvidia-smi` (asking
        for memory or utilisation) run through `subprocess` or `os.popen`/`os.system`, NVML's
        `nvmlDeviceGetMemoryInfo`, `GPUtil.getGPUs()` — or of MXNet's profiler
        (`mx.profiler.dump()`, `dumps()`) while MXNet work queued before it (a forward pass, a
        `backward()`, an optimizer step, an `nd.*` operator) may still be running: no
        `waitall()`, readback or other synchronising call between the two on every path to
        the read. A helper that synchronises (in this file or another) counts as a sync.
    """
    why = """
        MXNet's engine is asynchronous: `net(x)` or `loss.backward()` return once the operators
        are queued. A memory reading taken then shows the memory before the queued operators
        allocate (and free) theirs — the peak you are looking for is missed, or lands in a
        later reading. The profiler records an operator's event when the operator runs, so a
        `dump()` or `dumps()` right after queuing work misses the operators still in the
        queue; `dump()` also stops the profiler, and their events are then never written.
    """
    example = """
        out = net(data)
        loss = loss_fn(out, label)
        loss.backward()
        print(mx.context.gpu_memory_info(0))
    """
    use_instead = """
        out = net(data)
        loss = loss_fn(out, label)
        loss.backward()
        mx.nd.waitall()
        print(mx.context.gpu_memory_info(0))
    """
    fix_safety = """
        The fix inserts `mx.nd.waitall()` (spelled with the file's own import of MXNet) on a
        line of its own before the statement that reads. It is safe: waiting changes when the
        read happens, not any value the program computes. `--verify` confirms a profiler read
        on the threaded engine (the operators it missed, counted against a dump after
        `waitall()`); a GPU memory read needs a GPU and is inconclusive on a host without one.
    """
    fixable = "safe"
    invalid = (
        Example(
            """
import mxnet as mx
from mxnet import autograd


def step(net, loss_fn, trainer, data, label):
    with autograd.record():
        loss = loss_fn(net(data), label)
    loss.backward()
    trainer.step(data.shape[0])
    free, total = mx.context.gpu_memory_info(0)
    return total - free
""",
            line=11,
            expected_fix="""
import mxnet as mx
from mxnet import autograd


def step(net, loss_fn, trainer, data, label):
    with autograd.record():
        loss = loss_fn(net(data), label)
    loss.backward()
    trainer.step(data.shape[0])
    mx.nd.waitall()
    free, total = mx.context.gpu_memory_info(0)
    return total - free
""",
        ),
        Example(
            """
import mxnet as mx

mx.profiler.set_config(profile_all=True, aggregate_stats=True)
mx.profiler.set_state("run")
x = mx.nd.random.uniform(shape=(512, 512))
y = mx.nd.dot(x, x)
mx.profiler.set_state("stop")
print(mx.profiler.dumps())
""",
            line=9,
        ),
        Example(
            """
import subprocess
from mxnet import autograd


def train(net, loss_fn, trainer, loader):
    for data, label in loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
        print(subprocess.check_output(["nvidia-smi", "--query-gpu=memory.used", "--format=csv"]))
""",
            line=12,
        ),
    )
    valid = (
        Valid("""
import mxnet as mx


def report(net, data):
    out = net(data)
    out.wait_to_read()
    print(mx.context.gpu_memory_info(0))
"""),
        Valid("""
import os
from mxnet import autograd


def train(net, loss_fn, trainer, loader):
    gpus = int(os.popen("nvidia-smi -L | wc -l").read())
    for data, label in loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
"""),
        Valid("""
import mxnet as mx


def profile(net, data, metric, label):
    mx.profiler.set_state("run")
    out = net(data)
    metric.update([label], [out])
    mx.profiler.set_state("stop")
    print(mx.profiler.dumps())
"""),
        Valid("""
import mxnet as mx


def probe(net, data, sync):
    out = net(data)
    if sync:
        mx.nd.waitall()
    print(mx.context.gpu_memory_info(0))
"""),
    )


_GPU_MEMORY = frozenset(
    {
        # `mx.context.gpu_memory_info` resolves to the name MXNet re-exports it under.
        "mxnet.gpu_memory_info",
        "mxnet.context.gpu_memory_info",
        "mxnet.device.gpu_memory_info",
        "pynvml.nvmlDeviceGetMemoryInfo",
        "nvidia_smi.nvmlDeviceGetMemoryInfo",
        "GPUtil.getGPUs",
        "GPUtil.showUtilization",
    }
)
_PROFILER_READS = frozenset(
    {"mxnet.profiler.dump", "mxnet.profiler.dumps", "mxnet.profiler.dump_profile"}
)
_SHELL = frozenset(
    {
        "subprocess.run",
        "subprocess.call",
        "subprocess.check_call",
        "subprocess.check_output",
        "subprocess.Popen",
        "subprocess.getoutput",
        "subprocess.getstatusoutput",
        "os.system",
        "os.popen",
    }
)


@dataclass(frozen=True)
class _Pending:
    """MXNet work queued since the last sync on every path here (`work`: the call that queued
    it, None when none), and the project helpers called since (a finding requires that none of
    them synchronises)."""

    work: cst.Call | None = field(default=None, compare=False)
    #: `id(work)`: what two states are compared by (nodes compare by value).
    key: int = 0
    helpers: tuple[str, ...] = ()


_NONE = _Pending()
_PROFILER_TEXT = "MXNet's profiler"
_KEY = "<pending>"


def reads(checker: MemoryChecker) -> bool:
    """Whether the file can hold a read this rule looks at (the analysis runs only then)."""
    return _reads_in(checker.ctx.source)


@functools.lru_cache(maxsize=2)
def _reads_in(source: str) -> bool:
    # Asked for every function of the file: the text is searched once.
    return any(
        word in source for word in ("gpu_memory_info", "nvidia-smi", "nvml", "GPUtil", "dump")
    )


def check_reads(checker: MemoryChecker, body: list[cst.BaseStatement]) -> None:
    """Reads in one function body (or the module's top level) after unsynced work."""
    _Reads(checker).run(body)


class _Reads(Dataflow[_Pending]):
    """Whether work is pending, statement by statement: joined as *must* (work is pending after
    a branch only if it is on both paths), so a read is reported only when no path to it
    synchronised."""

    def __init__(self, checker: MemoryChecker) -> None:
        super().__init__({_KEY: _NONE})
        self.checker = checker
        self.statement: cst.CSTNode | None = None
        self.reported: set[cst.CSTNode] = set()
        self._ends: dict[cst.CSTNode, list[_Pending]] = {}

    def top(self) -> _Pending:
        return _NONE

    def join(self, a: _Pending, b: _Pending) -> _Pending:
        if a.work is None or b.work is None:
            return _NONE
        return _Pending(a.work, a.key, tuple(dict.fromkeys(a.helpers + b.helpers)))

    def stmt(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseStatement):
            saved, self.statement = self.statement, node
            try:
                return super().stmt(node)
            finally:
                self.statement = saved
        return super().stmt(node)

    def define(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        return  # a nested definition runs nothing here

    def pass_ends(self, node: cst.For | cst.While, ends: Sequence[dict[str, _Pending]]) -> None:
        self._ends[node] = [end.get(_KEY, _NONE) for end in ends]

    def for_stmt(self, node: cst.For) -> bool:
        leaves = super().for_stmt(node)
        self._ran(node)
        return leaves

    def while_stmt(self, node: cst.While) -> bool:
        leaves = super().while_stmt(node)
        self._ran(node)
        return leaves

    def _ran(self, node: cst.For | cst.While) -> None:
        """A training or profiling loop runs: what its last iteration left queued (on every
        way through its body) is pending after it, though the loop could in principle run
        zero times."""
        ends = self._ends.pop(node, [])
        if self.env.get(_KEY, _NONE).work is None and ends:
            joined = ends[0]
            for end in ends[1:]:
                joined = self.join(joined, end)
            if joined.work is not None:
                self.env[_KEY] = joined

    def expr(self, node: cst.BaseExpression) -> _Pending:
        for call in post_order_calls(node):
            self._call(call)
        return _NONE

    def _call(self, call: cst.Call) -> None:
        pending = self.env.get(_KEY, _NONE)
        what = _device_read(self.checker, call)
        if what is not None:
            if pending.work is not None and call not in self.reported:
                self.reported.add(call)
                self._report(call, what, pending)
            return
        if self._syncs(call):
            self.env[_KEY] = _NONE
            return
        helper = self.checker.ctx.effects.of_call(call)
        if isinstance(helper, str) and pending.work is not None:
            self.env[_KEY] = _Pending(pending.work, pending.key, (*pending.helpers, helper))
            return
        if pending.work is None and (
            self.checker._mxnet_work([call])  # type: ignore[list-item]
            or (isinstance(helper, Effects) and helper.returns_forward)
        ):
            self.env[_KEY] = _Pending(call, id(call))

    def _syncs(self, call: cst.Call) -> bool:
        if is_sync_call(call, self.checker.ctx.imports):
            return True
        func = call.func
        if type(func) is cst.Name and func.value in ("float", "int") and call.args:
            return True
        effects = self.checker.ctx.effects.of_call(call)
        return isinstance(effects, Effects) and effects.syncs

    def _report(self, call: cst.Call, what: tuple[str, str], pending: _Pending) -> None:
        ctx = self.checker.ctx
        waitall = _waitall(self.checker)
        fix = None
        if waitall is not None and self.statement is not None:
            fix = FixSpec(
                "safe",
                f"Insert `{waitall}` before the read",
                (NodeEdit(self.statement, waitall, "line_before"),),
            )
        ctx.report(
            call,
            UnsyncedDeviceRead,
            UnsyncedDeviceRead.format(
                expr=_quoted(ctx.code(call), call),
                what=what[0],
                consequence=what[1],
                line=_line_of(self.checker, pending.work),
                waitall=waitall or "mx.nd.waitall()",
            ),
            fix=fix,
            requires=("no-sync", " ".join(pending.helpers)) if pending.helpers else None,
            data={"read": "profiler" if what[0] == _PROFILER_TEXT else "gpu"},
        )


def _quoted(code: str, call: cst.Call) -> str:
    """The call as the message quotes it: on one line, or `name(...)` when it spans lines."""
    if "\n" in code.strip():
        return f"{dotted_name(call.func) or 'call'}(...)"
    return shortened(code)


def _line_of(checker: MemoryChecker, node: cst.CSTNode | None) -> int:
    """The line of `node`, computed for a finding's message only (positions cost a walk)."""
    from mxlint.positions import node_ranges

    if node is None:
        return 0
    found = node_ranges(checker.ctx.module, [node], checker.ctx.source).get(node)
    return found[0][0] if found is not None else 0


def _device_read(checker: MemoryChecker, call: cst.Call) -> tuple[str, str] | None:
    """(what is read, what goes wrong) when `call` reads device memory or the profiler."""
    name = checker.ctx.resolve(call.func)
    if name in _GPU_MEMORY:
        return (
            "GPU memory",
            "it shows the memory before the queued operators allocate and free theirs",
        )
    if name in _PROFILER_READS:
        return (
            _PROFILER_TEXT,
            "the profile misses the operators still queued (each is recorded when it runs)",
        )
    if name in _SHELL and call.args and _queries_gpu_memory(call.args[0].value):
        return (
            "GPU memory (`nvidia-smi`)",
            "it shows the memory before the queued operators allocate and free theirs",
        )
    return None


def _queries_gpu_memory(command: cst.BaseExpression) -> bool:
    """A command running `nvidia-smi` for memory or utilisation: bare `nvidia-smi`, or with
    `--query-gpu=memory...`/`utilization...`/`-q -d MEMORY` (not `-L` or `topo`)."""
    words: list[str] = []
    if isinstance(command, (cst.List, cst.Tuple)):
        for el in command.elements:
            if isinstance(el.value, (cst.SimpleString, cst.ConcatenatedString)):
                value = el.value.evaluated_value
                if isinstance(value, str):
                    words.append(value)
    elif isinstance(command, (cst.SimpleString, cst.ConcatenatedString)):
        value = command.evaluated_value
        if isinstance(value, str):
            words = value.split()
    if not any(w.endswith("nvidia-smi") for w in words):
        return False
    text = " ".join(words).lower()
    if any(word in text for word in ("memory", "utilization")):
        return True
    after = words[[w.endswith("nvidia-smi") for w in words].index(True) + 1 :]
    return not after or after[0] in ("|", ">", ">>")


def _waitall(checker: MemoryChecker) -> str | None:
    """`mx.nd.waitall()` spelled with the module's own imports of MXNet (`import mxnet as mx`,
    `from mxnet import nd`); None when none reaches it."""
    for stmt in checker.ctx.module.body:
        if type(stmt) is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            if type(small) is cst.Import:
                for alias in small.names:
                    name = dotted_name(alias.name)
                    local = alias.asname.name if alias.asname is not None else None
                    if name == "mxnet":
                        bound = local.value if type(local) is cst.Name else "mxnet"
                        return f"{bound}.nd.waitall()"
                    if name in ("mxnet.nd", "mxnet.ndarray") and type(local) is cst.Name:
                        return f"{local.value}.waitall()"
            elif (
                type(small) is cst.ImportFrom
                and not small.relative
                and small.module is not None
                and dotted_name(small.module) == "mxnet"
                and not isinstance(small.names, cst.ImportStar)
            ):
                for imported in small.names:
                    if dotted_name(imported.name) in ("nd", "ndarray"):
                        bound_to = (
                            imported.asname.name if imported.asname is not None else imported.name
                        )
                        if type(bound_to) is cst.Name:
                            return f"{bound_to.value}.waitall()"
    return None
