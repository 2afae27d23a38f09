from mxlint.launch import entry

raise SystemExit(entry())
