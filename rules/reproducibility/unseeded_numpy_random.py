"""MXL302 unseeded-numpy-random: checks training entry scripts that draw from numpy's global
generator (`np.random.*`, or an MXNet API that does: `transforms.RandomRotation`,
`mx.image.LightingAug`) and never call `np.random.seed`.

Its findings are decided with MXL301-MXL303's shared rule for generators never seeded
(`_decide` in `rules/reproducibility/checker.py`); its tests
are the examples below (run by `tests/test_rule_examples.py`), `tests/test_reproducibility.py`
and `tests/snapshots/MXL302.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.reproducibility.unseeded_shuffle import UnseededShuffle


class UnseededNumpyRandom(Rule):
    code = "MXL302"
    name = "unseeded-numpy-random"
    runtime = Runtime("seed")
    message = (
        "`{what}` draws from numpy's global generator, which {scope} never "
        "seeds: call `np.random.seed(SEED)` at its start (or draw from "
        "`np.random.default_rng(seed)`){mx_note}"
    )
    what = """
        Checks training entry scripts that draw from numpy's global generator (`np.random.*`,
        or an MXNet API that does: `transforms.RandomRotation`, `mx.image.LightingAug`) and
        never call `np.random.seed`.
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
        printed), nor random codes that a network of the file decodes into a grid that a
        figure shows (a generative model's samples: `net.decoder(z).asnumpy()` copied into
        slices of a canvas).
        A file that imports another deep learning framework (PyTorch, TensorFlow, JAX,
        Paddle) and nothing of MXNet is that framework's program and is not checked.
    """
    why = """
        numpy's global generator is seeded from the operating system at start-up. Synthetic
        data, train/validation splits and augmentations drawn from it differ on every run,
        and `mx.random.seed` does not seed it. Draws that compute a seed (`seed =
        np.random.randint(...)`) and explicit generators (`np.random.default_rng(seed)`,
        `RandomState(seed)`) are not reported; scripts that do not train (benchmarks, demos)
        are not reported for raw draws.
    """
    example = """
        if __name__ == "__main__":
            idx = np.random.permutation(len(dataset))
            train(net, idx)
    """
    use_instead = """
        if __name__ == "__main__":
            np.random.seed(args.seed)
            idx = np.random.permutation(len(dataset))
            train(net, idx)
    """
    fix_safety = UnseededShuffle.fix_safety
    fixable = "unsafe"

    invalid = (
        Example(
            """import mxnet as mx
import numpy as np
from mxnet import autograd


def synthetic(n):
    return np.random.uniform(size=(n, 10)), np.random.randint(0, 2, size=(n,))


if __name__ == "__main__":
    mx.random.seed(0)
    x, y = synthetic(100)
    with autograd.record():
        loss = net(mx.nd.array(x))
""",
            line=7,
            filename="train.py",
            expected_fix="""import mxnet as mx
import numpy as np
from mxnet import autograd
np.random.seed(0)


def synthetic(n):
    return np.random.uniform(size=(n, 10)), np.random.randint(0, 2, size=(n,))


if __name__ == "__main__":
    mx.random.seed(0)
    x, y = synthetic(100)
    with autograd.record():
        loss = net(mx.nd.array(x))
""",
        ),
        Example(
            """import numpy
import mxnet as mx

if __name__ == "__main__":
    order = numpy.random.permutation(len(dataset))
    train(net, order)
""",
            line=5,
            filename="train.py",
        ),
        Example(
            """from numpy.random import shuffle
from mxnet import gluon

if __name__ == "__main__":
    shuffle(samples)
    trainer = gluon.Trainer(net.collect_params(), "sgd")
""",
            line=5,
            filename="train.py",
        ),
        Example(
            """import random
from mxnet.gluon.data.vision import transforms

if __name__ == "__main__":
    random.seed(0)
    aug = transforms.Compose([transforms.RandomRotation((-10, 10)), transforms.ToTensor()])
    train(aug)
""",
            line=6,
            filename="train.py",
        ),
    )

    valid = (
        Valid(
            """import numpy as np
import mxnet as mx
from mxnet import autograd, gluon
from common import with_seed


@with_seed()
def test_training():
    net = gluon.nn.Dense(2)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    x = mx.nd.array(np.random.rand(4, 8))
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    trainer.step(4)


if __name__ == "__main__":
    test_training()
""",
            filename="test_training.py",
        ),
        Valid(
            """import numpy as np

if __name__ == "__main__":
    rng = np.random.default_rng(args.seed)
    idx = rng.permutation(100)
    train(idx)
""",
            filename="train.py",
        ),
        Valid(
            """import numpy as np

if __name__ == "__main__":
    state = np.random.RandomState(0)
    noise = state.normal(size=10)
    train(noise)
""",
            filename="train.py",
        ),
        Valid(
            """import numpy as np

if __name__ == "__main__":
    np.random.seed(0)
    x = np.random.rand(10)
    train(x)
""",
            filename="train.py",
        ),
        # mx.random.seed only, and no numpy randomness: nothing to report.
        Valid(
            """import mxnet as mx

if __name__ == "__main__":
    mx.random.seed(0)
    x = mx.nd.random.uniform(shape=(4, 4))
    train(x)
""",
            filename="train.py",
        ),
        # A benchmark does not train: its random inputs need no seed.
        Valid(
            """import numpy as np
import mxnet as mx

if __name__ == "__main__":
    data = mx.nd.array(np.random.rand(32, 3, 224, 224))
    for _ in range(10):
        net(data).wait_to_read()
""",
            filename="benchmark.py",
        ),
        # Drawing the seed itself.
        Valid(
            """import numpy as np

if __name__ == "__main__":
    seed = np.random.randint(0, 10000)
    np.random.seed(seed)
    train(np.random.rand(4))
""",
            filename="train.py",
        ),
        # Library module: not an entry script.
        Valid(
            """import numpy as np


def augment(x):
    return x + np.random.normal(size=x.shape)
""",
            filename="augment.py",
        ),
        Valid(
            """import numpy as np
from seeding import fix_all

if __name__ == "__main__":
    fix_all()
    train(np.random.rand(4))
""",
            filename="train.py",
            project=(
                (
                    "seeding",
                    "import random\nimport numpy as np\n\n\n"
                    "def fix_all():\n    _inner(0)\n\n\n"
                    "def _inner(s):\n    np.random.seed(s)\n    random.seed(s)\n",
                ),
            ),
        ),
    )
