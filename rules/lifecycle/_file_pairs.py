"""Each model file a program reads, paired with the writes of that file (`_files.py`), and what
MXL704 and MXL705 decide about each pair: in the file being read, and, for plain paths, across
the files of a run (reads no write of their own file explains are kept as facts; `finalize`
pairs them with the writes other files of the same directory keep).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import libcst as cst

from mxlint.checker import FileContext, FixSpec, NodeEdit
from mxlint.positions import node_ranges
from mxlint.rule import Finding, Location
from mxlint.rules.lifecycle import imports_input_names, parameter_format_mismatch
from mxlint.rules.lifecycle._files import Read, Written, collect, is_plain, shown
from mxlint.rules.lifecycle.imports_input_names import ImportsInputNames
from mxlint.rules.lifecycle.parameter_format_mismatch import ParameterFormatMismatch

#: `ParameterDict.load`'s keywords that `Block.load_parameters` takes too.
_LOAD_KEYWORDS = frozenset(
    {"filename", "ctx", "allow_missing", "ignore_extra", "cast_dtype", "dtype_source"}
)


@dataclass(frozen=True)
class ReadFact:
    """A read of a plain path that no write of its own file explains, kept for `finalize`."""

    key: str
    reader: str
    what: str
    names: tuple[str, ...] | None
    path: str
    span: tuple[int, int, int, int]
    symbol: str | None


def check_file(ctx: FileContext) -> dict[str, list[object]]:
    """Report the reads of this file that its own writes show wrong; the facts other files
    need (plain-path writes, and plain-path reads not written here)."""
    io = collect(ctx)
    if not io.reads and not io.writes:
        return {}
    pending: list[Read] = []
    for read in io.reads:
        writers = [w for w in io.writes if w.key == read.key]
        if writers:
            _report(ctx, read, writers)
        elif is_plain(read.key):
            pending.append(read)
    # A names finding is placed on the names, a format finding on the call.
    placed = {id(r): r.names_node if r.names_node is not None else r.call for r in pending}
    ranges = node_ranges(ctx.module, list(placed.values()), ctx.source) if pending else {}
    reads: list[object] = []
    for read in pending:
        rng = ranges.get(placed[id(read)])
        if rng is None:
            continue
        (sl, sc), (el, ec) = rng
        reads.append(
            ReadFact(
                read.key,
                read.reader,
                read.what,
                read.names,
                ctx.path,
                (sl, sc + 1, el, ec + 1),
                None,
            )
        )
    writes: list[object] = [w for w in io.writes if is_plain(w.key)]
    return {"writes": writes, "reads": reads} if writes or reads else {}


def _report(ctx: FileContext, read: Read, writers: list[Written]) -> None:
    if read.reader == "symbol":
        if read.names is None:
            return
        for writer in writers:
            found = imports_input_names.judge(read.names, writer)
            if found is None:
                continue
            expected, consequence = found
            fix = None
            if read.names_node is not None:
                fix = FixSpec(
                    "unsafe",
                    f"Name the inputs {imports_input_names.spelled(expected)}",
                    (NodeEdit(read.names_node, imports_input_names.spelled(expected)),),
                )
            ctx.report(
                read.names_node if read.names_node is not None else read.call,
                ImportsInputNames,
                _names_message(read.names, writer, expected, consequence, ""),
                fix=fix,
                data=_writer_data(writer),
            )
            return
        return
    unread = parameter_format_mismatch.judge(read.reader, writers)
    if unread is None:
        return
    ctx.report(
        read.call,
        ParameterFormatMismatch,
        _format_message(read.what, read.key, read.reader, unread, ""),
        fix=_reader_fix(ctx, read, unread),
        data=_writer_data(unread),
    )


def _writer_data(writer: Written) -> dict[str, object]:
    """Where the file was written: `--verify` runs that program first, so the line reads
    what the writer wrote rather than a stand-in."""
    return {"writer": {"path": os.path.abspath(writer.path), "line": writer.line}}


def _names_message(
    names: tuple[str, ...],
    writer: Written,
    expected: tuple[str, ...],
    consequence: str,
    where: str,
) -> str:
    return ImportsInputNames.format(
        given=imports_input_names.spelled(names),
        writer=writer.what,
        line=writer.line,
        where=where,
        expected=imports_input_names.spelled(expected),
        consequence=consequence,
    )


def _format_message(what: str, key: str, reader: str, writer: Written, where: str) -> str:
    return ParameterFormatMismatch.format(
        reader=what,
        path=shown(key),
        writer=writer.what,
        line=writer.line,
        where=where,
        **parameter_format_mismatch.wording(reader, writer),
    )


def _reader_fix(ctx: FileContext, read: Read, writer: Written) -> FixSpec | None:
    """`net.collect_params().load(f, ...)` -> `net.load_parameters(f, ...)` for a file in a
    format `load_parameters` reads."""
    if read.reader != "collect_load" or writer.fmt not in ("gluon", "legacy"):
        return None
    func = read.call.func
    if type(func) is not cst.Attribute or type(func.value) is not cst.Call:
        return None
    inner = func.value.func
    if type(inner) is not cst.Attribute:
        return None
    positional = [a for a in read.call.args if a.keyword is None]
    if len(positional) > 4 or any(a.star for a in read.call.args):
        return None
    if any(a.keyword is not None and a.keyword.value not in _LOAD_KEYWORDS for a in read.call.args):
        return None
    owner = ctx.code(inner.value)
    return FixSpec(
        "safe",
        "Read it with `load_parameters`",
        (NodeEdit(func, f"{owner}.load_parameters"),),
    )


def pair_across_files(facts: list[dict[str, list[object]]]) -> list[Finding]:
    """Reads of plain paths paired with the writes other files of the run keep: a relative path
    names the same file for files of one directory (an absolute one for any)."""
    writes: dict[tuple[str, str], list[Written]] = {}
    reads: list[ReadFact] = []
    for one in facts:
        for w in one.get("writes", []):
            assert isinstance(w, Written)
            writes.setdefault((_folder(w.key, w.path), w.key), []).append(w)
        reads.extend(r for r in one.get("reads", []) if isinstance(r, ReadFact))
    out: list[Finding] = []
    for read in reads:
        writers = [
            w
            for w in writes.get((_folder(read.key, read.path), read.key), [])
            if w.path != read.path
        ]
        if not writers:
            continue
        finding = _cross_file(read, writers)
        if finding is not None:
            out.append(finding)
    return out


def _folder(key: str, path: str) -> str:
    return "" if key.startswith("/") else os.path.dirname(os.path.abspath(path))


def _cross_file(read: ReadFact, writers: list[Written]) -> Finding | None:
    sl, sc, el, ec = read.span
    if read.reader == "symbol":
        if read.names is None:
            return None
        for writer in writers:
            found = imports_input_names.judge(read.names, writer)
            if found is not None:
                expected, consequence = found
                where = f" of {os.path.basename(writer.path)}"
                message = _names_message(read.names, writer, expected, consequence, where)
                return Finding(
                    ImportsInputNames.code,
                    message,
                    read.path,
                    Location(sl, sc),
                    Location(el, ec),
                    data=_writer_data(writer),
                )
        return None
    unread = parameter_format_mismatch.judge(read.reader, writers)
    if unread is None:
        return None
    where = f" of {os.path.basename(unread.path)}"
    message = _format_message(read.what, read.key, read.reader, unread, where)
    return Finding(
        ParameterFormatMismatch.code,
        message,
        read.path,
        Location(sl, sc),
        Location(el, ec),
        data=_writer_data(unread),
    )
