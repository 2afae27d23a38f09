"""The committed rule docs are what the registry generates (run `python -m mxlint.docs`)."""

from __future__ import annotations

from pathlib import Path

from mxlint import docs, registry

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_committed_docs_are_up_to_date():
    assert docs.stale(DOCS) == [], "run `python -m mxlint.docs` and commit docs/"


def test_generation_round_trip(tmp_path: Path):
    assert docs.stale(tmp_path)
    docs.write(tmp_path)
    assert docs.stale(tmp_path) == []
    (tmp_path / "rules" / "MXL000.md").write_text("old\n")
    assert docs.stale(tmp_path) == [tmp_path / "rules" / "MXL000.md"]
    assert docs.main(["--root", str(tmp_path), "--check"]) == 1
    docs.write(tmp_path)
    assert docs.main(["--root", str(tmp_path), "--check"]) == 0
    index = (tmp_path / "rules.md").read_text()
    for code, rule in registry.all_rules().items():
        assert f"[{code}](rules/{code}.md)" in index
        assert (tmp_path / "rules" / f"{code}.md").read_text() == rule.documentation()
    assert "flake8" in index
