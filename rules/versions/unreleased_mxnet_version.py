"""MXL504 unreleased-mxnet-version: checks for an MXNet variant pinned to a version that was never
released for that variant, e.g.

The function after the class decides and words its findings for one dependency set
(`rules/versions/_dependency_sets.py` runs it); its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_versions.py` and
`tests/snapshots/MXL504.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mxlint.rule import Example, Rule, Valid

if TYPE_CHECKING:
    pass
from mxlint.rules.versions._docs import _NOT_FLAKE8

if TYPE_CHECKING:
    from mxlint.requirements_parsing import Requirement
    from mxlint.rules.versions._releases import Hit


class UnreleasedMxnetVersion(Rule):
    code = "MXL504"
    name = "unreleased-mxnet-version"
    message = "`{text}`: no `{name}` release matches; released: {released}"
    kind = "requirements"
    what = (
        """
        Checks for an MXNet variant pinned to a version that was never released for that
        variant, e.g. `mxnet-cu100==1.9.1` (CUDA 10.0 builds stop at 1.9.0) or
        `mxnet-cu112==1.8.0` (only `1.8.0.post0` exists). The release tables are PyPI's, taken
        once (MXNet is retired, so they are final). Sets that install from another index or
        `--find-links` are not judged.
    """
        + _NOT_FLAKE8
    )
    why = """
        `pip install` fails with "No matching distribution found" — often only in CI or in a
        Docker build, long after the pin was written.
    """
    example = """
        # requirements.txt
        mxnet-cu100==1.9.1
    """
    use_instead = """
        # requirements.txt
        mxnet-cu100==1.9.0
    """
    invalid = (
        Example("mxnet-cu100==1.9.1\nnumpy<1.24\n", line=1, filename="requirements.txt"),
        Example("mxnet-cu112==1.8.0\nnumpy<1.24\n", line=1, filename="constraints.txt"),
        Example(
            "FROM nvidia/cuda:9.2-cudnn7-runtime\nRUN pip install mxnet-cu92==1.8.0\n",
            line=2,
            filename="Dockerfile",
        ),
    )
    valid = (
        Valid("mxnet-cu100==1.9.0\nnumpy<1.24\n", filename="requirements.txt"),
        Valid("mxnet-cu112==1.8.0.post0\nnumpy<1.24\n", filename="requirements.txt"),
        Valid(
            "--find-links https://example.com/wheels/\nmxnet-cu100==1.9.1\nnumpy<1.24\n",
            filename="requirements.txt",
        ),
    )


def check(name: str, records: list[Requirement]) -> list[Hit]:
    from mxlint.rules.versions._releases import (  # packaging: dependency files only
        final_releases,
        releases,
    )

    known = releases().variants.get(name)
    if known is None:
        return []
    hits: list[Hit] = []
    for r in records:
        spec = r.specifier_set()
        if r.direct or r.conda or spec is None or not str(spec):
            continue
        if not any(spec.contains(v, prereleases=True) for v in known):
            shown = ", ".join(str(v) for v in final_releases(known)[:6])
            more = ", ..." if len(final_releases(known)) > 6 else ""
            hits.append(
                (
                    r,
                    UnreleasedMxnetVersion,
                    UnreleasedMxnetVersion.format(text=r.text, name=name, released=shown + more),
                )
            )
    return hits
