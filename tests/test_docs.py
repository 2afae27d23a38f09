"""The committed rule pages and their index are what the registry generates (run
`python -m mxlint.docs`), and the pages are the ones mxlint installs and links to."""

from __future__ import annotations

from pathlib import Path

from mxlint import docs, registry
from mxlint.rule import RULE_PAGES, rule_page, rule_url

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = ROOT / docs.PAGES


def test_committed_docs_are_up_to_date():
    assert docs.stale(DOCS, PAGES) == [], "run `python -m mxlint.docs` and commit the pages"
    assert not (DOCS / "rules").exists()


def test_the_pages_are_the_installed_ones():
    assert RULE_PAGES.resolve() == PAGES.resolve()
    for code, rule in registry.all_rules().items():
        assert rule_page(code).read_text(encoding="utf-8") == rule.documentation()
        assert rule_url(code) == rule_page(code).as_uri()
    assert rule_url("MXL999") is None


def test_generation_round_trip(tmp_path: Path):
    root, pages = tmp_path / "docs", tmp_path / "pkg" / "data" / "rules"
    assert docs.stale(root, pages)
    docs.write(root, pages)
    assert docs.stale(root, pages) == []
    (pages / "MXL000.md").write_text("old\n")
    (root / "rules").mkdir()
    (root / "rules" / "MXL101.md").write_text("the old place\n")
    assert docs.stale(root, pages) == [pages / "MXL000.md", root / "rules" / "MXL101.md"]
    args = ["--root", str(root), "--pages", str(pages)]
    assert docs.main([*args, "--check"]) == 1
    assert docs.write(root, pages) == [
        ("removed", pages / "MXL000.md"),
        ("removed", root / "rules" / "MXL101.md"),
    ]
    assert not (root / "rules").exists()
    assert docs.main([*args, "--check"]) == 0
    index = (root / "rules.md").read_text()
    for code, rule in registry.all_rules().items():
        assert f"[{code}](../pkg/data/rules/{code}.md)" in index
        assert (pages / f"{code}.md").read_text() == rule.documentation()
    assert "flake8" in index
