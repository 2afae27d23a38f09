"""mxlint against flake8 and a bare libcst parse loop, on the same files, in one run.

    python benchmarks/speed.py --corpus path/to/repo [--corpus another/repo]
    python benchmarks/speed.py --generate 400        # a synthetic MXNet-style corpus

Every tool runs as a whole process (start-up and imports included, as users run them), on the
same list of `.py` files, in `--repeat` rounds that each run every command once (a short one,
on one file or starting alone, `--short-repeat` times side by side with the command it is
compared to, the round taking the median of its runs); the best wall time of each is shown, and
each time ratio is the median over rounds of the ratio within a round. Every tool runs from compiled bytecode, as it does once installed (pip compiles it; the
children run with `PYTHONPYCACHEPREFIX` in a scratch directory, even where the environment sets
`PYTHONDONTWRITEBYTECODE`), after one untimed warm-up run. Peak memory is sampled from /proc
over a process and its workers: the sum of resident memory (RSS, which counts pages forked
workers share with their parent once per process) and the sum of proportional memory (PSS,
shared pages divided among the processes that share them). Prints a table and the ratios the
project tracks:

- cold `mxlint check` (-j = cores, empty cache) / `flake8 -j cores` (default plugins)
- cold `mxlint check -j1` / a bare single-process `libcst.parse_module` loop (engine overhead)
- warm `mxlint check` (nothing changed) / cold `mxlint check`
- `mxlint check FILE` / `flake8 FILE` on one file, whole processes (the largest and a
  median-size file among those mxlint parses: with a sign of MXNet, not another framework's
  program), and
  what starting alone takes: `import libcst`, and `mxlint --version`, which loads libcst and the
  rules the way every run does (with generated dataclass code cached, see
  `mxlint/codegen_cache.py`: the untimed warm-up fills that cache as it fills bytecode caches)
- peak memory of `mxlint check` / `flake8 -j cores` (RSS and PSS sums)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mxlint.engine import needs_parse
from mxlint.sources import decode_source

PARSE_LOOP = r"""
import io, sys, tokenize
import libcst
for line in open(sys.argv[1], encoding="utf-8"):
    path = line.rstrip("\n")
    try:
        data = open(path, "rb").read()
        enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        libcst.parse_module(data.decode(enc).lstrip("\ufeff"))
    except Exception:
        pass
"""

# flake8 loads every installed plugin, mxlint's included; "default plugins" means without it.
FLAKE8_DEFAULT = r"""
import importlib.metadata as md, sys
_all = md.distributions
md.distributions = lambda **kw: (d for d in _all(**kw) if d.metadata["Name"] != "mxlint")
from flake8.main.cli import main
sys.exit(main())
"""


#: Short commands, each run side by side with the one it is compared to (see `--short-repeat`).
SHORT_PAIRS = (("one", "flake8one"), ("typical", "flake8typical"), ("import", "startup"))

#: The children's environment (see the module docstring); the scratch directory is set in main.
CHILD_ENV: dict[str, str] = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def parsed_by_mxlint(content: bytes) -> bool:
    try:
        return needs_parse(decode_source(content))
    except (UnicodeDecodeError, SyntaxError, LookupError):
        return False


@dataclass
class Measure:
    name: str
    seconds: float
    peak_mb: float
    peak_pss_mb: float
    rc: int


def _tree_memory_kb(root: int) -> tuple[int, int]:
    """(RSS, PSS) of `root` and its descendants, from /proc ((0, 0) where /proc is missing)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0, 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as fh:
                ppid = kb = 0
                for line in fh:
                    if line.startswith("PPid:"):
                        ppid = int(line.split()[1])
                    elif line.startswith("VmRSS:"):
                        kb = int(line.split()[1])
        except (OSError, ValueError):
            continue
        parents[int(entry)] = ppid
        rss[int(entry)] = kb
    total_rss = total_pss = 0
    for pid, kb in rss.items():
        p = pid
        while p and p != root:
            p = parents.get(p, 0)
        if p == root:
            total_rss += kb
            total_pss += _pss_kb(pid)
    return total_rss, total_pss


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def run(name: str, cmd: list[str], cwd: Path) -> Measure:
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=CHILD_ENV
    )
    peak = peak_pss = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak, peak_pss
        while not done.is_set():
            rss, pss = _tree_memory_kb(proc.pid)
            peak, peak_pss = max(peak, rss), max(peak_pss, pss)
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    if proc.returncode not in (0, 1):
        sys.stderr.write(f"{name}: exit {proc.returncode}\n{err.decode(errors='replace')[-2000:]}")
    return Measure(name, seconds, peak / 1024, peak_pss / 1024, proc.returncode)


