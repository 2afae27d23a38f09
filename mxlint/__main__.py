from mxlint.cli import entry

raise SystemExit(entry())
