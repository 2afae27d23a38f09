"""The semantic model: function effects (in one file and across the files of a run) and the
program model (which modules other files import, which are installed as commands)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from mxlint.api import check_paths
from mxlint.config import Settings
from mxlint.context import _prepass_imports
from mxlint.names import ImportMap
from mxlint.semantic.effects import RETURNED, Effects, FileEffects
from mxlint.semantic.program import ImportGraph, console_script_modules

HELPERS = """
import mxnet as mx
from mxnet import autograd
from pkg.tools import remote

def to_float(loss):
    return loss.mean().asscalar()

def via_helper(loss):
    return to_float(loss) * 2

def cast(args):
    return float(args.lr)

def cast_param(x):
    return float(x)

def keep(loss):
    return loss.mean()

def wait():
    mx.nd.waitall()

def build():
    net = mx.gluon.nn.Dense(2)
    net.initialize()
    net.hybridize()
    return net

def prepare(net):
    net.hybridize(static_alloc=True)

def evaluate(net, data):
    with autograd.pause(train_mode=False):
        for x in data:
            net(x)

def evaluate_half(net, data):
    with autograd.predict_mode():
        net(data[0])
    return net(data[1])

def outside(loss):
    return remote(loss)

def metric_step(metric, label, out):
    metric.update([label], [out])

def module_step(mod, metric, batch):
    mod.update_metric(metric, batch.label)

class Trainer:
    def step(self, loss):
        return loss.asnumpy()
"""


def _effects(source: str) -> FileEffects:
    module = cst.parse_module(textwrap.dedent(source))
    imports = ImportMap("pkg.helpers")
    _prepass_imports(module, imports)
    return FileEffects(module, imports)


@pytest.mark.parametrize(
    ("name", "syncs"),
    [
        ("to_float", True),
        ("via_helper", True),  # through a function of the same file
        ("cast", False),  # float() of a config attribute is no readback
        ("cast_param", True),
        ("keep", False),
        ("wait", True),
        ("build", False),
        ("outside", False),  # the other file decides (see the run tests)
        ("metric_step", True),
        ("module_step", True),
        ("Trainer.step", True),
    ],
)
def test_synchronisation(name: str, syncs: bool) -> None:
    effects = _effects(HELPERS).of(name)
    assert effects is not None
    assert effects.syncs is syncs


def test_hybridization_and_inference() -> None:
    fe = _effects(HELPERS)
    assert fe.of("build") == Effects(hybridizes=frozenset({RETURNED}))
    assert fe.of("prepare") == Effects(hybridizes=frozenset({"net"}))
    assert fe.of("evaluate") == Effects(inference=True)
    # One forward pass outside the paused block records.
    # it returns what the network computes outside the pause: a forward helper too
    assert fe.of("evaluate_half") == Effects(
        inference=False, returns_forward=True, runs_forward=True
    )
    assert fe.of("outside") is not None
    assert fe.of("outside").external == ("pkg.tools.remote",)  # type: ignore[union-attr]
    assert fe.of("missing") is None


def test_calls_resolve_to_local_effects_or_project_names() -> None:
    fe = _effects(HELPERS)
    calls = cst.parse_module("to_float(x)\nremote(x)\nmx.nd.relu(x)\nunknown(x)\n").body
    found = [fe.of_call(s.body[0].value) for s in calls]  # type: ignore[attr-defined]
    assert found[0] == Effects(syncs=True)
    assert found[1] == "pkg.tools.remote"
    assert found[2] is None  # a library: not the project's
    assert found[3] is None  # unknown


def test_import_graph() -> None:
    graph = ImportGraph(
        [
            ("train", "rec/train.py", ["image_iter.FaceIter", "mxnet"]),
            ("pkg", "src/pkg/__init__.py", ["pkg.app.renderer.Renderer"]),
            ("pkg.app.renderer", "src/pkg/app/renderer.py", ["numpy"]),
            ("solo", "solo.py", ["solo.x"]),
        ]
    )
    assert graph.is_imported("pkg.app.renderer", "src/pkg/app/renderer.py")
    # A top-level module is found by the files of its own folder only.
    assert graph.is_imported("image_iter", "rec/image_iter.py")
    assert not graph.is_imported("image_iter", "other/image_iter.py")
    assert not graph.is_imported("train", "rec/train.py")
    assert not graph.is_imported("pkg.other", "src/pkg/other.py")
    # A module importing itself is not imported by another file.
    assert not graph.is_imported("solo", "solo.py")


def test_console_scripts(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text(
        "setup(entry_points={'console_scripts': ['tool-knn = tool.knn:main']})\n"
    )
    (tmp_path / "pyproject.toml").write_text('[project.scripts]\ntrain = "tool.train:cli"\n')
    assert console_script_modules(tmp_path) == {"tool.knn", "tool.train"}
    assert console_script_modules(tmp_path / "missing") == frozenset()


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


LOOP = """
import time
from mxnet import autograd
from tools import value

