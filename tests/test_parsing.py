"""The parse every checked file goes through (`mxlint.parsing.parse_module`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import libcst as cst
import pytest

from mxlint import node_init
from mxlint.parsing import ParseFailure, cpython_tree, parse_module

VALID = """\
import mxnet as mx


class Net(mx.gluon.HybridBlock):
    def hybrid_forward(self, F, x, *args, scale=1.0, **kw):
        y = (x  +  1) * scale  # spacing kept as written
        return F.relu(y) if kw else [y, *args][0]
"""

#: CPython rejects it (an `except` that lists two types needs brackets); libcst reads it.
LENIENT = "try:\n    pass\nexcept A, b.c:\n    pass\n"


@pytest.fixture(autouse=True, params=["libcst's constructors", "mxlint's constructors"])
def constructors(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test here holds with libcst's node constructors and with those of
    `mxlint.node_init` (a run that parses many files installs them)."""
    was = bool(node_init.installed())
    (node_init.install if "mxlint" in request.param else node_init.uninstall)()
    yield
    (node_init.install if was else node_init.uninstall)()


def _validations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names libcst validates from now on (`Name._validate` counted, then run as before)."""
    seen: list[str] = []
    validate = cst.Name._validate

    def counted(self: cst.Name) -> None:
        seen.append(self.value)
        validate(self)

    monkeypatch.setattr(cst.Name, "_validate", counted)
    return seen


def test_valid_python_gives_libcsts_own_tree_without_validating_it(monkeypatch):
    seen = _validations(monkeypatch)
    module = parse_module(VALID)
    assert seen == []
    assert isinstance(module, cst.Module)
    assert module.code == VALID
    assert module.deep_equals(cst.parse_module(VALID))
    assert "Net" in seen  # libcst's own parse validates


def test_nodes_built_after_a_parse_are_validated_again():
    parse_module(VALID)
    with pytest.raises(cst.CSTValidationError, match="not a valid identifier"):
        cst.Name("1 a")


def test_source_cpython_rejects_is_validated_as_libcst_reads_it(monkeypatch):
    seen = _validations(monkeypatch)
    module = parse_module(LENIENT)
    assert isinstance(module, cst.Module)
    assert module.code == LENIENT
    assert seen == ["A", "b", "c"]


def test_a_syntax_error_is_cpythons_and_leaves_validation_on():
    failure = parse_module("x = (1,\n")
    assert failure == ParseFailure(1, 5, "'(' was never closed")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


def test_a_tree_lives_only_as_long_as_its_caller_keeps_it():
    """The parse runs on another thread: neither it nor the syntax check keeps the last file's
    trees, which would then be alive beside the next file's while that one is parsed."""
    module = parse_module(VALID)
    assert isinstance(module, cst.Module)
    assert sys.getrefcount(module) == 2  # `module` here, and the call's argument
    checked = cpython_tree(VALID)
    parse_module("y = 2\n")
    assert sys.getrefcount(checked) == 2
