"""Fuzzing: generated and mutated programs through every rule and every fix.

Inputs: programs generated from Python's grammar (hypothesmith), alone, after MXNet imports
and inside a HybridBlock's `hybrid_forward`; and real-looking MXNet files (every rule's
examples and the fixtures) mutated line by line (deleted, duplicated, swapped, re-indented,
identifiers renamed, MXNet statements inserted, truncated, stray characters, other line endings).

For each input, with every rule selected and either MXNet line:

* linting never raises and no rule fails (no MXL002), and every finding lies inside the file;
  a file that does not parse gets exactly one MXL001;
* every offered fix, applied alone, keeps the file parseable, and the finding it fixes is not
  reported again at its (moved) place;
* fixing everything (unsafe fixes too) reaches a text with nothing left to fix, in a few
  passes, and fixing that text again changes nothing;
* the same program with CRLF line endings gets the same findings, and the same fixes with
  CRLF kept.

Dependency files (requirements, Dockerfile, pyproject, setup.cfg, environment.yml) and
notebooks are mutated too and must never make a rule fail.

CI runs a bounded, derandomized budget (about half a minute). A release runs a longer, random
one (about an hour and a half on two cores):

    MXLINT_FUZZ_EXAMPLES=20000 pytest tests/test_fuzz.py
"""

from __future__ import annotations

import keyword
import os
import re
import tempfile
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mxlint import engine, fix_run, fixes, registry
from mxlint.api import check_source
from mxlint.config import Settings
from mxlint.parsing import ParseFailure, parse_module, split_lines
from mxlint.rule import Edit, Example, Finding, Location, Valid

ROOT = Path(__file__).resolve().parent.parent
#: Generated code is full of `1()` and `"\d"`: the interpreter's warnings about it are noise.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")
#: Examples per test; a release run sets MXLINT_FUZZ_EXAMPLES (and is not derandomized).
LONG_RUN = int(os.environ.get("MXLINT_FUZZ_EXAMPLES", "0") or 0)


def budget(ci_examples: int) -> Callable:
    return settings(
        max_examples=LONG_RUN or ci_examples,
        derandomize=not LONG_RUN,
        deadline=None,
        print_blob=True,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
            HealthCheck.large_base_example,
        ],
    )


# -- the properties -------------------------------------------------------------------------


def lint(source: str, filename: str, mxnet: str | None) -> list[Finding]:
    found = check_source(source, filename, Settings(select=("ALL",), mxnet_version=mxnet))
    lines = split_lines(source) or [""]
    for f in found:
        assert f.code != "MXL002", f"a rule failed: {f.message}"
        assert registry.get_rule(f.code) is not None, f.code
        for loc in (f.location, f.end_location):
            assert 1 <= loc.row <= len(lines) + 1, (f, len(lines))
            line = lines[loc.row - 1] if loc.row <= len(lines) else ""
            assert 1 <= loc.column <= len(line) + 1, (f, line)
        assert (f.location.row, f.location.column) <= (f.end_location.row, f.end_location.column), f
    return found


_BREAK = re.compile(r"\r\n|\r|\n")


def moved(point: Location, edits: Sequence[Edit]) -> Location:
    """Where `point` is once `edits` are applied (the start of an edit that replaced it)."""
    row, col = point.row, point.column
    for e in sorted(edits, key=lambda e: (e.location.row, e.location.column), reverse=True):
        start, end = (
            (e.location.row, e.location.column),
            (e.end_location.row, e.end_location.column),
        )
        if start >= (row, col):
            continue
        if end > (row, col):
            row, col = start
            continue
        lines = _BREAK.split(e.content)
        new_end_row = start[0] + len(lines) - 1
        new_end_col = (start[1] if len(lines) == 1 else 1) + len(lines[-1])
        if end[0] == row:
            row, col = new_end_row, new_end_col + (col - end[1])
        else:
            row += new_end_row - end[0]
    return Location(row, col)


def fixable(found: list[Finding]) -> list[Finding]:
    return [f for f in found if fixes.applicable(f, unsafe=True)]


