"""`# noqa` directives: same-line, statement, file-level, unused (MXL004), and --add-noqa."""

from __future__ import annotations

from pathlib import Path

import flake8.defaults
import libcst as cst
import pytest
from rule_cases import invalid_examples, settings, valid_examples

from mxlint import add_noqa, suppressions
from mxlint.api import check_paths, check_source
from mxlint.cli import main
from mxlint.config import Settings
from mxlint.fixes import apply_edits

# MXL004's own examples already carry a directive on the reported line.
CASES = [case for case in invalid_examples() if case[0].code != "MXL004"]
IDS = [case[2] for case in CASES]


def _with_comment(code: str, row: int, comment: str) -> str | None:
    if row in add_noqa.rows_without_comment_end(code):
        return None
    lines = code.splitlines(keepends=True)
    body = lines[row - 1].rstrip("\r\n")
    lines[row - 1] = f"{body}  {comment}" + lines[row - 1][len(body) :]
    return "".join(lines)


def _rows(rule, ex, source: str, *extra: str) -> list[tuple[int, str]]:
    findings = check_source(source, ex.filename, settings(rule, ex.mxnet, *extra), ex.project)
    return [(f.location.row, f.code) for f in findings]


def test_the_inline_grammar_is_flake8s():
    assert suppressions.NOQA_INLINE.pattern == flake8.defaults.NOQA_INLINE_REGEXP.pattern
    assert suppressions.NOQA_INLINE.flags == flake8.defaults.NOQA_INLINE_REGEXP.flags


def test_there_are_rule_examples_to_suppress():
    assert len({rule.code for rule, _, _ in CASES}) >= 3


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa: {code}",
        "# noqa",
        "# noqa:{code},E501",
        "# NOQA: {prefix}",
        "# explained  # noqa: {code}",
    ],
)
@pytest.mark.parametrize(("rule", "ex", "case_id"), CASES, ids=IDS)
def test_directive_on_the_reported_line_suppresses(rule, ex, case_id, comment):
    assert (ex.line, rule.code) in _rows(rule, ex, ex.code)
    text = comment.format(code=rule.code, prefix=rule.code[:4])
    source = _with_comment(ex.code, ex.line, text)
    if source is None:
        pytest.skip("the reported line cannot end with a comment")
    assert (ex.line, rule.code) not in _rows(rule, ex, source)


@pytest.mark.parametrize(("rule", "ex", "case_id"), CASES, ids=IDS)
def test_directive_for_other_codes_does_not_suppress(rule, ex, case_id):
    other = "MXL004" if rule.code != "MXL004" else "MXL001"
    source = _with_comment(ex.code, ex.line, f"# noqa: E501, {other}")
    if source is None:
        pytest.skip("the reported line cannot end with a comment")
    assert (ex.line, rule.code) in _rows(rule, ex, source)


@pytest.mark.parametrize(
    "header",
    [
        "# mxlint: noqa",
        "# mxlint: noqa: {code}",
        "# mxlint: noqa: {family}",
        "#mxlint:noqa:E501,{code}",
    ],
)
@pytest.mark.parametrize(("rule", "ex", "case_id"), CASES, ids=IDS)
def test_file_level_directive(rule, ex, case_id, header):
    text = header.format(code=rule.code, family=rule.code[:4])
    assert [r for r in _rows(rule, ex, text + "\n" + ex.code) if r[1] == rule.code] == []


@pytest.mark.parametrize(("rule", "ex", "case_id"), CASES, ids=IDS)
def test_file_level_directive_for_another_family_keeps_findings(rule, ex, case_id):
    other = "MXL9" if rule.code[3] != "9" else "MXL8"
    rows = _rows(rule, ex, f"# mxlint: noqa: {other}\n" + ex.code)
    assert (ex.line + 1, rule.code) in rows


@pytest.mark.parametrize(("rule", "ex", "case_id"), CASES, ids=IDS)
def test_add_noqa_silences_each_finding_and_is_idempotent(rule, ex, case_id):
    s = settings(rule, ex.mxnet)
    findings = [f for f in check_source(ex.code, ex.filename, s) if f.code == rule.code]
    fixed, count = _add(ex.code, findings)
    assert count >= 1
    cst.parse_module(fixed)
    assert [f for f in check_source(fixed, ex.filename, s) if f.code == rule.code] == []
    assert _add(fixed, [])[1] == 0


def _add(source: str, findings) -> tuple[str, int]:
    return add_noqa.add_to_python(source, findings)


def test_multi_line_statement_first_line_and_own_line():
    source = "x = call(  # noqa: MXL101\n    a,\n    b)\ny = [\n    1,  # noqa: MXL102\n]\n"
    sup = suppressions.parse(source)
    assert sup.match("MXL101", 1) and sup.match("MXL101", 2) and sup.match("MXL101", 3)
    assert not sup.match("MXL101", 4)
    assert sup.match("MXL102", 5)
    assert not sup.match("MXL102", 4) and not sup.match("MXL102", 6)
    # Under flake8 the same-line directive is flake8's; the statement's first line is ours.
    sup = suppressions.parse(source)
    assert not sup.match("MXL101", 1, inline=False)
    assert sup.match("MXL101", 3, inline=False)


def test_directives_are_read_from_comments_only():
    source = 's = "# noqa: MXL101"\nt = """\n# mxlint: noqa\n"""\n'
    sup = suppressions.parse(source)
    assert not sup and not sup.match("MXL101", 1) and not sup.match("MXL101", 3)