def train(net, train_data, trainer, loss_fn):
    tic = time.time()
    for data, label in train_data:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(1)
        value(loss)
    return time.time() - tic
"""


@pytest.mark.parametrize(
    ("helper", "found"),
    [
        ("def value(loss):\n    return loss.asscalar()\n", []),
        ("def value(loss):\n    return inner(loss)\n\ndef inner(x):\n    return x.asnumpy()\n", []),
        ("def value(loss):\n    return loss.mean()\n", [("train.py", 14, "MXL601")]),
    ],
)
def test_a_helper_in_another_file_decides(tmp_path: Path, helper: str, found: list) -> None:
    _write(tmp_path, {"train.py": LOOP, "tools.py": "import mxnet as mx\n\n" + helper})
    result = check_paths([tmp_path], Settings(root=tmp_path))
    got = [(Path(f.filename).name, f.location.row, f.code) for f in result.findings]
    assert got == found


@pytest.mark.parametrize(
    ("helper", "found"),
    [
        ("def value(loss):\n    loss.wait_to_read()\n", []),
        ("def value(loss):\n    return float(loss.mean())\n", []),
        ("def value(loss):\n    return loss.mean()\n", [("train.py", 14, "MXL601")]),
    ],
)
def test_a_helper_in_a_file_that_names_nothing_of_mxnet_is_followed(
    tmp_path: Path, helper: str, found: list
) -> None:
    """Such a file is not parsed on its own (nothing in it to report); a call into it is
    followed by parsing it then."""
    _write(tmp_path, {"train.py": LOOP, "tools.py": helper})
    result = check_paths([tmp_path], Settings(root=tmp_path))
    got = [(Path(f.filename).name, f.location.row, f.code) for f in result.findings]
    assert got == found


@pytest.mark.parametrize(
    ("beside", "elsewhere", "found"),
    [
        ("loss.asscalar()", "loss.mean()", []),
        ("loss.mean()", "loss.asscalar()", [("a/train.py", 14, "MXL601")]),
    ],
)
def test_a_name_two_folders_define_is_the_one_beside_the_importer(
    tmp_path: Path, beside: str, elsewhere: str, found: list[tuple[str, int, str]]
) -> None:
    # Two script folders each with their own `tools.value`: `a/train.py` imports its own (the
    # script's folder is first on Python's path), whatever the other one does.
    _write(
        tmp_path,
        {
            "a/train.py": LOOP,
            "a/tools.py": f"import mxnet as mx\n\ndef value(loss):\n    return {beside}\n",
            "b/tools.py": f"import mxnet as mx\n\ndef value(loss):\n    return {elsewhere}\n",
        },
    )
    result = check_paths([tmp_path], Settings(root=tmp_path))
    rows = [
        (
            Path(f.filename).resolve().relative_to(tmp_path.resolve()).as_posix(),
            f.location.row,
            f.code,
        )
        for f in result.findings
    ]
    assert rows == found


SMOKE = """
import numpy as np
import mxnet as mx

def jitter(x):
    return x * np.random.uniform(0.9, 1.1)

if __name__ == "__main__":
    with mx.autograd.record():
        print(jitter(mx.nd.array(np.random.uniform(size=(2, 2)))))
"""


@pytest.mark.parametrize(
    ("extra", "reported"),
    [
        ({}, True),  # nothing imports it: a program
        ({"train.py": "import mxnet\nfrom aug import jitter\n"}, False),  # a library module
        (  # imported, but installed as a command: a program
            {
                "train.py": "import mxnet\nfrom aug import jitter\n",
                "setup.py": "setup(entry_points={'console_scripts': ['aug = aug:main']})\n",
            },
            True,
        ),
    ],
)
def test_a_main_block_of_an_imported_module_is_a_smoke_test(
    tmp_path: Path, extra: dict[str, str], reported: bool
) -> None:
    _write(tmp_path, {"aug.py": SMOKE, **extra})
    result = check_paths([tmp_path], Settings(root=tmp_path, select=("MXL3",)))
    got = [(Path(f.filename).name, f.code) for f in result.findings]
    assert got == ([("aug.py", "MXL302")] if reported else [])


BUILDERS = """
from mxnet import gluon
from pkg import remote

def plain():
    net = gluon.nn.HybridSequential()
    return net

def hybrid():
    net = plain()
    net.hybridize()
    return net

def delegates():
    net = hybrid()
    return net

