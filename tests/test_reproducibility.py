"""MXL3xx: fixtures match their markers exactly; cross-file seeding is followed."""

from __future__ import annotations

import libcst as cst
import pytest
from expectations import actual, expected

from mxlint.api import check_source
from mxlint.config import Settings
from mxlint.fixes import apply_edits

SETTINGS = Settings(select=("MXL3",))


def test_bad_fixtures_report_exactly_the_marked_findings(fixtures_dir):
    root = fixtures_dir / "reproducibility" / "bad"
    assert expected(root)
    assert actual(root, prefix="MXL3") == expected(root)


def test_good_twins_are_silent(fixtures_dir):
    root = fixtures_dir / "reproducibility" / "good"
    assert actual(root, prefix="MXL3") == set()


ENTRY = """from mxnet import gluon
from tools.seeding import setup

if __name__ == "__main__":
    setup(0)
    loader = gluon.data.DataLoader(ds, batch_size=8, shuffle=True)
"""


def _codes(project: list[tuple[str, str]]) -> list[tuple[str, int]]:
    return [(f.code, f.location.row) for f in check_source(ENTRY, "train.py", SETTINGS, project)]


def test_cross_file_seed_helper_is_followed_transitively():
    seeding = "from tools.rng import seed_numpy\n\n\ndef setup(s):\n    seed_numpy(s)\n"
    rng = "import numpy as np\n\n\ndef seed_numpy(s):\n    np.random.seed(s)\n"
    assert _codes([("tools.seeding", seeding), ("tools.rng", rng)]) == []


def test_cross_file_helper_that_seeds_only_mxnet_does_not_count():
    seeding = "import mxnet as mx\n\n\ndef setup(s):\n    mx.random.seed(s)\n"
    findings = check_source(ENTRY, "train.py", SETTINGS, [("tools.seeding", seeding)])
    assert [(f.code, f.location.row) for f in findings] == [("MXL301", 6)]
    assert "mx.random.seed" in findings[0].message
    assert findings[0].data == {"entry": "train.py"}


def test_cross_file_seed_after_the_draw_is_reported_at_the_helper_call():
    source = (
        "import numpy as np\nfrom tools.seeding import setup\n\n"
        "if __name__ == '__main__':\n    x = np.random.rand(3)\n    setup(0)\n"
        "    train(x)\n"
    )
    seeding = "import numpy as np\n\n\ndef setup(s):\n    np.random.seed(s)\n"
    findings = check_source(source, "train.py", SETTINGS, [("tools.seeding", seeding)])
    assert [(f.code, f.location.row) for f in findings] == [("MXL304", 6)]


def test_loader_factory_in_another_file_is_reported_at_the_call():
    source = (
        "from loaders import make\n\nif __name__ == '__main__':\n"
        "    train_data = make(ds, shuffle=True)\n    val_data = make(ds, shuffle=False)\n"
    )
    loaders = (
        "from mxnet import gluon\n\n\ndef make(ds, shuffle=False):\n"
        "    return gluon.data.DataLoader(ds, 8, shuffle=shuffle)\n"
    )
    findings = check_source(source, "train.py", SETTINGS, [("loaders", loaders)])
    assert [(f.code, f.location.row) for f in findings] == [("MXL301", 4)]
    no_shuffle = source.replace("shuffle=True", "shuffle=False")
    assert check_source(no_shuffle, "train.py", SETTINGS, [("loaders", loaders)]) == []


