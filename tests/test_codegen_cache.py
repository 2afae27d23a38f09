"""The dataclass code cache: classes built from it are the classes dataclasses builds anyway."""

from __future__ import annotations

import dataclasses
import marshal
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mxlint import codegen_cache, module_bundle
from mxlint.codegen_cache import dataclass_code_cache


def _point_class() -> type:
    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: int = 0
        tags: tuple[str, ...] = ()

    return Point


def _check_point(cls: type) -> None:
    p = cls(1, tags=("a",))
    assert (p.x, p.y, p.tags) == (1, 0, ("a",))
    assert p == cls(1, 0, ("a",)) and p != cls(2)
    assert hash(p) == hash(cls(1, 0, ("a",)))
    assert repr(p).endswith("Point(x=1, y=0, tags=('a',))")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 3
    # Compiled as dataclasses compiles it: not with this module's `annotations` future, which
    # would turn the annotation into the string "_return_type".
    assert vars(cls)["__init__"].__annotations__["return"] is None


def _writing_bytecode_under(prefix: Path) -> dict[str, str]:
    """The environment of a child Python that writes bytecode (and the cache) under `prefix`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(prefix)
    return env


@pytest.fixture
def writable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def test_code_compiled_once_is_taken_from_the_file_next_time(tmp_path: Path, writable):
    path = tmp_path / "codes.marshal"
    with dataclass_code_cache(path) as fresh:
        first = _point_class()
    assert len(fresh) == 6  # __init__ __repr__ __eq__ __setattr__ __delattr__ __hash__
    assert path.is_file()
    with dataclass_code_cache(path) as fresh:
        second = _point_class()
    assert fresh == {}  # nothing compiled: every method came from the file
    _check_point(first)
    _check_point(second)
    assert "exec" not in vars(dataclasses)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not marshal data",
        marshal.dumps((b"\x00\x00\r\n", {"def f(): pass": compile("1", "<s>", "eval")})),
        marshal.dumps([1, 2, 3]),
    ],
)
def test_a_damaged_or_foreign_file_means_compiling_as_usual(
    tmp_path: Path, writable, content: bytes
):
    path = tmp_path / "codes.marshal"
    path.write_bytes(content)
    with dataclass_code_cache(path) as fresh:
        cls = _point_class()
    _check_point(cls)
    assert len(fresh) == 6
    assert len(codegen_cache.load(path)) == 6  # replaced by a good file


def test_nothing_is_written_where_python_writes_no_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    path = tmp_path / "codes.marshal"
    with dataclass_code_cache(path):
        _check_point(_point_class())
    assert not path.exists()


def test_the_hook_is_removed_when_the_block_raises(tmp_path: Path, writable):
    with pytest.raises(ZeroDivisionError), dataclass_code_cache(tmp_path / "codes.marshal"):
        _point_class()
        raise ZeroDivisionError
    assert "exec" not in vars(dataclasses)
    assert codegen_cache.load(tmp_path / "codes.marshal")  # what was compiled is kept


def test_an_unwritable_place_is_no_error(tmp_path: Path, writable):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with dataclass_code_cache(blocker / "sub" / "codes.marshal") as fresh:
        _check_point(_point_class())
    assert len(fresh) == 6


def test_the_command_keeps_its_start_up_beside_its_bytecode_and_reports_the_same(
    tmp_path: Path, fixtures_dir: Path
):
    """libcst's generated dataclass code, the regular expressions and the modules' bytecode
    (`mxlint.module_bundle`) are kept by the first start; the second takes them and reports
    the same, and writes none of the files again."""
    env = _writing_bytecode_under(tmp_path / "pycache")
    command = [
        sys.executable,
        "-m",
        "mxlint",
        "check",
        "--isolated",
        "--no-cache",
        "--output-format",
        "concise",
        str(fixtures_dir),
    ]
    first = subprocess.run(command, capture_output=True, text=True, env=env)
    cached = list((tmp_path / "pycache").rglob("dataclass-code.*.marshal"))
    assert len(cached) == 1
    codes = codegen_cache.load(cached[0])
    assert len(codes) > 500  # libcst's node classes, and mxlint's own
    assert any("whitespace_after_" in source for source in codes)
    regexes = list((tmp_path / "pycache").rglob("regex-code.*.marshal"))
    assert len(regexes) == 1
    bundles = list((tmp_path / "pycache").rglob("module-code-*.marshal"))
    assert len(bundles) == 1
    entries = module_bundle.load(bundles[0])
    assert "mxlint.engine" in entries and "libcst._nodes.expression" in entries
    assert any(name.startswith("mxlint.rules.hybridization.") for name in entries)
    written = {p: p.stat().st_mtime_ns for p in [*cached, *regexes, *bundles]}
    second = subprocess.run(command, capture_output=True, text=True, env=env)
    assert first.returncode == second.returncode == 1, second.stderr
    assert first.stdout and second.stdout == first.stdout
    # Every pattern and module the second start needed was kept by the first: no file changes.
    assert {p: p.stat().st_mtime_ns for p in written} == written


def test_the_flake8_plugin_loads_with_the_cache_and_leaves_dataclasses_alone(
    tmp_path: Path, fixtures_dir: Path
):
    env = _writing_bytecode_under(tmp_path / "pycache")
    script = (
        "import dataclasses, sys\n"
        "from flake8.main.cli import main\n"
        "code = main(['--isolated', '--select', 'MXL', sys.argv[1]])\n"
        "sys.exit(3 if 'exec' in vars(dataclasses) else code)\n"
    )
    target = str(fixtures_dir / "sample_project" / "train.py")
    first = subprocess.run(
        [sys.executable, "-c", script, target], capture_output=True, text=True, env=env
    )
    assert len(list((tmp_path / "pycache").rglob("dataclass-code.*.marshal"))) == 1
    second = subprocess.run(
        [sys.executable, "-c", script, target], capture_output=True, text=True, env=env
    )
    assert first.returncode == second.returncode == 1, first.stderr
    assert "MXL401" in first.stdout and second.stdout == first.stdout


def _attrs_point_class() -> type:
    import attr

    @attr.s(frozen=True, slots=True, auto_attribs=True)
    class AttrsPoint:
        x: int
        y: int = 0

    return AttrsPoint


def _attrs_record_class() -> type:
    import attr

    @attr.s(slots=True, auto_attribs=True)
    class AttrsRecord:
        x: int
        y: int = 0

    return AttrsRecord


def test_attrs_classes_take_their_methods_from_the_file_the_second_time(tmp_path: Path, writable):
    """What the language server's protocol classes (`lsprotocol`, built with attrs) need: the
    methods attrs compiles come from the cache, keyed by attrs' own file name of each method,
    and the classes behave as attrs builds them."""
    path = tmp_path / "attrs.marshal"
    with codegen_cache.attrs_code_cache(path) as fresh:
        first = _attrs_record_class()
    assert fresh and all("AttrsRecord" in key.split("\0")[0] for key in fresh)
    with codegen_cache.attrs_code_cache(path) as again:
        second = _attrs_record_class()
    assert again == {}
    for cls in (first, second):
        p = cls(1)
        assert (p.x, p.y) == (1, 0) and p == cls(1, 0) and p != cls(2)
        assert repr(p).endswith("AttrsRecord(x=1, y=0)")
        p.x = 3
        assert p.x == 3
    from attr import _make

    assert "compile" not in vars(_make)


def test_attrs_hash_methods_are_not_kept(tmp_path: Path, writable):
    """A hashable attrs class's methods hold a salt that differs from process to process
    (the hash of a string): never found again, they are compiled as attrs compiles them and
    not kept, so that a start that found everything else does not write the file again."""
    import attr

    path = tmp_path / "attrs.marshal"
    with codegen_cache.attrs_code_cache(path) as fresh:
        _attrs_record_class()
        frozen = _attrs_point_class()
    assert fresh and not any("def __hash__" in key for key in fresh)
    written = path.stat().st_mtime_ns
    with codegen_cache.attrs_code_cache(path) as again:
        _attrs_record_class()
        frozen = _attrs_point_class()
    assert again == {}
    assert path.stat().st_mtime_ns == written
    p = frozen(1)
    assert hash(p) == hash(frozen(1, 0)) and p == frozen(1) and repr(p).endswith("(x=1, y=0)")
    with pytest.raises(attr.exceptions.FrozenInstanceError):
        p.x = 3


#: `re`'s compiler module (`re._compiler` from Python 3.11, `sre_compile` before).
_RE_COMPILER = getattr(re, "_compiler", None) or re.sre_compile

#: Patterns with groups, names, flags, classes, lookarounds and bytes: what `re` has to get right.
_PATTERNS: tuple[tuple[object, int], ...] = (
    (r"^(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<value>.+?)\s*$", 0),
    (r"colou?r|cmap|palette", re.IGNORECASE),
    (r"^[ \t]*(?:from|import)[ \t]", re.MULTILINE),
    (r"(?<!\.)\bnd\.(?=\w)", 0),
    (r"(a)(b)?(?:c|d){2,5}", re.DOTALL | re.VERBOSE),
    (rb"\x00(?P<tag>[\x01-\x7f]+)", 0),
)


def _compiled_now(path: Path) -> tuple[list[re.Pattern], dict]:
    re.purge()  # `re` keeps its own cache of the patterns it compiled in this process
    with codegen_cache.regex_code_cache(path) as fresh:
        patterns = [re.compile(p, f) for p, f in _PATTERNS]
    re.purge()
    return patterns, fresh


def _same_pattern(ours: re.Pattern, theirs: re.Pattern) -> None:
    assert (ours.pattern, ours.flags, ours.groups, ours.groupindex) == (
        theirs.pattern,
        theirs.flags,
        theirs.groups,
        theirs.groupindex,
    )
    assert ours == theirs  # equal patterns compare their compiled programs too


def test_regexes_compiled_once_are_built_from_the_file_next_time(tmp_path: Path, writable):
    path = tmp_path / "regex.marshal"
    first, fresh = _compiled_now(path)
    assert len(fresh) == len(_PATTERNS)
    second, again = _compiled_now(path)
    assert again == {}  # every pattern was built from what the file keeps
    for (pattern, flags), a, b in zip(_PATTERNS, first, second):
        theirs = re.compile(pattern, flags)
        _same_pattern(a, theirs)
        _same_pattern(b, theirs)
    m = second[0].match("  lr = 0.1 ")
    assert m is None
    m = second[0].match("lr = 0.1 ")
    assert m and m.group("name", "value") == ("lr", "0.1")
    assert second[1].search("a Colour map") and not second[1].search("greyscale")
    assert second[3].search("x = nd.ones(3)") and not second[3].search("mx.nd.ones(3)")
    assert second[4].match("abcdcd") and second[4].match("acc").groups() == ("a", None)
    assert second[5].search(b"..\x00ab").group("tag") == b"ab"
    assert _RE_COMPILER.compile.__module__ == _RE_COMPILER.__name__  # the hook is gone


def test_a_program_the_engine_rejects_is_compiled_again(tmp_path: Path, writable):
    path = tmp_path / "regex.marshal"
    _compiled_now(path)
    header, kept = marshal.loads(path.read_bytes())
    key = (_PATTERNS[0][0], _PATTERNS[0][1])
    flags, code, groups, groupindex, indexgroup = kept[key]
    kept[key] = (flags, [999999, *code], groups, groupindex, indexgroup)
    path.write_bytes(marshal.dumps((header, kept)))
    patterns, fresh = _compiled_now(path)
    assert list(fresh) == [key]
    _same_pattern(patterns[0], re.compile(*_PATTERNS[0]))


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not marshal data",
        marshal.dumps(((b"\x00\x00\r\n", "2.7.18", 1), {})),  # another interpreter's
        marshal.dumps([1, 2, 3]),
    ],
)
def test_a_damaged_or_foreign_regex_file_means_compiling_as_usual(
    tmp_path: Path, writable, content: bytes
):
    path = tmp_path / "regex.marshal"
    path.write_bytes(content)
    patterns, fresh = _compiled_now(path)
    assert len(fresh) == len(_PATTERNS)
    for (pattern, flags), ours in zip(_PATTERNS, patterns):
        _same_pattern(ours, re.compile(pattern, flags))
    assert _compiled_now(path)[1] == {}  # replaced by a good file


def test_debug_patterns_are_compiled_as_usual_and_not_kept(
    tmp_path: Path, writable, capsys: pytest.CaptureFixture[str]
):
    path = tmp_path / "regex.marshal"
    re.purge()
    with codegen_cache.regex_code_cache(path) as fresh:
        re.compile("ab*", re.DEBUG)
    re.purge()
    assert fresh == {} and not path.exists()
    assert "LITERAL 97" in capsys.readouterr().out  # DEBUG printed the program


def test_the_regex_hook_is_removed_when_the_block_raises(tmp_path: Path, writable):
    original = _RE_COMPILER.compile
    with pytest.raises(ZeroDivisionError), codegen_cache.regex_code_cache(tmp_path / "r.marshal"):
        re.purge()
        re.compile("x+y")
        raise ZeroDivisionError
    assert _RE_COMPILER.compile is original and _RE_COMPILER._sre.__name__ == "_sre"