def prepare(block):
    block.initialize()
    finish(block)

def finish(block):
    block.hybridize(static_alloc=True)

def handed():
    net = plain()
    prepare(net)
    return net

def switched_off():
    net = plain()
    net.hybridize(active=False)
    return net

def from_parameter(factory):
    return factory()

def other_file():
    return remote.build()

def customised():
    net = plain()
    net.tune()
    return net

class Net(gluon.HybridBlock):
    def __init__(self):
        super().__init__()
        self.setup()

    def setup(self):
        self.hybridize()

class Plain(gluon.HybridBlock):
    pass

class Maker:
    def make(self):
        return Net()

    def make_plain(self):
        return Plain()
"""


@pytest.mark.parametrize(
    ("name", "verdict"),
    [
        ("plain", False),
        ("hybrid", True),
        ("delegates", True),  # returns what a hybridizing builder returned
        ("handed", True),  # handed to a helper that hybridizes its parameter (two levels)
        ("switched_off", False),
        ("from_parameter", None),  # made by a callable the caller chooses
        ("other_file", None),  # another file's: the run answers
        ("customised", None),  # an unknown method may hybridize it
        ("Maker.make", True),  # a class whose constructor hybridizes itself (via a method)
        ("Maker.make_plain", False),
    ],
)
def test_what_comes_back_hybridized(name: str, verdict: bool | None) -> None:
    assert _effects(BUILDERS).result_hybridized(name) is verdict


def test_parameters_hybridized_through_helpers() -> None:
    fe = _effects(BUILDERS)
    assert fe.param_hybridized("prepare", 0) is True
    assert fe.param_hybridized("prepare", "block") is True
    assert fe.param_hybridized("plain", 0) is None  # no such parameter


def test_builders_followed_across_files(tmp_path: Path) -> None:
    tools = "import mxnet as mx\n\n\ndef prepare(net):\n    net.initialize(mx.cpu())\n"
    (tmp_path / "tools.py").write_text(tools + "    net.hybridize()\n", encoding="utf-8")
    (tmp_path / "zoo.py").write_text(
        "from mxnet import gluon\nimport tools\n\n\n"
        "def build():\n    net = gluon.nn.Dense(2)\n    tools.prepare(net)\n    return net\n\n\n"
        "def wrapped():\n    return build()\n",
        encoding="utf-8",
    )
    (tmp_path / "run.py").write_text(
        "import mxnet as mx\nfrom zoo import wrapped\n\n"
        "net = wrapped()\nnet.collect_params()\nnet(mx.nd.ones((1, 2)))\nnet.export('m')\n",
        encoding="utf-8",
    )
    settings = Settings(select=("MXL701",), root=tmp_path)
    assert check_paths([tmp_path], settings).findings == []
    (tmp_path / "tools.py").write_text(tools, encoding="utf-8")
    found = check_paths([tmp_path], settings).findings
    assert [(Path(f.filename).name, f.location.row, f.code) for f in found] == [
        ("run.py", 7, "MXL701")
    ]


def test_a_module_imported_through_namespace_packages_is_a_library(tmp_path: Path) -> None:
    """`from tools.augment.aug import jitter` in a script finds `tools/augment/aug.py` from the
    script's folder although neither directory has an `__init__.py`."""
    files = {"tools/augment/aug.py": SMOKE}
    _write(tmp_path, files)
    alone = check_paths([tmp_path], Settings(root=tmp_path, select=("MXL3",)))
    assert [(Path(f.filename).name, f.code) for f in alone.findings] == [("aug.py", "MXL302")]
    _write(tmp_path, {"run.py": "import mxnet\nfrom tools.augment.aug import jitter\n"})
    imported = check_paths([tmp_path], Settings(root=tmp_path, select=("MXL3",)))
    assert imported.findings == []


RECORDING = """
from mxnet import autograd


def loss_of(net, loss_fn, x, y):
    with autograd.record():
        return loss_fn(net(x), y)


def step(net, loss_fn, x, y):
    loss = loss_of(net, loss_fn, x, y)
    loss.backward()


def log(metric, y, out):
    metric.update(y, out)


class Learner:
    def forward(self, x):
        out = self.model(x)
        return out
"""


def test_what_recording_helpers_do() -> None:
    fe = _effects(RECORDING)
    assert fe.of("loss_of").records and fe.of("loss_of").runs_forward
    # Recording carries over to a caller, as synchronising does.
    assert fe.of("step").records and not fe.of("step").runs_forward
    assert fe.of("log").updates_metric == frozenset({"metric"})
    assert fe.of("Learner.forward").returns_own_forward
    assert not fe.of("loss_of").returns_own_forward
