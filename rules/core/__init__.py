"""MXL0xx: what the engine itself reports about a file: it does not parse, a rule failed on
it, it cannot be read, or a `# noqa` directive suppresses nothing.

One file per rule; these rules have no checker: the engine (`mxlint/engine.py`,
`mxlint/sources.py`, `mxlint/suppressions.py`) reports them.
"""