def check_program(source: str, filename: str = "example.py", mxnet: str | None = None) -> str:
    """Every property above; returns the fully fixed text."""
    found = lint(source, filename, mxnet)
    if isinstance(parse_module(source), ParseFailure):
        assert [f.code for f in found] == ["MXL001"], found
        return source
    # Fixes are applied only to what the interpreter parses too (libcst is more lenient).
    parses = fixes.parses(source)
    if not parses:
        assert not any(f.code == "MXL001" for f in found), found
        return source
    newline = fixes.newline_of(source)
    seen: set[tuple] = set()
    for f in fixable(found):
        assert f.fix is not None
        key = tuple((e.location, e.end_location, e.content) for e in f.fix.edits)
        if key in seen:
            continue
        seen.add(key)
        edits = fixes._normalize(f.fix.edits, newline)
        alone = fixes.apply_edits(source, edits)
        assert alone != source, f"a fix that changes nothing: {f}"
        assert fixes.parses(alone), f"the fix breaks the file: {f}\n{alone}"
        # The fixed finding is gone (a different one may show up once this one is fixed).
        where = moved(f.location, edits)
        again = [g for g in lint(alone, filename, mxnet) if (g.code, g.location) == (f.code, where)]
        assert not again, f"the fixed finding is still there: {f}\n{alone}"
    text = source
    for _ in range(fix_run.MAX_PASSES):
        todo = fixable(lint(text, filename, mxnet))
        if not todo:
            break
        text, applied = fixes.apply_findings(text, todo, unsafe=True, python=True)
        assert applied, f"fixes offered that none of can be applied: {todo}"
        assert fixes.parses(text)
    else:
        raise AssertionError(f"fixes do not converge:\n{text}")
    assert fixes.apply_findings(text, fixable(lint(text, filename, mxnet)), True, True) == (text, 0)
    return text


def check_newlines(source: str, filename: str, mxnet: str | None) -> None:
    """CRLF: the same findings at the same rows and columns, the same fixes with CRLF kept."""
    if "\r" in source:
        return
    fixed = check_program(source, filename, mxnet)
    crlf = source.replace("\n", "\r\n")
    fixed_crlf = check_program(crlf, filename, mxnet)
    key = [(f.code, f.location, f.end_location) for f in lint(source, filename, mxnet)]
    assert [(f.code, f.location, f.end_location) for f in lint(crlf, filename, mxnet)] == key
    assert fixed_crlf == fixed.replace("\n", "\r\n")


# -- generated programs ---------------------------------------------------------------------

HEADER = "import mxnet as mx\nfrom mxnet import nd, autograd, gluon\nfrom mxnet.gluon import nn\n"


def _in_hybrid_forward(code: str) -> str:
    body = textwrap.indent(code, " " * 8) or "        pass\n"
    return (
        HEADER
        + "\n\nclass Net(nn.HybridBlock):\n    def hybrid_forward(self, F, x):\n"
        + body
        + "\n        return x\n"
    )


def _after_imports(code: str) -> str:
    return HEADER + code


generated = st.tuples(
    st.sampled_from([lambda c: c, _after_imports, _in_hybrid_forward]),
    hypothesmith.from_grammar(),
).map(lambda t: t[0](t[1]))


@pytest.mark.slow
@budget(ci_examples=250)
@given(source=generated, mxnet=st.sampled_from([None, "1", "2"]))
def test_generated_programs(source: str, mxnet: str | None) -> None:
    check_program(source, "example.py", mxnet)


# -- mutated MXNet files ---------------------------------------------------------------------


def _corpus() -> list[tuple[str, str]]:
    """(file name, source) of every python rule's examples and every fixture program."""
    out: list[tuple[str, str]] = []
    for rule in registry.all_rules().values():
        if rule.kind != "python":
            continue
        for ex in (*rule.invalid, *rule.valid):
            if isinstance(ex, (Example, Valid)):
                out.append((ex.filename, ex.code))
            else:
                out.append(("example.py", ex))
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        out.append((path.name, path.read_text(encoding="utf-8")))
    return out


CORPUS = _corpus()

