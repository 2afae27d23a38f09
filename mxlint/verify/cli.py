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

if TYPE_CHECKING:
    from mxlint.verify.model import Verdict


def _shard(value: str) -> tuple[int, int]:
    try:
        index, total = (int(x) for x in value.split("/", 1))
    except ValueError:
        raise argparse.ArgumentTypeError("expected i/n, e.g. 1/4") from None
    if total < 1 or not 1 <= index <= total:
        raise argparse.ArgumentTypeError(f"shard {value}: need 1 <= i <= n")
    return index, total


def add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("verify (run each finding on real MXNet)")
    group.add_argument(
        "--verify", action="store_true", help="prove each finding in an isolated MXNet subprocess"
    )
    group.add_argument(
        "--report",
        type=Path,
        default=None,
        metavar="DIR",
        help="with --verify, write an HTML report to DIR",
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
    return options


def run_verify(
    args: argparse.Namespace, findings: Sequence[Finding], paths: Sequence[Path], settings: Settings
) -> str:
    """Attach a `verify` object to each finding of this shard; return the verdict table."""
    from mxlint.sources import discover
    from mxlint.verify.runner import progress_bar, verify

    options = options_from(args, settings)
    files, _ = discover(list(paths), settings)
    files = [f for f in files if f.suffix != ".ipynb"]  # entry candidates: Python files
    result = verify(findings, files, options, progress_bar() if options.progress else None)
    for finding in findings:
        verdict = result.verdicts.get(finding.key())
        if verdict is not None:
            finding.verification = verdict.to_json()
    if args.report is not None:
        from mxlint.verify.report import write_report

        path = write_report(args.report, findings, result.verdicts, result.gpus)
        print(f"mxlint: verify report written to {path}", file=sys.stderr)
    return table(findings, result.verdicts)


def table(findings: Sequence[Finding], verdicts: Mapping[FindingKey, Verdict]) -> str:
    from mxlint.output import where

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
        rows.append(
            f"{f.filename}:{where(f)}: {f.code} {v.verdict.upper()}\n      {detail}{rewrite}"
        )
    if not rows:
        return ""
    counts = Counter(v.verdict for v in verdicts.values())
    summary = ", ".join(f"{counts.get(k, 0)} {k}" for k in ("confirmed", "refuted", "inconclusive"))
    return "\nVerify:\n" + "\n".join(rows) + f"\nVerify summary: {summary}.\n"
