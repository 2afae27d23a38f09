"""How the ONNX rules word where an export is and build their findings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mxlint.rule import Finding, Fix, Location, Rule

if TYPE_CHECKING:
    from mxlint.rules.onnx._blocks import Use
    from mxlint.rules.onnx._export import ExportSite


def where(site: ExportSite, path: str) -> str:
    """The export call's place, as seen from a finding in `path`."""
    row = site.span[0]
    return f"line {row}" if site.path == path else f"{site.path}:{row}"


def verify_args(site: ExportSite) -> dict[str, Any]:
    """The export call's literal arguments, for `--verify` to export with them."""
    out: dict[str, Any] = {}
    for key in ("in_shapes", "in_types", "dynamic", "dynamic_input_shapes"):
        arg = site.args.get(key)
        if arg is not None and arg.given:
            out[key] = {"literal": arg.literal, "value": arg.value if arg.literal else None}
    if site.opset is not None:
        out["opset"] = site.opset
    return out


def finding(
    rule: type[Rule],
    message: str,
    path: str,
    span: tuple[int, int, int, int],
    symbol: str | None,
    data: dict[str, Any],
    fix: Fix | None = None,
) -> Finding:
    sl, sc, el, ec = span
    return Finding(rule.code, message, path, Location(sl, sc), Location(el, ec), fix, symbol, data)


def use_data(site: ExportSite, use: Use, holder: str) -> dict[str, Any]:
    data: dict[str, Any] = {"ops": list(use.ops), "onnx": verify_args(site)}
    if holder:
        data["class"] = holder
    return data