#: Statements an MXNet training script is made of, and things that break them.
SNIPPETS = [
    "if x.sum() > 0:\n    x = x * 2",
    "x = x.asnumpy()",
    "y = x.asscalar()",
    "print(x)",
    "for i in range(x.shape[0]):\n    x = x + i",
    "with autograd.record():\n    loss = net(x)",
    "loss.backward()",
    "ctx = mx.gpu(0)",
    "net.initialize(ctx=ctx)",
    "x = nd.zeros((2, 3))",
    "np.random.seed(0)",
    "random.shuffle(data)",
    "mx.random.seed(42)",
    "net.hybridize()",
    "net.export('model')",
    "return F.relu(x)",
    "x[0] = 1",
    "x += 1",
    "autograd.is_training()",
    "mx.nd.waitall()",
    "x = F.relu(x)  # noqa: MXL105",
    "# mxlint: noqa: MXL1",
    "loader = gluon.data.DataLoader(ds, batch_size=8, shuffle=True)",
    "trainer.step(8)",
    "total += loss",
    "losses.append(loss)",
    "w = net.weight.data()",
    "amp.init()",
    "t0 = time.time()",
    "while x.sum() > 0:\n    x = x - 1",
    "assert x.shape[0] > 0",
    "x = len(x)",
    "for row in x:\n    pass",
    "x = x if x.sum() > 0 else -x",
    "yield x",
    "global x",
    "del x",
    "lambda: x",
    "async def g():\n    await x",
    "return",
    "class Block(nn.HybridBlock):\n    def forward(self, x):\n        return x",
    "pass",
    "try:\n    pass\nexcept Exception as e:\n    raise",
    "import numpy as np",
    "import random",
    "def hybrid_forward(self, F, x):\n    return x",
    "@property\ndef f(self):\n    return 1",
    "out = net(data)",
    "h = nd.ones((1, 4))",
    "state = self.lstm.begin_state(batch_size=4)",
    "np.random.shuffle(idx)",
    "pos = np.arange(x.shape[1])",
    "return nd.relu(self.dense(x))",
    "for data, label in loader:\n    out = net(data)",
    "net.output.initialize(init.Xavier())",
]
NAMES = [
    "x",
    "F",
    "nd",
    "mx",
    "np",
    "self",
    "net",
    "ctx",
    "data",
    "loss",
    "autograd",
    "random",
    "gluon",
    "trainer",
    "hybrid_forward",
    "forward",
    "label",
    "_",
]
STRAY = [
    "(",
    ")",
    "[",
    "]",
    ":",
    ",",
    "\\",
    '"',
    "'",
    "#",
    "\t",
    "\x0c",
    "\u00e9",
    "\u2028",
    "\n",
    " ",
    "\r",
    "\x00",
    ";",
    "=",
    ".",
]
IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, str]:
    filename, source = draw(st.sampled_from(CORPUS))
    lines = source.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        lines = lines or [""]
        # Mostly edits that keep the file parsing, so that rules and fixes get exercised.
        op = draw(
            st.sampled_from(
                [
                    "delete",
                    "duplicate",
                    "rename",
                    "rename",
                    "insert",
                    "insert",
                    "insert",
                    "insert",
                    "noqa",
                    "number",
                    "swap",
                    "indent",
                    "stray",
                    "truncate",
                ]
            )
        )
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        line = lines[i] if lines else ""
        if op == "delete" and lines:
            del lines[i]
        elif op == "duplicate" and lines:
            lines.insert(i, line)
        elif op == "swap" and len(lines) > 1:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "rename":
            names = sorted(
                n for n in set(IDENT.findall("\n".join(lines))) if not keyword.iskeyword(n)
            )
            if names:
                old, new = draw(st.sampled_from(names)), draw(st.sampled_from(NAMES))
                lines = [re.sub(rf"\b{re.escape(old)}\b", new, ln) for ln in lines]
        elif op == "indent" and lines:
            lines[i] = (
                draw(st.sampled_from(["    ", "\t", ""])) + line.lstrip(" \t")
                if draw(st.booleans())
                else "    " + line
            )
        elif op == "insert":
            snippet = draw(st.sampled_from(SNIPPETS))
            indent = next((_indent_of(ln) for ln in lines[i:] if ln.strip()), "")
            lines[i:i] = [indent + s for s in snippet.split("\n")]
        elif op == "noqa" and lines:
            code = draw(st.sampled_from(["", ": MXL101", ": MXL999", ": MXL1, E501", ": MXL2"]))
            lines[i] = line + f"  # noqa{code}"
        elif op == "stray":
            col = draw(st.integers(0, len(line)))
            lines[i] = line[:col] + draw(st.sampled_from(STRAY)) + line[col:]
        elif op == "truncate":
            text = "\n".join(lines)
            lines = text[: draw(st.integers(0, len(text)))].split("\n")
        elif op == "number":
            lines[i] = re.sub(r"\b\d+\b", str(draw(st.sampled_from([0, 1, 2, 10**30]))), line)
    text = "\n".join(lines)
    newline = draw(st.sampled_from(["\n", "\n", "\n", "\r\n", "\r"]))
    return filename, text.replace("\n", newline) if newline != "\n" else text


