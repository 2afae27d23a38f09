"""Rules, findings and fixes: the data every part of mxlint exchanges.

A *rule* is one class that carries everything about one code: its name, message, documentation
(Ruff's layout) and the valid/invalid examples that double as its tests. A *checker* is the
analysis that reports one or more rules; rules of one family share a checker so that, e.g., the
hybridization taint analysis runs once per function however many codes it can report.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

Applicability = Literal["safe", "unsafe", "display"]
#: (filename, cell, row, column, code): what tells one finding of a run from another.
FindingKey = tuple[str, "int | None", int, int, str]

CODE_RE = re.compile(r"^MXL\d{3}$")
#: Each rule's page (its `documentation()`), installed with the package: written by
#: `python -m mxlint.docs`, printed by `mxlint rule CODE`, linked from the JSON report.
RULE_PAGES = Path(__file__).resolve().parent / "data" / "rules"


def rule_page(code: str) -> Path:
    return RULE_PAGES / f"{code}.md"


@functools.cache
def rule_url(code: str) -> str | None:
    """A `file://` URI of the rule's installed page (the report's `url`); None for a code
    with no page, or an installation that keeps no files on disk."""
    page = rule_page(code)
    return page.as_uri() if page.is_file() else None


FAMILIES: dict[str, str] = {
    "0": "engine",
    "1": "hybridization",
    "2": "contexts",
    "3": "reproducibility",
    "4": "autograd and memory",
    "5": "versions and environment",
    "6": "sync and timing",
    "7": "lifecycle and AMP",
    "8": "distributed",
    "9": "ONNX",
}
#: The folder of `rules/` that holds each family's rules, one file per rule.
FAMILY_FOLDERS: dict[str, str] = {
    "0": "core",
    "1": "hybridization",
    "2": "contexts",
    "3": "reproducibility",
    "4": "memory",
    "5": "versions",
    "6": "sync",
    "7": "lifecycle",
    "8": "distributed",
    "9": "onnx",
}


@dataclass(frozen=True)
class Location:
    """A place in a file, as Ruff's JSON gives it."""

    row: int  # 1-based
    column: int  # 1-based, as in Ruff's JSON


@dataclass(frozen=True)
class Edit:
    """Replace the text between two locations with `content`."""

    content: str
    location: Location
    end_location: Location
    #: Notebook cell of the edit (rows are then relative to it); None in other files.
    cell: int | None = None


@dataclass(frozen=True)
class Fix:
    """The edits that resolve a finding, and whether applying them is safe."""

    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]


@dataclass
class Finding:
    """One reported problem. Rows and columns are 1-based (Ruff's JSON convention)."""

    code: str
    message: str
    filename: str
    location: Location
    end_location: Location
    fix: Fix | None = None
    #: The enclosing class/function (`Net.hybrid_forward`), for --verify and reports.
    symbol: str | None = None
    #: Rule-specific facts for the verify stage (e.g. the class a finding belongs to).
    data: dict[str, object] = field(default_factory=dict)
    #: Notebook cell (1-based) when the file is a notebook.
    cell: int | None = None
    #: The verdict of `--verify` on this finding (its JSON object), None when verify did not run.
    verification: dict[str, Any] | None = None

    @property
    def url(self) -> str | None:
        return rule_url(self.code)

    def key(self) -> FindingKey:
        """The finding's identity within a run: the engine reports one finding per code and
        place, so a verdict or any other fact about a finding can be keyed by it."""
        return (self.filename, self.cell, self.location.row, self.location.column, self.code)

    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (self.filename, self.cell or 0, self.location.row, self.location.column, self.code)


def applicable(finding: Finding, unsafe: bool) -> bool:
    """Whether `--fix` (with `--unsafe-fixes` when `unsafe`) applies the finding's fix."""
    fix = finding.fix
    if fix is None or not fix.edits:
        return False
    return fix.applicability == "safe" or (unsafe and fix.applicability == "unsafe")


#: The error text a device-context failure shows (parameters or data on another device).
CONTEXT_ERROR = r"context|not initialized on|same device|ctx"


@dataclass(frozen=True)
class Runtime:
    """How `mxlint --verify` proves a finding of a rule on real MXNet.

    `check` names the experiment: "hybrid" runs the flagged HybridBlock imperatively,
    hybridized, with static allocation and exported, and compares; "context" runs the code on a
    device; "seed" runs the entry script twice unseeded and twice seeded; "memory" runs it
    watching memory and the recorded graph; "raise" runs it expecting an exception; "onnx"
    builds the block, exports it and converts the files with `mx.onnx.export_model`; "amp"
    runs it watching which networks had a cached graph when `amp.init()` ran; "underflow" runs
    it reading the gradients of its first backward passes under AMP, for the values float16
    makes zero; "static" runs
    nothing (`reason` says why the runtime cannot show the problem); "dist" runs it as the two
    workers of a local parameter-server job (a scheduler and a server on 127.0.0.1), or, for a
    launch file's finding, starts the job's processes as the files would, with a probe program
    in place of their own; "sync" counts the synchronisations of each training step and times
    the loop before and after the rewrite; "profiler" watches MXNet's profiler and what it
    holds; "engine" runs the script on the engine and settings it writes into its environment,
    and without them; "timing" runs it on the asynchronous engine and measures the work still
    queued when the flagged line reads the clock.
    """

    check: Literal[
        "hybrid",
        "context",
        "seed",
        "memory",
        "raise",
        "onnx",
        "amp",
        "underflow",
        "static",
        "dist",
        "sync",
        "profiler",
        "engine",
        "timing",
    ]
    #: The predicted failure is an exception raised at (or after) the flagged line, whose
    #: `Type: message` text matches `error` (any exception when None).
    loud: bool = False
    error: str | None = None
    #: Inside a class, proven by running that block's forward (else by the entry script).
    in_block: bool = False
    #: A "memory" check also sampled at each batch while no training step has run (an
    #: evaluation loop has batches and no steps).
    per_batch: bool = False
    #: For "static": why no experiment can show the problem (the verdict's reason).
    reason: str | None = None
    #: A "hybrid" check's silent failure shows besides differing outputs as: "state" (the
    #: block's Python-side state differs between imperative and hybridized runs), "mode" (a
    #: training-mode read is frozen by the trace), "structure" (the forward's output
    #: containers differ), "silent" (a one-output Symbol indexed, counted or iterated as rows).
    shows: tuple[str, ...] = ()
    #: A "seed" check: the flagged line draws the randomness (or builds what draws it, a
    #: shuffling loader), so its draws alone are left random to show it matters by itself.
    #: False: the line is a seed call that comes too late; the generator as a whole is tested.
    draws: bool = True