def test_configured_entry_point_without_main_guard(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(
        "import mxnet as mx\nimport numpy as np\n\n\ndef train():\n"
        "    return mx.nd.array(np.random.rand(3))\n"
    )
    from mxlint.api import check_paths

    plain = check_paths([script], Settings(select=("MXL3",), root=tmp_path))
    assert plain.findings == []
    configured = check_paths(
        [script], Settings(select=("MXL3",), root=tmp_path, entry_points=("run.py",))
    )
    assert [(f.code, f.location.row) for f in configured.findings] == [("MXL302", 6)]


def test_fix_adds_the_numpy_import_when_missing():
    source = (
        "import mxnet as mx\nfrom mxnet import gluon\n\nif __name__ == '__main__':\n"
        "    loader = gluon.data.DataLoader(ds, 4, shuffle=True)\n"
    )
    (finding,) = check_source(source, "train.py", SETTINGS)
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    fixed = apply_edits(source, finding.fix.edits)
    assert fixed.startswith(
        "import mxnet as mx\nfrom mxnet import gluon\nimport numpy as np\nnp.random.seed(0)\n\n"
    )
    assert check_source(fixed, "train.py", SETTINGS) == []


def test_no_fix_when_imports_are_not_a_clean_leading_block():
    source = (
        "import sys\nsys.path.insert(0, '.')\nimport numpy as np\n\n"
        "if __name__ == '__main__':\n    train(np.random.rand(4))\n"
    )
    (finding,) = check_source(source, "train.py", SETTINGS)
    assert finding.code == "MXL302"
    assert finding.fix is None  # numpy is imported after other code: no clean place


def test_a_seeding_decorator_seeds_the_draws_of_its_function():
    from mxlint.api import check_source
    from mxlint.config import Settings
    from mxlint.registry import all_rules

    valid = [v for v in all_rules()["MXL302"].valid if v.filename == "test_training.py"]
    assert len(valid) == 1
    undecorated = valid[0].code.replace("@with_seed()\n", "")
    assert [
        (f.code, f.location.row) for f in check_source(undecorated, "test_training.py", Settings())
    ] == [("MXL302", 11)]


EVAL_SUBSET = """import mxnet as mx
from mxnet import gluon

if __name__ == "__main__":
    mx.random.seed(0)
    val_loader = gluon.data.DataLoader(val_set, 4, shuffle=True, last_batch="discard")
    print(score(net, val_loader))
"""


def test_a_shuffled_evaluation_subset_is_one_finding_not_two() -> None:
    # MXL305's advice (keep every sample) also ends the unseeded shuffle; with MXL305 off,
    # MXL301 reports the loader again.
    both = Settings(select=("MXL3",))
    found = [(f.code, f.location.row) for f in check_source(EVAL_SUBSET, "train.py", both)]
    assert found == [("MXL305", 6)]
    without = Settings(select=("MXL3",), ignore=("MXL305",))
    found = [(f.code, f.location.row) for f in check_source(EVAL_SUBSET, "train.py", without)]
    assert found == [("MXL301", 6)]


def test_a_smoke_test_of_a_module_a_package_re_exports_is_not_an_entry_script(tmp_path):
    """`core/__init__.py` names nothing of MXNet (it is not parsed) and takes every name of a
    module in a folder without `__init__.py`: that module's `__main__` block is a smoke test."""
    from mxlint.api import check_paths
    from mxlint.config import Settings

    (tmp_path / "core" / "data").mkdir(parents=True)
    (tmp_path / "core" / "data" / "loader.py").write_text(
        "from mxnet import gluon\n\n\ndef make_loader(dataset):\n"
        "    return gluon.data.DataLoader(dataset, 4, shuffle=True)\n\n\n"
        'if __name__ == "__main__":\n    for batch in make_loader(list(range(8))):\n'
        "        print(batch)\n"
    )
    init = tmp_path / "core" / "__init__.py"

    def found() -> list[tuple[str, int]]:
        result = check_paths([tmp_path], Settings(select=("MXL3",)))
        return [(f.code, f.location.row) for f in result.findings]

    init.write_text("from core.data.loader import *\n")
    assert found() == []
    init.write_text("")
    assert found() == [("MXL301", 9)]


SEQUENTIAL_BUILT = """import mxnet as mx
from mxnet import gluon


def build():
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(8, in_units=4), gluon.nn.Dense(2))
    net.initialize()
    return net


if __name__ == "__main__":
    net = build()
    mx.random.seed(0)
    print(net(mx.nd.ones((1, 4))))
"""


def test_a_sequential_of_layers_that_know_their_size_draws_in_initialize() -> None:
    found = check_source(SEQUENTIAL_BUILT, "train.py", Settings(select=("MXL304",)))
    assert [(f.code, f.location.row) for f in found] == [("MXL304", 14)]
    deferred = SEQUENTIAL_BUILT.replace("gluon.nn.Dense(8, in_units=4)", "gluon.nn.Dense(8)")
    assert check_source(deferred, "train.py", Settings(select=("MXL304",))) == []


def test_a_loader_factory_called_with_shuffle_for_evaluation_data() -> None:
    source = """from mxnet import gluon


def make_loader(dataset, shuffle, last_batch="rollover"):
    return gluon.data.DataLoader(dataset, 32, shuffle=shuffle, last_batch=last_batch)


def build(train_set, val_set, test_set):
    train_loader = make_loader(train_set, True)
    val_loader = make_loader(val_set, shuffle=True)
    test_loader = make_loader(test_set, True, "keep")
    return train_loader, val_loader, test_loader
"""
    found = check_source(source, "data.py", Settings(select=("MXL305",)))
    assert [(f.code, f.location.row, f.location.column) for f in found] == [("MXL305", 10, 47)]
    assert "(built by `make_loader()`)" in found[0].message
    assert found[0].fix is not None
    assert "make_loader(val_set, shuffle=False)" in apply_edits(source, found[0].fix.edits)


def test_a_shuffling_loader_from_a_helper_is_judged_by_what_the_caller_does_with_it():
    source = """\
from mxnet import gluon


def get_dataloader(dataset, batch_size):
    return gluon.data.DataLoader(dataset, batch_size, True)


def count(dataset):
    loader = get_dataloader(dataset, 32)
    return len(loader)


def train(dataset):
    loader = get_dataloader(dataset, 32)
    for batch in loader:
        print(batch)


def hand_on(dataset):
    loader = get_dataloader(dataset, 32)
    return loader


if __name__ == "__main__":
    count(ds)
    train(ds)
    hand_on(ds)
"""
    found = [(f.code, f.location.row) for f in check_source(source, "train.py", SETTINGS)]
    assert found == [("MXL301", 14)]


def test_a_loader_the_main_block_obtains_and_never_iterates_shuffles_nothing():
    helper = (
        "from mxnet import gluon\n\n\n"
        "def get_loader(dataset):\n"
        "    loader = gluon.data.DataLoader(dataset, 4, shuffle=True)\n"
        "    return loader\n\n\n"
    )
    unused = 'if __name__ == "__main__":\n    loader = get_loader(list(range(8)))\n'
    assert check_source(helper + unused, "export.py", SETTINGS) == []
    used = unused + "    for batch in loader:\n        print(batch)\n"
    assert [
        (f.code, f.location.row) for f in check_source(helper + used, "export.py", SETTINGS)
    ] == [("MXL301", 10)]
    # bound by the module's own code, the name can be imported (and iterated) elsewhere
    module_level = "loader = get_loader(list(range(8)))\n"
    found = check_source(helper + module_level + unused, "export.py", SETTINGS)
    assert [(f.code, f.location.row) for f in found] == [("MXL301", 9)]


DATASET = """import random

from mxnet.gluon.data import Dataset


class Jitter(Dataset):
    def __init__(self, items):
        self.items = items

    def __getitem__(self, i):
        return self.items[i] * random.uniform(0.9, 1.1)
"""

TRAIN_ON_DATASET = """import numpy as np
import mxnet as mx
from mxnet import autograd
from data.jitter import Jitter

if __name__ == "__main__":
    np.random.seed(0)
    mx.random.seed(0)
    ds = Jitter(list(range(8)))
    with autograd.record():
        pass
"""


def test_a_project_class_a_script_builds_draws_where_it_is_built():
    findings = check_source(TRAIN_ON_DATASET, "train.py", SETTINGS, [("data.jitter", DATASET)])
    assert [(f.code, f.location.row) for f in findings] == [("MXL303", 9)]
    assert findings[0].message.startswith(
        "`random.uniform()` (in `Jitter()`) draws from Python's `random` module"
    )


def test_a_pytorch_script_building_a_project_dataset_is_not_judged():
    torch_script = TRAIN_ON_DATASET.replace("import mxnet as mx\nfrom mxnet import autograd\n", "")
    torch_script = torch_script.replace("    mx.random.seed(0)\n", "").replace(
        "    with autograd.record():\n        pass\n", "    loss.backward()\n"
    )
    assert check_source(torch_script, "train.py", SETTINGS, [("data.jitter", DATASET)]) == []


STREAM = """import random


class Shuffled:
    def __init__(self, items):
        self.items = list(items)

    def __iter__(self):
        random.shuffle(self.items)
        return iter(self.items)


def stream(items, shuffle=None):
    if shuffle is not None:
        items = Shuffled(items)
    return items
"""


def test_a_construction_under_a_parameter_the_call_leaves_false_does_not_run():
    entry = (
        "import numpy as np\nimport mxnet as mx\nfrom mxnet import autograd\n"
        "from feeds import stream\n\n"
        "if __name__ == '__main__':\n"
        "    np.random.seed(0)\n"
        "    mx.random.seed(0)\n"
        "    plain = stream([1, 2])\n"
        "    mixed = stream([1, 2], shuffle=args.shuffle)\n"
        "    autograd.record()\n"
    )
    findings = check_source(entry, "train.py", SETTINGS, [("feeds", STREAM)])
    # The call leaving `shuffle` at None is silent; one passing an unknown value may shuffle.
    assert [(f.code, f.location.row) for f in findings] == [("MXL303", 10)]


def test_a_seed_after_a_builder_of_another_file_names_the_builder():
    builder = (
        "from mxnet.gluon import nn\n\n\ndef build():\n"
        "    net = nn.Embedding(100, 8)\n    net.initialize()\n    return net\n"
    )
    entry = (
        "import mxnet as mx\nfrom mxnet import autograd\nfrom zoo import build\n\n"
        "if __name__ == '__main__':\n    net = build()\n    mx.random.seed(1)\n"
        "    autograd.record()\n"
    )
    findings = check_source(entry, "train.py", SETTINGS, [("zoo", builder)])
    assert [(f.code, f.location.row) for f in findings] == [("MXL304", 7)]
    assert findings[0].message.startswith(
        "`mx.random.seed()` runs after `net.initialize(...)` (in `build()`, called on line 6)"
    )


CROPPING = """import numpy as np


class Crops:
    def __init__(self, items, crop=None):
        self.items = items
        self.crop = crop
        self.data = self._read()

    def _read(self):
        if self.crop is not None:
            return [x[np.random.randint(0, 4):] for x in self.items]
        return self.items
"""


def test_a_draw_under_a_kept_constructor_parameter_the_script_leaves_unset():
    entry = (
        "import mxnet as mx\nfrom mxnet import autograd\nfrom crops import Crops\n\n"
        "if __name__ == '__main__':\n"
        "    mx.random.seed(0)\n"
        "    plain = Crops([1, 2])\n"
        "    cropped = Crops([1, 2], crop=8)\n"
        "    autograd.record()\n"
    )
    findings = check_source(entry, "train.py", SETTINGS, [("crops", CROPPING)])
    assert [(f.code, f.location.row) for f in findings] == [("MXL302", 8)]


@pytest.mark.parametrize(
    ("source", "trains"),
    [
        ("for x, y in data:\n    with autograd.record():\n        loss = net(x)\n", True),
        ("with mx.autograd.record():\n    loss = net(x)\n", True),
        ("for x in data:\n    loss(x).backward()\n", True),
        ("while True:\n    mod.fit(train_iter, num_epoch=1)\n", True),
        # The words alone, in a comment or a string, or a call of the loop's own name.
        ("for x in data:\n    print(x)  # then loss.backward()\n", False),
        ("for x in data:\n    print('autograd.record() next')\n", False),
        ("for x in data:\n    backward(x)\n", False),
        # Not at module level: a function's loop is judged where the function runs.
        ("def train():\n    for x in data:\n        loss(x).backward()\n", False),
    ],
)
def test_a_module_level_training_loop_is_read_from_its_calls(source, trains):
    from mxlint.rules.reproducibility._analysis import module_level_training_loop

    assert module_level_training_loop(cst.parse_module(source), source) is trains


def test_random_codes_a_decoder_of_the_file_decodes_for_a_figure_only():
    """A class of the file deriving from a block (here spelled `mxnet.gluon.block.HybridBlock`,
    which the import map reads as `mxnet.gluon.HybridBlock`) decodes numpy draws shown with
    `imshow`: no result depends on them. Saved, they are the run's output: reported."""
    source = (
        "import matplotlib.pyplot as plt\n"
        "import numpy as np\n"
        "from mxnet import autograd, gluon, nd\n"
        "from mxnet.gluon.block import HybridBlock\n"
        "from mxnet.gluon import nn\n\n\n"
        "class Decoder(HybridBlock):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.out = nn.Dense(784)\n\n"
        "    def hybrid_forward(self, F, z):\n"
        "        return self.out(z)\n\n\n"
        "net = Decoder()\n"
        "net.initialize()\n"
        "trainer = gluon.Trainer(net.collect_params(), 'sgd')\n"
        "with autograd.record():\n"
        "    loss = net(nd.ones((8, 2))).sum()\n"
        "loss.backward()\n"
        "trainer.step(8)\n"
        "codes = nd.array(np.random.randn(16, 2))\n"
        "images = net(codes).asnumpy()\n"
        "plt.imshow(images[0].reshape(28, 28))\n"
    )
    assert check_source(source, "show.py", SETTINGS) == []
    saved = source + "nd.save('codes.nd', codes)\n"
    assert [(f.code, f.location.row) for f in check_source(saved, "show.py", SETTINGS)] == [
        ("MXL302", 24)
    ]