@pytest.mark.slow
@budget(ci_examples=600)
@given(case=mutated(), mxnet=st.sampled_from([None, "1", "2"]))
def test_mutated_mxnet_files(case: tuple[str, str], mxnet: str | None) -> None:
    filename, source = case
    check_program(source, filename, mxnet)


@pytest.mark.slow
@budget(ci_examples=150)
@given(case=mutated(), mxnet=st.sampled_from([None, "1", "2"]))
def test_line_endings_change_nothing(case: tuple[str, str], mxnet: str | None) -> None:
    filename, source = case
    check_newlines(source.replace("\r\n", "\n").replace("\r", "\n"), filename, mxnet)


@pytest.mark.slow
def test_corpus_as_is() -> None:
    """Every unmutated corpus file, so that the examples above start from working code."""
    assert len(CORPUS) > 100
    for filename, source in CORPUS:
        check_program(source, filename, None)


#: Minimal inputs the fuzzer found; each was a bug, fixed since.
REGRESSIONS = [
    # A null byte in a file with CR line endings: MXL001 was placed past the end of line 1.
    ("example.py", "import mxnet as mx\rimport mxnet as mx\r\x00x = 1\r"),
    # CPython placed this error on line 4 of the CRLF text and on line 3 of the LF one.
    ("train.py", 'from mxnet import gluon\r\n\r\nif __name__ == "__main__":\r\n'),
]


@pytest.mark.parametrize(("filename", "source"), REGRESSIONS)
def test_regressions(filename: str, source: str) -> None:
    check_program(source, filename)
    check_newlines(source.replace("\r\n", "\n").replace("\r", "\n"), filename, None)


# -- dependency files and notebooks ---------------------------------------------------------


def _text_corpus() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for rule in registry.all_rules().values():
        if rule.kind == "python":
            continue
        for ex in (*rule.invalid, *rule.valid):
            if isinstance(ex, (Example, Valid)):
                out.append((ex.filename, ex.code))
                out.extend(ex.project)
    for path in sorted((ROOT / "fixtures").rglob("*")):
        if path.is_file() and any(t.matches(path.name) for t in registry.text_checkers()):
            out.append((path.name, path.read_text(encoding="utf-8")))
    return out


TEXT_CORPUS = _text_corpus()


@st.composite
def mutated_text(draw: st.DrawFn) -> list[tuple[str, str]]:
    files = draw(
        st.lists(st.sampled_from(TEXT_CORPUS), min_size=1, max_size=3, unique_by=lambda f: f[0])
    )
    out = []
    for name, text in files:
        lines = text.split("\n")
        for _ in range(draw(st.integers(0, 4))):
            lines = lines or [""]
            i = draw(st.integers(0, max(len(lines) - 1, 0)))
            line = lines[i] if lines else ""
            op = draw(st.sampled_from(["delete", "duplicate", "stray", "truncate", "version"]))
            if op == "delete" and lines:
                del lines[i]
            elif op == "duplicate" and lines:
                lines.insert(i, line)
            elif op == "stray":
                col = draw(st.integers(0, len(line)))
                stray = draw(
                    st.sampled_from(
                        STRAY
                        + ["==", ">=", "<", "~=", "[", "${X}", "cu", "mxnet", "-r ", "FROM ", "- "]
                    )
                )
                lines[i] = line[:col] + stray + line[col:]
            elif op == "truncate":
                joined = "\n".join(lines)
                lines = joined[: draw(st.integers(0, len(joined)))].split("\n")
            elif op == "version":
                lines[i] = re.sub(
                    r"\d+(\.\d+)*",
                    draw(
                        st.sampled_from(
                            ["1.9.1", "2.0.0", "1.24", "0", "99.99", "1.9.1.post0", "1.9.*", ""]
                        )
                    ),
                    line,
                )
        out.append((name, "\n".join(lines)))
    return out


