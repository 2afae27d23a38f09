"""MXL301 unseeded-shuffle: checks entry scripts that build a shuffling data pipeline
(`DataLoader(shuffle=True)`, `RandomSampler`, `NDArrayIter(shuffle=True)`,
`mx.image.ImageIter(shuffle=True)`) without ever seeding the generator that pipeline shuffles
with.

Its findings are decided with MXL301-MXL303's shared rule for generators never seeded
(`_decide` in `rules/reproducibility/checker.py`); its tests
are the examples below (run by `tests/test_rule_examples.py`), `tests/test_reproducibility.py`
and `tests/snapshots/MXL301.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid

#: An entry script whose DataLoader shuffles (the examples below vary it).
_LOADER_SCRIPT = """import mxnet as mx
import numpy as np
from mxnet import gluon


def main():
    mx.random.seed(1)
    dataset = gluon.data.ArrayDataset(np.arange(100))
    loader = gluon.data.DataLoader(dataset, batch_size=8, shuffle=True)
    for batch in loader:
        print(batch)


if __name__ == "__main__":
    main()
"""


class UnseededShuffle(Rule):
    code = "MXL301"
    name = "unseeded-shuffle"
    runtime = Runtime("seed")
    message = (
        "`{what}` shuffles with {generator} ({why}), which {scope} never seeds: "
        "call `{seed}` before creating the loader{mx_note}"
    )
    what = """
        Checks entry scripts that build a shuffling data pipeline (`DataLoader(shuffle=True)`,
        `RandomSampler`, `NDArrayIter(shuffle=True)`, `mx.image.ImageIter(shuffle=True)`)
        without ever seeding the generator that pipeline shuffles with.
        Also functions nothing in the project calls (a `train()` a wrapper or a notebook runs)
        that seed some generators themselves: seeding one shows reproducibility was intended.
        Methods a framework calls later on objects built on the path (a dataset's
        `__getitem__`, a transform's `__call__`) are followed, also for a class of another
        file of the project (an iterator that shuffles in its `__init__` or `reset()`). A
        test module whose `__main__`
        block only runs its tests (`nose.runmodule()`, `unittest.main()`) is not an entry
        script, nor one whose `__main__` block calls its own test functions (`test_load()`)
        when nothing in it trains. A loader a function or the `__main__` block builds, or
        obtains from a helper of the file that returns it (`loader = get_dataloader(...)`), and
        never iterates (nothing but `len()` reads it) shuffles nothing and is not reported.
        A file that imports another deep learning framework (PyTorch, TensorFlow, JAX,
        Paddle) and nothing of MXNet is that framework's program and is not checked.
    """
    why = """
        MXNet seeds its own generator with a fixed default, but gluon's `RandomSampler` (what
        `shuffle=True` uses) calls `np.random.shuffle`, and `mx.image.ImageIter` calls
        `random.shuffle`. Neither global generator is seeded by `mx.random.seed`, so every run
        sees the batches in a different order: losses, checkpoints and bugs cannot be
        reproduced. Seeding in a helper (`set_seed(args.seed)`, in this file or another file of
        the project) is followed through calls. A loader built in a helper that returns it is
        reported where the entry script obtains it. A script that seeds a generator from a
        value drawn in the seed call itself (`mx.random.seed(random.getrandbits(32))`,
        `seed(int(time.time()))`) asks for a different run each time and is not reported
        (MXL301-MXL304); a seed drawn into a variable first may be logged and still counts.
    """
    example = """
        if __name__ == "__main__":
            mx.random.seed(42)
            loader = gluon.data.DataLoader(dataset, batch_size=64, shuffle=True)
    """
    use_instead = """
        if __name__ == "__main__":
            mx.random.seed(42)
            np.random.seed(42)
            loader = gluon.data.DataLoader(dataset, batch_size=64, shuffle=True)
    """
    fix_safety = """
        The fix inserts `np.random.seed(0)` (or `random.seed(0)`) after the imports; it is unsafe:
        it changes the program's behaviour and picks a seed for you. It is offered only when it
        can be placed cleanly (a leading block of imports, the module name free or imported).
    """
    fixable = "unsafe"

    invalid = (
        Example(
            _LOADER_SCRIPT,
            line=9,
            filename="train.py",
            expected_fix=_LOADER_SCRIPT.replace(
                "from mxnet import gluon\n", "from mxnet import gluon\nnp.random.seed(0)\n"
            ),
        ),
        Example(
            """import mxnet as mx
from mxnet import gluon


def get_loaders(train_set, val_set):
    train = gluon.data.DataLoader(train_set, 32, shuffle=True, last_batch="rollover")
    val = gluon.data.DataLoader(val_set, 32, shuffle=False)
    return train, val


if __name__ == "__main__":
    train_data, val_data = get_loaders(ds_train, ds_val)
    for epoch in range(10):
        for x, y in train_data:
            pass
