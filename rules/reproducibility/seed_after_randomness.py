"""MXL304 seed-after-randomness: checks entry scripts that seed a generator only after drawing from
it, in execution order (following calls into the script's functions and the project's helpers).

The function after the class decides and words its findings; the family's checker
(`rules/reproducibility/checker.py`) runs it. Its tests
are the examples below (run by `tests/test_rule_examples.py`), `tests/test_reproducibility.py`
and `tests/snapshots/MXL304.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Finding, Rule, Runtime, Valid
from mxlint.rules.reproducibility._analysis import _GENERATOR, EntryFacts, Item, _finding


class SeedAfterRandomness(Rule):
    code = "MXL304"
    name = "seed-after-randomness"
    runtime = Runtime("seed", draws=False)
    message = (
        "`{seed}` runs after `{what}` (line {line}) already drew from {generator}: move "
        "the seed before the first draw"
    )
    what = """
        Checks entry scripts that seed a generator only after drawing from it, in execution
        order (following calls into the script's functions and the project's helpers). A
        network's first forward pass after its `initialize()` (a call, `forward` or `summary`,
        not a call on Symbols) is where Gluon's deferred initialization draws the initial
        weights: a builder that initialises and runs the network before the seed is reported.
        A layer built with its input size (`nn.Dense(10, in_units=4)`, `nn.Embedding(...)`,
        the layers MXNet was seen to initialize at once) draws in `initialize()` itself, also
        when it was added to a `Sequential`/`HybridSequential` that is initialised; a builder
        of another file that does this is named in the message (`in build_mlp(), called on
        line 12`).
        A file that imports another deep learning framework (PyTorch, TensorFlow, JAX,
        Paddle) and nothing of MXNet is that framework's program and is not checked.
    """
    why = """
        The draws made before the seed (synthetic data, a random split, a permutation) come
        from an unseeded generator (numpy, `random`) or from MXNet's default seed rather than the
        one the user asked for, so runs with different `--seed` values share them and reruns of
        one seed do not. A shuffling DataLoader built before the seed is fine: it shuffles
        when iterated. Draws that produce the seed itself are not reported.
    """
    example = """
        if __name__ == "__main__":
            data = np.random.uniform(size=(512, 10))
            np.random.seed(args.seed)
    """
    use_instead = """
        if __name__ == "__main__":
            np.random.seed(args.seed)
            data = np.random.uniform(size=(512, 10))
    """

    invalid = (
        Example(
            """import mxnet as mx
from mxnet.gluon import nn


def build(vocab):
    embed = nn.Embedding(vocab, 32)
    embed.initialize()
    return embed


def main(args):
    embed = build(args.vocab)
    mx.random.seed(args.seed)
    train(embed)


if __name__ == "__main__":
    main(parse())
""",
            line=13,
            filename="train.py",
        ),
        Example(
            """import numpy as np

if __name__ == "__main__":
    data = np.random.uniform(size=(512, 10))
    np.random.seed(args.seed)
    train(data)
""",
            line=5,
            filename="train.py",
        ),
        Example(
            """import mxnet as mx


def make_data():
    return mx.nd.random.normal(shape=(100, 4))


def main(args):
    data = make_data()
    mx.random.seed(args.seed)
    train(data)


if __name__ == "__main__":
    main(parse())
""",
            line=10,
            filename="train.py",
        ),
        Example(
            """import random
from utils import seed_all

if __name__ == "__main__":
    random.shuffle(files)
    seed_all(0)
    train(files)
""",
            line=6,
            filename="train.py",
            project=(("utils", "import random\n\n\ndef seed_all(s):\n    random.seed(s)\n"),),
        ),
    )

    valid = (
        # `in_units` not given: the weights wait for the first input, after the seed.
        Valid(
            """import mxnet as mx
from mxnet.gluon import nn


def build():
    head = nn.Dense(10)
    head.initialize()
    return head


def main(args):
    head = build()
    mx.random.seed(args.seed)
    train(head)


if __name__ == "__main__":
    main(parse())
""",
            filename="train.py",
        ),
        Valid(
            """import numpy as np

if __name__ == "__main__":
    np.random.seed(args.seed)
    data = np.random.uniform(size=(512, 10))
""",
            filename="train.py",
        ),
        Valid(
            """import numpy as np
from mxnet import gluon

if __name__ == "__main__":
    loader = gluon.data.DataLoader(ds, batch_size=8, shuffle=True)
    np.random.seed(0)
""",
            filename="train.py",
        ),
        # The draw is in a function that runs after the seed, even though it is defined above.
        Valid(
            """import numpy as np


def make_data():
    return np.random.rand(10)


def main():
    np.random.seed(0)
    train(make_data())


if __name__ == "__main__":
    main()
""",
            filename="train.py",
        ),
        Valid(
            """import numpy as np

if __name__ == "__main__":
    seed = args.seed if args.seed is not None else np.random.randint(1 << 16)
    np.random.seed(seed)
""",
            filename="train.py",
        ),
        # Drawn from an explicit generator, not the global one.
        Valid(
            """import numpy as np

if __name__ == "__main__":
    x = np.random.default_rng(0).random(4)
    np.random.seed(1)
""",
            filename="train.py",
        ),
    )


def check_seeds(entry: EntryFacts, items: list[Item], first_seed: dict[str, int]) -> list[Finding]:
    """MXL304 for each generator whose first seed (`first_seed`: kind -> index in `items`, the
    script's calls in execution order) comes after a draw from it."""
    findings: list[Finding] = []
    done: set[tuple[int, int]] = set()
    for kind, index in sorted(first_seed.items(), key=lambda kv: kv[1]):
        seed = items[index]
        earlier = [
            it
            for it in items[:index]
            if it.op == "use"
            and kind in it.kinds
            and it.reached
            and not it.seedgen
            and it.code != "MXL301"
            and it.span is not None
        ]
        if not entry.training:
            earlier = [it for it in earlier if not it.direct]
        if not earlier or seed.span is None or (seed.span[0], seed.span[1]) in done:
            continue
        done.add((seed.span[0], seed.span[1]))
        first = earlier[0]
        message = SeedAfterRandomness.format(
            seed=seed.what + "()", what=first.what, line=first.line, generator=_GENERATOR[kind]
        )
        if first.via:
            message = message.replace(
                f"(line {first.line})", f"(in `{first.via}()`, called on line {first.line})", 1
            )
        findings.append(_finding(SeedAfterRandomness, entry, seed, message, None))
    return findings
