"""MXL303 unseeded-python-random: checks training entry scripts that draw from Python's `random`
module (directly, or through an MXNet augmenter that does: `transforms.RandomResizedCrop`,
`transforms.RandomApply`, `mx.image.CreateAugmenter(rand_crop=True)`, the `mx.image.*Aug`
jitters) and never call `random.seed`.

Its findings are decided with MXL301-MXL303's shared rule for generators never seeded
(`_decide` in `rules/reproducibility/checker.py`); its tests
are the examples below (run by `tests/test_rule_examples.py`), `tests/test_reproducibility.py`
and `tests/snapshots/MXL303.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.reproducibility.unseeded_shuffle import UnseededShuffle


class UnseededPythonRandom(Rule):
    code = "MXL303"
    name = "unseeded-python-random"
    runtime = Runtime("seed")
    message = (
        "`{what}` draws from Python's `random` module, which {scope} never "
        "seeds: call `random.seed(SEED)` at its start{mx_note}"
    )
    what = """
        Checks training entry scripts that draw from Python's `random` module (directly, or
        through an MXNet augmenter that does: `transforms.RandomResizedCrop`,
        `transforms.RandomApply`, `mx.image.CreateAugmenter(rand_crop=True)`, the
        `mx.image.*Aug` jitters) and never call `random.seed`.
        Also functions nothing in the project calls (a `train()` a wrapper or a notebook runs)
        that seed some generators themselves: seeding one shows reproducibility was intended.
        Methods a framework calls later on objects built on the path (a dataset's
        `__getitem__`, a transform's `__call__`) are followed, also for a class of another
        file of the project (reported where the script builds it, naming the class, after
        the script's own draws); a call under `if <parameter>:` in a helper (or `if self.flag
        is not None:` in a method, for a constructor parameter kept as `self.flag`) does not
        run for callers that leave the parameter false or unset. A draw whose value reaches only
        plots, or only picks which element a `print` shows beside them (which sample a figure
        shows, with its label), reaches no result and is not reported; nor is an augmenter
        whose output, converted by array functions, only figures show (with its shape
        printed).
        A file that imports another deep learning framework (PyTorch, TensorFlow, JAX,
        Paddle) and nothing of MXNet is that framework's program and is not checked.
    """
    why = """
        In MXNet 1.9.1, `gluon.data.vision.transforms.RandomResizedCrop` crops through
        `mx.image.random_size_crop`, which calls `random.uniform` and `random.randint`; the
        `mx.image` augmenters do the same. Python's generator is seeded from the operating
        system, and neither `mx.random.seed` nor `np.random.seed` seeds it, so the augmented
        data differs on every run. Draws that only pick how a plot looks (a `color=` value, a
        `colors[...]` table, which samples a figure shows) or whose value nothing uses are not
        reported, nor the `__main__` block of a module other files
        of the project import (a smoke test; a module installed as a console script is still a
        program).
    """
    example = """
        if __name__ == "__main__":
            np.random.seed(0)
            aug = transforms.Compose([transforms.RandomResizedCrop(224), transforms.ToTensor()])
            train(aug)
    """
    use_instead = """
        if __name__ == "__main__":
            np.random.seed(0)
            random.seed(0)
            aug = transforms.Compose([transforms.RandomResizedCrop(224), transforms.ToTensor()])
            train(aug)
    """
    fix_safety = UnseededShuffle.fix_safety
    fixable = "unsafe"

    invalid = (
        Example(
            """import random
import numpy as np

if __name__ == "__main__":
    np.random.seed(0)
    random.shuffle(files)
    train(files)
""",
            line=6,
            filename="train.py",
            expected_fix="""import random
import numpy as np
random.seed(0)

if __name__ == "__main__":
    np.random.seed(0)
    random.shuffle(files)
    train(files)
""",
        ),
        Example(
            """import numpy as np
from mxnet.gluon.data.vision import transforms


def get_transform():
    return transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomFlipLeftRight(),
        transforms.ToTensor(),
    ])


def main():
    np.random.seed(0)
    train(get_transform())


if __name__ == "__main__":
    main()
""",
            line=7,
            filename="train.py",
        ),
        Example(
            """import mxnet as mx

if __name__ == "__main__":
    mx.random.seed(0)
    augs = mx.image.CreateAugmenter((3, 224, 224), rand_crop=True, rand_mirror=True)
    fit(augs)
""",
            line=5,
            filename="train.py",
        ),
    )

    valid = (
        Valid(
            """import random

if __name__ == "__main__":
    random.seed(1)
    random.shuffle(files)
    train(files)
""",
            filename="train.py",
        ),
        # MXNet operators (RandomFlipLeftRight, RandomColorJitter) use MXNet's seeded generator.
        Valid(
            """import numpy as np
from mxnet.gluon.data.vision import transforms

if __name__ == "__main__":
    np.random.seed(0)
    aug = transforms.Compose([transforms.RandomFlipLeftRight(),
                              transforms.RandomColorJitter(0.4, 0.4, 0.4)])
    train(aug)
""",
            filename="train.py",
        ),
        Valid(
            """import mxnet as mx

if __name__ == "__main__":
    augs = mx.image.CreateAugmenter((3, 224, 224), rand_crop=False, mean=True)
    fit(augs)
""",
            filename="train.py",
        ),
        Valid(
            """import random


class Trainer:
    def __init__(self, seed):
        random.seed(seed)

    def run(self):
        random.shuffle(self.items)


if __name__ == "__main__":
    t = Trainer(0)
    t.run()
""",
            filename="train.py",
        ),
        Valid(
            """import random

if __name__ == "__main__":
    parser.add_argument("--seed", type=int, default=random.randint(0, 1000))
    args = parser.parse_args()
    random.seed(args.seed)
    train(random.random())
""",
            filename="train.py",
        ),
    )