# -- a synthetic corpus ----------------------------------------------------------------------

_BLOCK = '''
class Block{i}(nn.HybridBlock):
    """A residual unit."""

    def __init__(self, channels, use_bias={bias}, **kwargs):
        super().__init__(**kwargs)
        self.use_bias = use_bias
        with self.name_scope():
            self.conv = nn.Conv2D(channels, 3, padding=1, use_bias=use_bias)
            self.bn = nn.BatchNorm()
            self.body = nn.HybridSequential()
            for _ in range({depth}):
                self.body.add(nn.Dense(channels, activation="relu"))

    def hybrid_forward(self, F, x):
        y = self.bn(self.conv(x))
        if self.use_bias:
            y = F.relu(y)
        {extra}
        return F.where(y > 0, y, F.zeros_like(y)) + self.body(x)
'''

_EXTRAS = [
    "",
    "y = y * 2",
    "if y.sum() > 0:\n            y = y / 2",
    "n = x.shape[0]",
    "print(y)",
    "z = y.asnumpy()",
]

_TRAIN = """

def train_{i}(net, loader, epochs, ctx):
    trainer = gluon.Trainer(net.collect_params(), "sgd", {{"learning_rate": 0.1}})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    metric = mx.metric.Accuracy()
    for epoch in range(epochs):
        total = 0.0
        for data, label in loader:
            data = data.as_in_context(ctx)
            label = label.as_in_context(ctx)
            with autograd.record():
                out = net(data)
                loss = loss_fn(out, label)
            loss.backward()
            trainer.step(data.shape[0])
            metric.update([label], [out])
            total += loss.mean().asscalar()
        name, acc = metric.get()
        print("epoch %d %s=%.3f loss=%.3f" % (epoch, name, acc, total))
"""


