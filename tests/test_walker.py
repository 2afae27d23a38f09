"""The walk's dispatch: which handlers of which objects run at which nodes."""

from __future__ import annotations

import libcst as cst

from mxlint.walker import dispatch, walk


class Seen:
    def __init__(self) -> None:
        self.names: list[str] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node.value)


def _run(obj: object, code: str) -> None:
    visits, leaves = dispatch([obj])
    walk(cst.parse_module(code), visits, leaves, [], lambda owner, exc: None)


def test_handlers_by_class_also_after_the_class_changed():
    first = Seen()
    _run(first, "a = b\n")
    assert first.names == ["a", "b"]

    def leave_Call(self: Seen, node: cst.Call) -> None:
        self.names.append("call")

    Seen.leave_Call = leave_Call  # type: ignore[attr-defined]
    try:
        second = Seen()
        _run(second, "f(x)\n")
        assert second.names == ["f", "x", "call"]
    finally:
        del Seen.leave_Call  # type: ignore[attr-defined]
    third = Seen()
    _run(third, "f(x)\n")
    assert third.names == ["f", "x"]
    visits, leaves = dispatch([third, Seen()])
    assert [owner for owner, _ in visits[cst.Name]] == [0, 1]
    assert leaves == {}
