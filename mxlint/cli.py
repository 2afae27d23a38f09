"""Command line: `mxlint check`, `mxlint rule`. Exit codes: 0 clean, 1 findings, 2 error."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mxlint import __version__, registry
from mxlint.config import ConfigError, Settings, find_config, load_settings, parse_mxnet_version
from mxlint.output import render_concise, render_json

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SUBCOMMANDS = ("check", "rule")


def _codes(value: str) -> list[str]:
    return [c.strip() for c in value.split(",") if c.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mxlint", description=__doc__)
    parser.add_argument("--version", action="version", version=f"mxlint {__version__}")
    sub = parser.add_subparsers(dest="command")

    check = sub.add_parser("check", help="lint files and directories (default: .)")
    check.add_argument("paths", nargs="*", type=Path, help="files or directories")
    check.add_argument("--output-format", choices=("concise", "json"), default=None)
    check.add_argument("--select", type=_codes, default=None, help="comma-separated codes/prefixes")
    check.add_argument("--extend-select", type=_codes, default=None)
    check.add_argument("--ignore", type=_codes, default=None)
    check.add_argument("--mxnet-version", default=None, help="target MXNet line: 1.9 or 2.0")
    check.add_argument("--config", type=Path, default=None, help="explicit config file")
    check.add_argument("--isolated", action="store_true", help="ignore all config files")

    rule = sub.add_parser("rule", help="show a rule's documentation")
    rule.add_argument("code", nargs="?")
    rule.add_argument("--all", action="store_true", help="list every rule")
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    if args.isolated:
        settings = load_settings(None)
    else:
        start = args.paths[0] if args.paths else Path.cwd()
        path = args.config or find_config(start)
        settings = load_settings(path)
    valid = set(registry.all_rules())
    for attr in ("select", "extend_select", "ignore"):
        value = getattr(args, attr)
        if value is None:
            continue
        for code in value:
            if code != "ALL" and not any(c.startswith(code) for c in valid):
                raise ConfigError(f"--{attr.replace('_', '-')}: unknown rule code `{code}`")
        if attr == "ignore":
            settings.ignore = settings.ignore + tuple(value)
        elif attr == "extend_select":
            settings.extend_select = settings.extend_select + tuple(value)
        else:
            settings.select = tuple(value)
    if args.mxnet_version:
        settings.mxnet_version = parse_mxnet_version(args.mxnet_version)
    return settings


def cmd_check(args: argparse.Namespace) -> int:
    from mxlint.runner import run

    try:
        settings = _settings(args)
    except ConfigError as exc:
        print(f"mxlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    paths = args.paths or [Path(".")]
    missing = [p for p in paths if not p.exists() and not p.is_symlink()]
    if missing:
        for p in missing:
            print(f"mxlint: error: {p}: no such file or directory", file=sys.stderr)
        return EXIT_ERROR
    result = run(paths, settings)
    fmt = args.output_format or "concise"
    if fmt == "json":
        sys.stdout.write(render_json(result.findings))
    else:
        sys.stdout.write(render_concise(result.findings))
        if result.findings:
            n = len(result.findings)
            print(f"Found {n} error{'s' if n != 1 else ''}.", file=sys.stderr)
    if result.error:
        return EXIT_ERROR
    return EXIT_FINDINGS if result.findings else EXIT_CLEAN


def cmd_rule(args: argparse.Namespace) -> int:
    rules = registry.all_rules()
    if args.all or not args.code:
        for code, rule in rules.items():
            state = "" if rule.default_enabled else " (off by default)"
            print(f"{code}  {rule.name:<38} {rule.summary()}{state}")
        return EXIT_CLEAN
    rule = rules.get(args.code.upper())
    if rule is None:
        print(f"mxlint: error: unknown rule code `{args.code}`", file=sys.stderr)
        return EXIT_ERROR
    sys.stdout.write(rule.documentation())
    return EXIT_CLEAN


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version"):
        argv.insert(0, "check")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_ERROR
    try:
        if args.command == "check":
            return cmd_check(args)
        return cmd_rule(args)
    except KeyboardInterrupt:
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
