"""The `--verify` options of `mxlint check`, the verdict table, and the `doctor` subcommand's
parser. Kept here so `mxlint/cli.py` needs only a few calls."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mxlint.rule import Finding, FindingKey
from mxlint.settings import Settings
from mxlint.verify import SANDBOXES

if TYPE_CHECKING:
    from mxlint.verify.isolation import Sandbox
    from mxlint.verify.model import Verdict
    from mxlint.verify.runner import VerifyResult


def _shard(value: str) -> tuple[int, int]:
    try:
        index, total = (int(x) for x in value.split("/", 1))
    except ValueError:
        raise argparse.ArgumentTypeError("expected i/n, e.g. 1/4") from None
    if total < 1 or not 1 <= index <= total:
        raise argparse.ArgumentTypeError(f"shard {value}: need 1 <= i <= n")
    return index, total


def add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "verify (run each finding on real MXNet)",
        "--verify EXECUTES THE PROJECT'S CODE (the flagged files and the scripts that import "
        "them), each job in a sandbox: bubblewrap where it works (no network, files "
        "read-only but a scratch directory, home hidden), else user and network namespaces, "
        "else none with a warning; the environment is scrubbed of credentials.",
    )
    group.add_argument(
        "--verify",
        action="store_true",
        help="prove each finding by running the project's code on MXNet, in a sandboxed "
        "subprocess per job",
    )
    group.add_argument(
        "--verify-sandbox",
        choices=SANDBOXES,
        default=None,
        help="the sandbox of the verify jobs (default auto: bubblewrap, else unshare, else "
        "none with a warning)",
    )
    group.add_argument(
        "--report",
        type=Path,
        default=None,
        metavar="FILE.html",
        help="with --verify, write an HTML report to this file",
    )
    group.add_argument(
        "--shard",
        type=_shard,
        default=(1, 1),
        metavar="I/N",
        help="with --verify, run only the I-th of N parts (CI matrices)",
    )
    group.add_argument(
        "--verify-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="per-job timeout (default 60)",
    )
    group.add_argument(
        "--verify-jobs",
        type=int,
        default=None,
        metavar="N",
        help="parallel jobs (default: one per GPU, else one per core)",
    )
    group.add_argument(
        "--no-benchmark",
        action="store_true",
        help="with --verify, verify rewrites but do not time them",
    )


def add_doctor_parser(sub: Any) -> None:
    doctor = sub.add_parser("doctor", help="check the MXNet environment --verify runs in")
    doctor.add_argument("--output-format", choices=("text", "json"), default="text")


def options_from(args: argparse.Namespace, settings: Settings) -> Any:
    from mxlint.verify.runner import VerifyOptions

    table = dict(settings.verify or {})
    options = VerifyOptions(
        config=table, shard=args.shard, bench=not args.no_benchmark, progress=sys.stderr.isatty()
    )
    timeout = args.verify_timeout or table.get("timeout")
    if timeout:
        options.timeout = float(timeout)
    if args.verify_jobs or table.get("jobs"):
        options.jobs = int(args.verify_jobs or table["jobs"])
    if table.get("steps"):
        options.steps = int(table["steps"])
    if table.get("memory-mb"):
        options.memory_mb = int(table["memory-mb"])
    if table.get("benchmark-pairs"):
        options.bench_pairs = int(table["benchmark-pairs"])
    options.sandbox = str(args.verify_sandbox or table.get("sandbox") or "auto")
    options.pass_env = tuple(str(x) for x in table.get("pass-env", []))
    options.readable = tuple(_readable(table.get("readable", []), args.paths))
    return options


def _readable(configured: Sequence[str], paths: Sequence[Path]) -> list[str]:
    """What the jobs may read besides Python and the flagged files: the configured paths and
    the paths checked (never the home directory itself or a directory above it)."""
    home = Path.home().resolve()
    out = [str(Path(p).expanduser().resolve()) for p in configured]
    for p in [*paths, Path.cwd()]:
        real = Path(p).resolve()
        if real != home and real not in home.parents:
            out.append(str(real))
    return out


def usage_error(args: argparse.Namespace) -> str:
    """Why these verify options cannot run ('' when they can)."""
    verify = getattr(args, "verify", False)
    if getattr(args, "report", None) is not None and not verify:
        return "--report writes the verify report: it needs --verify"
    if getattr(args, "verify_sandbox", None) and not verify:
        return "--verify-sandbox needs --verify"
    return ""


def announce(sandbox: Sandbox, options: Any) -> list[str]:
    """The first lines of a verify run: that it executes the project's code, and where."""
    from mxlint.verify import limits

    lines = [
        "mxlint: --verify executes the project's code (the flagged files and the scripts that "
        "import them) on MXNet",
        f"mxlint: sandbox: {sandbox.describe()}",
        f"mxlint: limits per job: {options.timeout:g} s; {limits.describe(options.memory_mb)}",
    ]
    if sandbox.warning():
        lines.insert(0, f"mxlint: warning: {sandbox.warning()}")
    return lines


