"""mxlint's constructors for libcst's nodes (`mxlint.node_init`) build the nodes libcst's own
build: same parameters and defaults, equal trees, validation where it was."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator
from pathlib import Path

import libcst as cst
import pytest

from mxlint import node_init
from mxlint.parsing import parse_module

ROOT = Path(__file__).resolve().parent.parent
#: Python that libcst reads: every fixture of the project, and syntax they may not hold.
SOURCES = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "fixtures").rglob("*.py"))] + [
    "async def f(*a, b=1, **k) -> int:\n    async with x as (y, z):\n        await q\n",
    "match p:\n    case [1, *rest] if rest:\n        pass\n    case {'k': v, **kw}:\n        pass\n",
    "@d(1)\nclass C(B, metaclass=M):\n    x: int = 1\n    def g(self, /, a, *, b): ...\n",
    "x = f'{a!r:>{w}} {b=}' ; del y[1:2, ::3]\nif (n := len(a)) > 1: raise E from e\n",
    "lambda x=1, *y, z, **w: (yield)\nglobal q\nprint(*[i async for i in j], {**d}, {*s})\n",
    "try:\n    pass\nexcept* ValueError as e:\n    pass\nelse:\n    pass\nfinally:\n    pass\n",
]


@pytest.fixture
def restore() -> Iterator[None]:
    """Each test chooses the constructors; afterwards they are as the test found them."""
    was = bool(node_init.installed())
    yield
    if was:
        node_init.install()
    else:
        node_init.uninstall()


def _trees(validated: bool) -> list[cst.Module]:
    parse = cst.parse_module if validated else parse_module
    trees = []
    for source in SOURCES:
        tree = parse(source)
        assert isinstance(tree, cst.Module), source
        trees.append(tree)
    return trees


def test_most_node_classes_get_one_and_keep_their_signature(restore):
    node_init.uninstall()
    before = {cls: inspect.signature(cls.__init__) for cls in node_init._node_classes()}
    assert node_init.install() == len(node_init.installed()) >= 0.8 * len(before)
    for cls in node_init.installed():
        old, new = before[cls].parameters, inspect.signature(cls.__init__).parameters
        assert list(old) == list(new), cls
        fields = dataclasses.fields(cls)
        factories = {f.name for f in fields if f.default_factory is not dataclasses.MISSING}
        for name, param in old.items():
            assert new[name].kind == param.kind, (cls, name)
            if name not in factories:
                assert new[name].default is param.default, (cls, name)


@pytest.mark.parametrize("validated", [True, False], ids=["validated", "unvalidated"])
def test_trees_are_the_ones_libcsts_constructors_build(restore, validated):
    node_init.uninstall()
    expected = _trees(validated)
    assert node_init.install()
    got = _trees(validated)
    for source, old, new in zip(SOURCES, expected, got):
        assert new.code == old.code == source
        assert new.deep_equals(old)


def test_a_default_factory_builds_a_fresh_default_each_time(restore):
    node_init.install()
    made = [
        cst.FunctionDef(cst.Name("f"), cst.Parameters(), cst.SimpleStatementSuite([cst.Pass()]))
        for _ in range(2)
    ]
    assert made[0].whitespace_after_def.deep_equals(cst.SimpleWhitespace(" "))
    assert made[0].whitespace_after_def is not made[1].whitespace_after_def
    assert cst.Module([made[0]]).code == "def f(): pass\n"


@pytest.mark.parametrize("installed", [True, False], ids=["mxlint's", "libcst's"])
def test_validation_is_switched_off_and_on_again(restore, installed):
    (node_init.install if installed else node_init.uninstall)()
    with pytest.raises(cst.CSTValidationError, match="empty name"):
        cst.Name("")
    node_init.validation(False)
    try:
        assert cst.Name("").value == ""
    finally:
        node_init.validation(True)
    with pytest.raises(cst.CSTValidationError, match="empty name"):
        cst.Name("")


def test_a_constructor_libcst_wrote_itself_is_left_alone(restore):
    node_init.uninstall()

    @dataclasses.dataclass(frozen=True)
    class Own(cst.Pass):
        def __init__(self) -> None:  # not what dataclasses generates
            object.__setattr__(self, "semicolon", cst.MaybeSentinel.DEFAULT)

    assert node_init._constructor(Own, 0) is None
    assert node_init._constructor(cst.Pass, 0) is not None