def test_unparsable_source_still_has_line_directives():
    sup = suppressions.parse("def f(:\n    x = 1  # noqa: MXL101\n")
    assert sup.match("MXL101", 2) and not sup.match("MXL101", 1)


def _unused_cases():
    for rule, ex, case_id in valid_examples():
        if rule.code.startswith("MXL0"):
            continue
        yield pytest.param(rule, ex, id=case_id)


@pytest.mark.parametrize(("rule", "ex"), list(_unused_cases()))
def test_unused_directive_is_reported_and_fixed(rule, ex):
    rows = [
        r
        for r in range(1, ex.code.count("\n") + 2)
        if ex.code.splitlines()[r - 1 : r] and ex.code.splitlines()[r - 1].strip()
    ]
    row = rows[-1]
    source = _with_comment(ex.code, row, f"# noqa: {rule.code}")
    if source is None:
        pytest.skip("the last line cannot end with a comment")
    s = Settings(select=(rule.code, "MXL004"), mxnet_version=ex.mxnet)
    findings = check_source(source, ex.filename, s)
    unused = [f for f in findings if f.code == "MXL004"]
    assert [(f.location.row, rule.code in f.message) for f in unused] == [(row, True)]
    assert unused[0].fix is not None and unused[0].fix.applicability == "safe"
    fixed = apply_edits(source, unused[0].fix.edits)
    assert [f for f in check_source(fixed, ex.filename, s) if f.code == "MXL004"] == []
    # Not judged when the rule is not enabled, nor for other tools' codes or a bare noqa.
    assert [
        f
        for f in check_source(source, ex.filename, Settings(select=("MXL004",)))
        if f.code == "MXL004"
    ] == []


@pytest.mark.parametrize(("rule", "ex", "case_id"), CASES, ids=IDS)
def test_used_directive_is_not_reported(rule, ex, case_id):
    source = _with_comment(ex.code, ex.line, f"# noqa: {rule.code}")
    if source is None:
        pytest.skip("the reported line cannot end with a comment")
    assert [r for r in _rows(rule, ex, source, "MXL004") if r[1] == "MXL004"] == []


def test_unused_directive_can_itself_be_suppressed():
    source = "import mxnet as mx\nx = mx.nd.zeros((1,))  # noqa: MXL999, MXL004\n"
    assert [f.code for f in check_source(source)] == []
    source = "# mxlint: noqa: MXL004\nimport mxnet as mx\nx = mx.nd.zeros((1,))  # noqa: MXL999\n"
    assert [f.code for f in check_source(source)] == []


def test_text_files_honour_line_directives(tmp_path: Path):
    req = tmp_path / "requirements.txt"
    req.write_text("mxnet\n")
    codes = {f.code for f in check_paths([req], Settings(root=tmp_path)).findings}
    if not codes:
        pytest.skip("no requirements rule reports a bare `mxnet` line")
    code = sorted(codes)[0]
    req.write_text(f"mxnet  # noqa: {code}\n")
    after = {f.code for f in check_paths([req], Settings(root=tmp_path)).findings}
    assert code not in after


def test_cli_add_noqa_then_clean(tmp_path: Path, monkeypatch, capsys):
    rule, ex, _ = CASES[0]
    path = tmp_path / ex.filename
    path.write_text(ex.code)
    (tmp_path / "mxlint.toml").write_text(
        f'select = ["{rule.code}"]\nmxnet-version = "{ex.mxnet}.0"\n'
    )
    monkeypatch.chdir(tmp_path)
    assert main(["check", ex.filename]) == 1
    assert main(["check", "--add-noqa", ex.filename]) == 0
    assert "noqa directive" in capsys.readouterr().err
    assert main(["check", ex.filename]) == 0
    assert main(["check", "--add-noqa", ex.filename]) == 0
    assert "Added 0 noqa directives." in capsys.readouterr().err


def test_requirements_entry_is_covered_from_its_last_line():
    text = "mxnet==1.9.1 \\\n    --hash=sha256:00 \\\n    --hash=sha256:11  # noqa: MXL501\nnumpy\n"
    sup = suppressions.parse_lines(text, "requirements")
    assert [sup.match("MXL501", row) for row in (1, 2, 3, 4)] == [True, True, True, False]
    # Read as plain lines, only the directive's own row is covered.
    assert not suppressions.parse_lines(text).match("MXL501", 1)


def test_dockerfile_comment_line_above_covers_the_instruction():
    text = (
        "# escape=`\n"
        "FROM python:3.9\n"
        "# noqa: MXL502\n"
        "RUN pip install a `\n"
        "    # a comment line inside the instruction\n"
        "    mxnet-cu110 mxnet-cu112\n"
        "RUN pip install onnx\n"
        "# noqa: MXL505\n"
        "\n"
        "RUN pip install onnx==1.19.0\n"
    )
    sup = suppressions.parse_lines(text, "dockerfile")
    assert [r for r in range(1, 11) if sup.match("MXL502", r)] == [3, 4, 5, 6]
    # Not across a blank line: the directive must be directly above.
    assert [r for r in range(1, 11) if sup.match("MXL505", r)] == [8]
    assert suppressions.dockerfile_instructions(text.splitlines()) == [
        (2, 2),
        (4, 6),
        (7, 7),
        (10, 10),
    ]
