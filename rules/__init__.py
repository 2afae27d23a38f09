"""Rule families, one module each; installed as `mxlint.rules`."""
