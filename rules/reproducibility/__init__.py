"""MXL3xx: runs that cannot be repeated because a global generator is never (or too late) seeded.

MXNet 1.x seeds its own generator with a fixed default, so the real sources of run-to-run
variation in a Gluon script are numpy's and Python's global generators: gluon's RandomSampler
(`DataLoader(shuffle=True)`) calls `np.random.shuffle`, mx.image augmenters and some gluon
transforms call `random`, and `mx.random.seed` seeds neither. The analysis is program level: it
follows an entry script (a `__main__` block, a module-level training loop or a configured entry
point) in execution order, into the functions of the same file and, through `finalize`, into
helpers of other files of the run (`from utils import set_seed`). The `__main__` block of a
module other files import is a smoke test, not an entry script (unless it trains, or the module
is a console script); a function nothing calls that seeds some generators is checked as one.

One file per rule; `checker.py` holds the one checker that collects seeds and draws per file and
decides per entry script once every file is known (`finalize`): MXL301-MXL303 by one shared
decision (a generator never seeded), MXL304 by the function in its own file. `_analysis.py`
holds the per-file facts and the walk that collects them.
"""
