"""Benchmark a verified rewrite the way `mxlint --verify` does, with more pairs.

The case: `fixtures/verify/hybrid/bad/rnn.py`, a recurrent block that loops over time in Python
(imperative only, MXL104), rewritten to a static unroll (`F.split` over the time axis) and run
hybridized with static_alloc/static_shape. The script verifies the rewrite (outputs and
gradients equal to the original's imperative run) and then prints the median of paired
original/rewrite step-time ratios on process CPU time, pooled from two processes, with its
spread. Usage: python benchmarks/verify_bench.py [--pairs N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mxlint.rule import Edit, Finding, Fix, Location
from mxlint.verify.runner import VerifyOptions, verify

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "fixtures" / "verify" / "hybrid" / "bad" / "rnn.py"
LOOP = "for xt in x:"
UNROLLED = "for xt in F.split(x, num_outputs=self.steps, axis=0, squeeze_axis=True):"


def finding() -> Finding:
    """The MXL104 finding on the Python time loop, with the static-unroll rewrite as its fix."""
    for row, line in enumerate(CASE.read_text(encoding="utf-8").splitlines(), 1):
        col = line.find(LOOP)
        if col >= 0:
            start, end = Location(row, col + 1), Location(row, col + 1 + len(LOOP))
            fix = Fix("unsafe", "unroll the time loop statically", (Edit(UNROLLED, start, end),))
            return Finding(
                "MXL104",
                "iterating over a tensor in hybridized code",
                str(CASE),
                start,
                end,
                fix=fix,
                symbol="LoopRNN.hybrid_forward",
            )
    raise SystemExit(f"{CASE}: the time loop is missing")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100, help="paired steps per process")
    args = parser.parse_args(argv)
    options = VerifyOptions(
        bench_pairs=args.pairs,
        timeout=600,
        jobs=1,
        config={"blocks": {"LoopRNN": {"input-shapes": [[8, 4, 32]]}}},
    )
    result = verify([finding()], [CASE], options)
    verdict = result.verdicts[0]
    print(f"verdict: {verdict.verdict}: {verdict.evidence or verdict.reason}")
    rewrite = verdict.rewrite
    if rewrite is None or not rewrite.verified or rewrite.ratio is None:
        print(f"rewrite not benchmarked: {rewrite.evidence if rewrite else 'no rewrite'}")
        return 1
    assert rewrite.spread is not None
    print(f"rewrite: {rewrite.evidence}")
    print(
        f"median paired ratio (CPU time, original/rewrite): {rewrite.ratio:.3f} "
        f"spread [{rewrite.spread[0]:.3f}, {rewrite.spread[1]:.3f}]"
        f"{' (within noise)' if rewrite.within_noise else ''}; wall-time ratio "
        f"{rewrite.wall_ratio}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