#: Dependency files the fuzzer found breaking a rule, fixed since.
TEXT_REGRESSIONS = [
    # IndexError in conda_to_pep440: a conda spec with an operator and no version.
    [("environment.yml", "name: env\ndependencies:\n  - python=\n  - python==\n  - numpy\n")],
    # ValueError in cuda_of_variant: `mxnet-cu0` names no CUDA version.
    [
        (
            "Dockerfile",
            "FROM nvidia/cuda:10.1-cudnn7-runtime-ubuntu18.04\n"
            "RUN pip install mxnet-cu0==0 'numpy<0'\n",
        )
    ],
    # Rows counted by str.splitlines, which also breaks at form feeds: reported on row 4 of 2.
    [("requirements.txt", "\x0cmxnet\n\x0cmxnet\n")],
    # ValueError from open(): an included file name with a NUL byte.
    [("requirements.txt", "-c\x00 constraints.txt\nmxnet==1.9.1\n")],
    # IndexError in the option reader: `-c` and a tab, its value only whitespace.
    [
        (
            "requirements.txt",
            "-c\t constraints.txt\nmxnet-cu112==1.9.1 \\\n"
            "    --hash=sha256:0123456789abcdef0123456789abcdef\nnumpy\n",
        )
    ],
]


@pytest.mark.parametrize("files", TEXT_REGRESSIONS)
def test_dependency_file_regressions(files: list[tuple[str, str]]) -> None:
    check_dependency_files(files)


@pytest.mark.slow
@budget(ci_examples=300)
@given(files=mutated_text())
def test_mutated_dependency_files(files: list[tuple[str, str]]) -> None:
    check_dependency_files(files)


def check_dependency_files(files: list[tuple[str, str]]) -> None:
    settings_ = Settings(select=("ALL",))
    texts = dict(files)
    for checker in registry.text_checkers():
        mine = [(n, t) for n, t in files if checker.matches(os.path.basename(n))]
        if not mine:
            continue
        for f in checker().check_files(mine, settings_):
            lines = split_lines(texts[f.filename]) or [""]
            assert f.code != "MXL002"
            assert 1 <= f.location.row <= len(lines) + 1, f
            line = lines[f.location.row - 1] if f.location.row <= len(lines) else ""
            assert 1 <= f.location.column <= len(line) + 1, (f, line)


NOTEBOOK = ROOT / "fixtures" / "notebooks" / "gluon_cnn.ipynb"


@pytest.mark.slow
@pytest.mark.skipif(not NOTEBOOK.exists(), reason="no notebook fixture")
@budget(ci_examples=100)
@given(data=st.data())
def test_mutated_notebooks(data: st.DataObject) -> None:
    raw = NOTEBOOK.read_text(encoding="utf-8")
    op = data.draw(st.sampled_from(["truncate", "stray", "code"]))
    if op == "truncate":
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    elif op == "stray":
        at = data.draw(st.integers(0, len(raw)))
        raw = raw[:at] + data.draw(st.sampled_from(STRAY + ["{", "}", "null", "[]"])) + raw[at:]
    else:
        snippet = data.draw(st.sampled_from(SNIPPETS)).replace("\n", "\\n").replace('"', '\\"')
        raw = raw.replace('"source": [', f'"source": ["{snippet}\\n", ', 1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nb.ipynb"
        path.write_text(raw, encoding="utf-8")
        result = engine.lint_file(path, Settings(select=("ALL",)))
    assert all(f.code != "MXL002" for f in result.findings), result.findings