""",
            line=12,
            filename="train.py",
        ),
        Example(
            """from mxnet import gluon


def make_loader(ds, shuffle):
    return gluon.data.DataLoader(ds, batch_size=4, shuffle=shuffle)


if __name__ == "__main__":
    loader = make_loader(ds, True)
    for batch in loader:
        train(batch)
""",
            line=9,
            filename="train.py",
        ),
        Example(
            """import mxnet as mx
from mxnet.gluon.data import BatchSampler, DataLoader, RandomSampler

sampler = BatchSampler(RandomSampler(len(ds)), 32, "keep")
loader = DataLoader(ds, batch_sampler=sampler)
for epoch in range(3):
    for data, label in loader:
        with mx.autograd.record():
            loss = net(data)
        loss.backward()
""",
            line=4,
            filename="train.py",
        ),
        Example(
            """import mxnet as mx

if __name__ == "__main__":
    np_seed = 0
    train_iter = mx.image.ImageIter(32, (3, 224, 224), path_imgrec="train.rec", shuffle=True)
""",
            line=5,
            filename="train.py",
        ),
        Example(
            """import mxnet as mx
from helpers import set_seed


if __name__ == "__main__":
    set_seed(0)
    it = mx.io.NDArrayIter(data, label, batch_size=16, shuffle=True)
""",
            line=7,
            filename="train.py",
            project=(
                ("helpers", "import mxnet as mx\n\n\ndef set_seed(s):\n    mx.random.seed(s)\n"),
            ),
        ),
    )

    valid = (
        # Built to count the batches of an epoch, never iterated: nothing is shuffled.
        Valid(
            """import mxnet as mx
from mxnet import gluon


def main():
    mx.random.seed(0)
    loader = gluon.data.DataLoader(dataset(), batch_size=32, shuffle=True)
    print(len(loader), "batches")


if __name__ == "__main__":
    main()
""",
            filename="train.py",
        ),
        Valid(
            _LOADER_SCRIPT.replace(
                "    mx.random.seed(1)\n", "    mx.random.seed(1)\n    np.random.seed(1)\n"
            ),
            filename="train.py",
        ),
        # Seeded in a helper of the same file, called from main() before the loader.
        Valid(
            """import random
import mxnet as mx
import numpy as np
from mxnet import gluon


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    mx.random.seed(seed)


def main(args):
    set_seed(args.seed)
    loader = gluon.data.DataLoader(ds, batch_size=8, shuffle=True)


if __name__ == "__main__":
    main(parse_args())
""",
            filename="train.py",
        ),
        # Seeded in a helper of another file of the project.
        Valid(
            """from mxnet import gluon
from utils import set_seed

if __name__ == "__main__":
    set_seed(0)
    loader = gluon.data.DataLoader(ds, batch_size=8, shuffle=True)
""",
            filename="train.py",
            project=(
                ("utils", "import numpy as np\n\n\ndef set_seed(s):\n    np.random.seed(s)\n"),
            ),
        ),
        # A library module that only receives (or builds) a loader is not an entry script.
        Valid(
            """from mxnet import autograd, gluon


def get_loader(ds):
    return gluon.data.DataLoader(ds, batch_size=8, shuffle=True)


def train(net, loader, trainer):
    for x, y in loader:
        with autograd.record():
            loss = net(x)
        loss.backward()
""",
            filename="train_lib.py",
        ),
        Valid(
            """from mxnet import gluon

if __name__ == "__main__":
    val_loader = gluon.data.DataLoader(ds, batch_size=8, shuffle=False)
    test_loader = gluon.data.DataLoader(ds, 8)
""",
            filename="evaluate.py",
        ),
        # A shuffle flag that cannot be known statically is not guessed.
        Valid(
            """from mxnet import gluon

if __name__ == "__main__":
    loader = gluon.data.DataLoader(ds, batch_size=8, shuffle=args.shuffle)
""",
            filename="train.py",
        ),
        # gluoncv's seed helper seeds numpy, random and mxnet.
        Valid(
            """import gluoncv as gcv
from mxnet import gluon

if __name__ == "__main__":
    gcv.utils.random.seed(args.seed)
    loader = gluon.data.DataLoader(ds, batch_size=8, shuffle=True)
""",
            filename="train.py",
        ),
        # A seed set after building the loader but before iterating it still governs the order.
        Valid(
            """import numpy as np
from mxnet import gluon

if __name__ == "__main__":
    loader = gluon.data.DataLoader(ds, batch_size=8, shuffle=True)
    np.random.seed(0)
    for batch in loader:
        pass
""",
            filename="train.py",
        ),
        # An unknown project helper named after seeding is taken at its word.
        Valid(
            """from mxnet import gluon
from common.utils import seed_everything

if __name__ == "__main__":
    seed_everything(1)
    loader = gluon.data.DataLoader(ds, batch_size=8, shuffle=True)
""",
            filename="train.py",
        ),
    )
