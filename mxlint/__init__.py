"""mxlint: a static analyzer for Apache MXNet training code."""

# The one source of mxlint's version: pyproject.toml reads it from here when the package is built
# ([tool.setuptools.dynamic], statically, without importing mxlint), so the installed metadata,
# `mxlint --version`, SARIF, the flake8 plugin and the cache keys all agree.
__version__ = "0.1.0"