@dataclass(frozen=True)
class Example:
    """An invalid example: the code, the 1-based line the finding is on, and the fixed code."""

    code: str
    line: int | None = None
    expected_fix: str | None = None
    #: Target MXNet line the example is written for ("1" or "2").
    mxnet: str = "1"
    #: Extra files of the same project (module name -> source) for cross-file examples.
    project: tuple[tuple[str, str], ...] = ()
    #: The file name the example is checked as (entry-script rules care).
    filename: str = "example.py"


@dataclass(frozen=True)
class Valid:
    """A rule's example that must stay silent (its docs and generated tests use it)."""

    code: str
    mxnet: str = "1"
    project: tuple[tuple[str, str], ...] = ()
    filename: str = "example.py"


class Rule:
    """Metadata for one code. Subclasses are registered with `@register`."""

    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, stable
    message: ClassVar[str]  # what is wrong and what to do; may hold {placeholders}
    #: Documentation in Ruff's layout.
    what: ClassVar[str]
    why: ClassVar[str]
    example: ClassVar[str]
    use_instead: ClassVar[str]
    fix_safety: ClassVar[str] = "This rule has no automatic fix."
    fixable: ClassVar[Applicability | None] = None
    #: Off unless selected (noisy or advisory rules).
    default_enabled: ClassVar[bool] = True
    #: Which MXNet line the rule applies to: "1", "2" or "any".
    mxnet: ClassVar[str] = "any"
    #: "python" rules read .py files; other kinds name the file types they read.
    kind: ClassVar[str] = "python"
    #: Codes whose finding at the same place this rule's finding replaces: a more precise
    #: diagnosis of the same problem, with advice that fits it better.
    supersedes: ClassVar[tuple[str, ...]] = ()
    #: How `--verify` proves a finding of this rule; None: static only.
    runtime: ClassVar[Runtime | None] = None
    valid: ClassVar[tuple[Valid | str, ...]] = ()
    invalid: ClassVar[tuple[Example | str, ...]] = ()

    @classmethod
    def family(cls) -> str:
        return FAMILIES[cls.code[3]]

    @classmethod
    def summary(cls) -> str:
        """The first sentence of `what`, on one line."""
        text = " ".join(_dedent(cls.what).split())
        head, sep, _ = text.partition(". ")
        return head + "." if sep else text

    @classmethod
    def format(cls, **kwargs: object) -> str:
        return cls.message.format(**kwargs) if kwargs else cls.message

    @classmethod
    def source_file(cls) -> str:
        """The file that defines the rule, as the repository lays it out (`rules/` installs as
        `mxlint.rules`): where a reader of the rule's page goes to change it."""
        parts = cls.__module__.split(".")
        if parts[:2] == ["mxlint", "rules"]:
            parts = parts[1:]
        return "/".join(parts) + ".py"

    @classmethod
    def documentation(cls) -> str:
        """The rule's page (Markdown): `mxlint rule CODE`, the installed page, SARIF's help."""
        parts = [
            f"# {cls.code} {cls.name}",
            "",
            f"Family: {cls.family()} · Default: {'on' if cls.default_enabled else 'off'}"
            + (f" · MXNet {cls.mxnet}.x only" if cls.mxnet != "any" else "")
            + (f" · Fix: {cls.fixable}" if cls.fixable else ""),
            "",
            f"Defined in `{cls.source_file()}`, with its examples (run by "
            "`tests/test_rule_examples.py`); its findings on the fixtures and on its examples are pinned in "
            f"`tests/snapshots/{cls.code}.txt`.",
            "",
            "## What it does",
            _dedent(cls.what),
            "",
            "## Why is this bad?",
            _dedent(cls.why),
            "",
            "## Example",
            "```python" if cls.kind == "python" else "```",
            _dedent(cls.example),
            "```",
            "",
            "## Use instead",
            "```python" if cls.kind == "python" else "```",
            _dedent(cls.use_instead),
            "```",
            "",
            "## Fix safety",
            _dedent(cls.fix_safety),
            "",
        ]
        return "\n".join(parts)


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip("\n")
