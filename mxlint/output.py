"""Output formats. `json` is a contract: Ruff's shape, consumed by --verify and CI tools."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mxlint.rule import Finding, Fix


def _fix_json(fix: Fix | None) -> dict[str, Any] | None:
    if fix is None:
        return None
    return {
        "applicability": fix.applicability,
        "message": fix.message,
        "edits": [
            {
                "content": e.content,
                "location": {"row": e.location.row, "column": e.location.column},
                "end_location": {"row": e.end_location.row, "column": e.end_location.column},
            }
            for e in fix.edits
        ],
    }


def finding_json(f: Finding) -> dict[str, Any]:
    return {
        "cell": f.cell,
        "code": f.code,
        "end_location": {"row": f.end_location.row, "column": f.end_location.column},
        "filename": f.filename,
        "fix": _fix_json(f.fix),
        "location": {"row": f.location.row, "column": f.location.column},
        "message": f.message,
        "noqa_row": f.location.row,
        "url": f.url,
    }


def render_json(findings: Sequence[Finding]) -> str:
    return json.dumps([finding_json(f) for f in findings], indent=2) + "\n"


def render_concise(findings: Sequence[Finding]) -> str:
    lines = []
    for f in findings:
        fixable = " [*]" if f.fix is not None and f.fix.applicability == "safe" else ""
        lines.append(f"{f.filename}:{f.location.row}:{f.location.column}: {f.code}{fixable} "
                     f"{f.message}")
    return "\n".join(lines) + ("\n" if lines else "")
