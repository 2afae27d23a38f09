"""mxlint: a static analyzer for Apache MXNet training code."""

__version__ = "0.1.0"