def run_verify(
    args: argparse.Namespace, findings: Sequence[Finding], paths: Sequence[Path], settings: Settings
) -> str:
    """Attach a `verify` object to each finding of this shard; return the verdict table.
    Raises `SandboxUnavailable` when the sandbox asked for does not work here."""
    from mxlint.sources import discover
    from mxlint.verify.escapes import describe
    from mxlint.verify.isolation import detect
    from mxlint.verify.runner import progress_bar, verify

    options = options_from(args, settings)
    sandbox = detect(options.sandbox)
    for line in announce(sandbox, options):
        print(line, file=sys.stderr)
    files, _ = discover(list(paths), settings)
    files = [f for f in files if f.suffix != ".ipynb"]  # entry candidates: Python files
    result = verify(findings, files, options, progress_bar() if options.progress else None)
    for finding in findings:
        verdict = result.verdicts.get(finding.key())
        if verdict is not None:
            finding.verification = verdict.to_json()
            escaped = result.escapes.get(verdict.job, [])
            if escaped:
                finding.verification["sandbox"] = [describe(r) for r in escaped]
    if args.report is not None:
        from mxlint.verify.report import write_report

        path = write_report(args.report, findings, result)
        print(f"mxlint: verify report written to {path}", file=sys.stderr)
    return table(findings, result.verdicts, result)


def table(
    findings: Sequence[Finding],
    verdicts: Mapping[FindingKey, Verdict],
    result: VerifyResult | None = None,
) -> str:
    """The verdicts under the findings of the text report, with the sandbox they ran in and
    what it blocked."""
    from mxlint.output import where
    from mxlint.verify.escapes import describe

    rows = []
    for f in findings:
        v = verdicts.get(f.key())
        if v is None:
            continue
        detail = v.evidence or v.reason
        rewrite = ""
        if v.rewrite is not None:
            state = {True: "verified", False: "REJECTED", None: "not run"}[v.rewrite.verified]
            rewrite = f"\n      rewrite {state}"
            if v.rewrite.ratio is not None:
                low, high = v.rewrite.spread or (v.rewrite.ratio, v.rewrite.ratio)
                rewrite += f", step-time ratio {v.rewrite.ratio:.2f}x [{low:.2f}, {high:.2f}]" + (
                    " (within noise)" if v.rewrite.within_noise else ""
                )
            elif v.rewrite.evidence and not v.rewrite.verified:
                rewrite += f": {v.rewrite.evidence}"
        escaped = result.escapes.get(v.job, []) if result is not None else []
        sandbox = "".join(f"\n      sandbox {describe(r)}" for r in escaped)
        how = f"\n      how: {v.reached}" if v.reached else ""
        if v.standins:
            how += f"\n      stand-ins: {'; '.join(v.standins)}"
        rows.append(
            f"{f.filename}:{where(f)}: {f.code} {v.verdict.upper()}\n      {detail}{rewrite}{how}"
            + sandbox
        )
    if not rows:
        return ""
    counts = Counter(v.verdict for v in verdicts.values())
    summary = ", ".join(f"{counts.get(k, 0)} {k}" for k in ("confirmed", "refuted", "inconclusive"))
    head = "\nVerify:\n"
    if result is not None:
        warn = " WARNING" if result.sandbox.warning() else ""
        head = f"\nVerify (ran the project's code; sandbox{warn}: {result.sandbox.describe()}):\n"
    return head + "\n".join(rows) + f"\nVerify summary: {summary}.\n"
