"""The bundled sample project: exactly the marked findings; its clean twin: none at all."""

from __future__ import annotations

from expectations import actual, expected

from mxlint.api import check_paths
from mxlint.config import Settings


def test_sample_project_findings_are_exactly_the_marked_ones(fixtures_dir):
    root = fixtures_dir / "sample_project"
    assert actual(root, Settings(root=root)) == expected(root)


def test_clean_twin_has_no_findings(fixtures_dir):
    root = fixtures_dir / "clean_project"
    result = check_paths([root], Settings(select=("ALL",), root=root))
    assert [(f.filename, f.location.row, f.code) for f in result.findings] == []
    assert not result.error


def test_every_family_is_represented(fixtures_dir):
    codes = {code for _, _, code in expected(fixtures_dir / "sample_project")}
    assert {c[:4] for c in codes} >= {"MXL1", "MXL2", "MXL3", "MXL4", "MXL5"}