def generate(root: Path, files: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    for n in range(files):
        package = root / f"pkg{n // 50}"
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").touch()
        parts = [
            "import mxnet as mx\nfrom mxnet import autograd, gluon, nd\n"
            "from mxnet.gluon import nn\n"
        ]
        for i in range(rng.randint(3, 12)):
            parts.append(
                _BLOCK.format(
                    i=i,
                    bias=rng.choice([True, False]),
                    depth=rng.randint(1, 4),
                    extra=rng.choice(_EXTRAS),
                )
            )
            if rng.random() < 0.4:
                parts.append(_TRAIN.format(i=i))
        (package / f"module_{n}.py").write_text("".join(parts), encoding="utf-8")


# -- the run ---------------------------------------------------------------------------------


def python_files(roots: list[Path]) -> list[Path]:
    skip = {".git", "__pycache__", ".mxlint_cache", "build", "dist", ".tox", ".venv"}
    out: list[Path] = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in skip)
            out.extend(Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py"))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        action="append",
        default=[],
        help="a directory of Python code (repeatable)",
    )
    parser.add_argument(
        "--generate",
        type=int,
        default=0,
        metavar="N",
        help="also generate N synthetic MXNet-style modules",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else (os.cpu_count() or 1),
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--short-repeat",
        type=int,
        default=9,
        help="runs of each short command (one file, start-up) per round, side by side",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="mxlint-bench-"))
    try:
        roots = [p.resolve() for p in args.corpus]
        if args.generate:
            generate(work / "generated", args.generate)
            roots.append(work / "generated")
        if not roots:
            parser.error("give --corpus DIR and/or --generate N")
        files = python_files(roots)
        if not files:
            parser.error("no .py files in the corpus")
        listing = work / "files.txt"
        listing.write_text("".join(f"{p}\n" for p in files), encoding="utf-8")
        # The one-file runs take files mxlint parses: not one with no sign of MXNet (a
        # generated protocol buffer module is often a repository's largest file), nor another
        # framework's program (`engine.needs_parse`).
        lines, sizes, mxnet_sizes = 0, {}, {}
        for p in files:
            content = p.read_bytes()
            lines += content.count(b"\n")
            sizes[p] = len(content)
            if parsed_by_mxlint(content):
                mxnet_sizes[p] = len(content)
        chosen = mxnet_sizes or sizes
        by_size = sorted(chosen, key=chosen.__getitem__)
        one, typical = by_size[-1], by_size[len(by_size) // 2]
        CHILD_ENV["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        cache = work / "cache"
        py = sys.executable
        mxlint = [
            py,
            "-m",
            "mxlint",
            "check",
            "--isolated",
            "--exit-zero",
            "--statistics",
            "--select",
            "ALL",
            "--cache-dir",
            str(cache),
        ]
        flake8 = [py, "-c", FLAKE8_DEFAULT, "--isolated", "--exit-zero"]
        at_file = [str(p) for p in files]

        def drop_cache() -> None:
            shutil.rmtree(cache, ignore_errors=True)

        print(
            f"corpus: {len(files)} files, {lines} lines; jobs={args.jobs}; best of {args.repeat}",
            flush=True,
        )
        for warm_up in (
            [*mxlint, "--no-cache", str(one)],
            [*flake8, str(one)],
            [py, "-c", "import libcst"],
        ):
            run("warm-up", warm_up, work)  # bytecode compiled, files in the page cache
        primed = False

        def prime() -> None:
            nonlocal primed
            if not primed:
                drop_cache()
                run("prime", [*mxlint, f"-j{args.jobs}", *at_file], work)
                primed = True

        def cold() -> None:
            nonlocal primed
            drop_cache()
            primed = False

        # (key, label, command, what must hold before it runs)
        # The two sides of each long ratio run next to each other (-j1 and the parse loop,
        # flake8 and mxlint -j), so the machine's drift within a round touches both alike.
        plan: list[tuple[str, str, list[str], Callable[[], None] | None]] = [
            ("cold1", "mxlint check -j1, cold cache", [*mxlint, "-j1", *at_file], cold),
            (
                "parse",
                "bare libcst.parse_module loop (1 process)",
                [py, "-c", PARSE_LOOP, str(listing)],
                None,
            ),
            (
                "flake8",
                f"flake8 -j{args.jobs} (default plugins)",
                [*flake8, f"-j{args.jobs}", *at_file],
                None,
            ),
            (
                "cold",
                f"mxlint check -j{args.jobs}, cold cache",
                [*mxlint, f"-j{args.jobs}", *at_file],
                cold,
            ),
            (
                "warm",
                f"mxlint check -j{args.jobs}, warm cache",
                [*mxlint, f"-j{args.jobs}", *at_file],
                prime,
            ),
            (
                "one",
                f"mxlint check ONE FILE, largest ({one.name})",
                [*mxlint, "--no-cache", str(one)],
                None,
            ),
            ("flake8one", f"flake8 ONE FILE, largest ({one.name})", [*flake8, str(one)], None),
            (
                "typical",
                f"mxlint check ONE FILE, median size ({typical.name})",
                [*mxlint, "--no-cache", str(typical)],
                None,
            ),
            (
                "flake8typical",
                f"flake8 ONE FILE, median size ({typical.name})",
                [*flake8, str(typical)],
                None,
            ),
            ("import", "python -c 'import libcst'", [py, "-c", "import libcst"], None),
            (
                "startup",
                "mxlint --version (start-up: libcst, rules)",
                [py, "-m", "mxlint", "--version"],
                None,
            ),
        ]
        # Rounds, each running every command once: a machine whose speed drifts over minutes
        # (shared hosts) slows every command of a round alike, so the ratios hold.
        m: dict[str, Measure] = {}
        #: Wall times per round, for ratios of runs made side by side.
        rounds: dict[str, list[float]] = {key: [] for key, _, _, _ in plan}
        # A short command (a tenth of a second) varies by a tenth from run to run: within a
        # round it runs --short-repeat times, alternating with the command it is compared to,
        # and the round keeps the median of its runs.
        short = {key for pair in SHORT_PAIRS for key in pair}
        steps: list[list[str]] = []
        for key, _, _, _ in plan:
            if key not in short:
                steps.append([key])
            elif not any(key in step for step in steps):
                steps.append(next(list(pair) for pair in SHORT_PAIRS if key in pair))
        commands = {key: (label, cmd, before) for key, label, cmd, before in plan}
        for _ in range(args.repeat):
            for step in steps:
                times: dict[str, list[float]] = {key: [] for key in step}
                for _ in range(max(1, args.short_repeat) if len(step) > 1 else 1):
                    for key in step:
                        label, cmd, before = commands[key]
                        if before is not None:
                            before()
                        got = run(label, cmd, work)
                        times[key].append(got.seconds)
                        kept = m.get(key)
                        if kept is not None:  # the fastest run, with the largest peaks of any
                            got.peak_mb = max(got.peak_mb, kept.peak_mb)
                            got.peak_pss_mb = max(got.peak_pss_mb, kept.peak_pss_mb)
                            if kept.seconds <= got.seconds:
                                got.name, got.seconds, got.rc = kept.name, kept.seconds, kept.rc
                        m[key] = got
                for key, seconds in times.items():
                    rounds[key].append(statistics.median(seconds))

        shown = ["parse", "flake8", "cold", "cold1"]  # the table's order, not the run's
        m = {k: m[k] for k in [*shown, *(k for k in m if k not in shown)]}
        width = max(len(x.name) for x in m.values())
        print(f"\n{'run':<{width}}  {'wall s':>8}  {'RSS MB':>8}  {'PSS MB':>8}")
        for x in m.values():
            print(f"{x.name:<{width}}  {x.seconds:8.2f}  {x.peak_mb:8.0f}  {x.peak_pss_mb:8.0f}")

        def ratio(a: str, b: str) -> float:
            """The median over rounds of a/b within a round (robust to a drifting machine)."""
            return statistics.median(x / y for x, y in zip(rounds[a], rounds[b]))

        ratios = {
            "cold / flake8 -j (target <= 1.0)": ratio("cold", "flake8"),
            "cold -j1 / bare parse loop (target <= 1.5)": ratio("cold1", "parse"),
            "cold -j / bare parse loop": ratio("cold", "parse"),
            "warm / cold (target <= 0.1)": ratio("warm", "cold"),
            "one file / flake8 one file (target <= 1.0)": ratio("one", "flake8one"),
            "one median-size file / flake8 on it": ratio("typical", "flake8typical"),
            "import libcst alone / flake8 one file": ratio("import", "flake8one"),
            "mxlint start-up alone / flake8 median-size file": ratio("startup", "flake8typical"),
            "peak memory, RSS sum / flake8 -j (target <= 2.0)": m["cold"].peak_mb
            / max(m["flake8"].peak_mb, 1e-9),
            "peak memory, PSS sum / flake8 -j (target <= 2.0)": m["cold"].peak_pss_mb
            / max(m["flake8"].peak_pss_mb, 1e-9),
        }
        print()
        for label, value in ratios.items():
            print(f"{label:<52} {value:6.2f}")
        if args.json:
            args.json.write_text(
                json.dumps(
                    {
                        "files": len(files),
                        "lines": lines,
                        "jobs": args.jobs,
                        "runs": {k: vars(v) for k, v in m.items()},
                        "rounds": rounds,
                        "ratios": ratios,
                    },
                    indent=2,
                )
            )
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
