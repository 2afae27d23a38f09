"""The contexts family (MXL201-MXL204): fixtures, fixes, data for --verify, traps."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from expectations import actual, expected

from mxlint.api import check_source
from mxlint.config import Settings
from mxlint.fixes import apply_edits

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "contexts"


def _check(source: str, mxnet: str = "1", select: str = "MXL2"):
    return check_source(
        textwrap.dedent(source), "script.py", Settings(select=(select,), mxnet_version=mxnet)
    )


def _rows(source: str, code: str, mxnet: str = "1") -> list[int]:
    return [f.location.row for f in _check(source, mxnet) if f.code == code]


@pytest.mark.parametrize("kind", ["bad", "good"])
def test_fixture_markers(kind: str) -> None:
    root = FIXTURES / kind
    assert expected(root) == actual(root, prefix="MXL2")


def test_bad_fixtures_cover_every_rule() -> None:
    codes = {code for _, _, code in expected(FIXTURES / "bad")}
    assert codes == {"MXL201", "MXL202", "MXL203", "MXL204"}


def test_unmoved_batch_fix_and_verify_data() -> None:
    source = textwrap.dedent("""\
        import mxnet as mx
        from mxnet import gluon

        def train(dataset):
            ctx = mx.gpu(1)
            net = gluon.nn.Dense(2)
            net.initialize(ctx=ctx)
            for x, y in gluon.data.DataLoader(dataset, batch_size=4):
                out = net(x * 2)
        """)
    findings = check_source(source, "script.py", Settings(select=("MXL201",)))
    assert [f.location.row for f in findings] == [9]
    finding = findings[0]
    assert finding.data == {"function": "script.train", "ctx": "ctx"}
    assert "as_in_context(ctx)" in finding.message
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    fixed = apply_edits(source, finding.fix.edits)
    assert "out = net((x * 2).as_in_context(ctx))" in fixed


def test_multi_gpu_message_recommends_split_and_load_without_fix() -> None:
    findings = _check("""\
        import mxnet as mx
        from mxnet import gluon, nd
        ctx = [mx.gpu(0), mx.gpu(1)]
        net = gluon.nn.Dense(2)
        net.initialize(ctx=ctx)
        net(nd.ones((2, 2)))
        """)
    assert [f.code for f in findings] == ["MXL201"]
    assert "split_and_load" in findings[0].message
    assert findings[0].fix is None


@pytest.mark.parametrize(
    "ctx_expr",
    [
        "mx.gpu()",
        "mx.Context('gpu', 0)",
        "mx.gpu(0) if mx.context.num_gpus() else mx.cpu()",
        "[mx.gpu(i) for i in range(2)]",
        "d2l.try_gpu()",
        "try_gpu()",
    ],
)
def test_possibly_gpu_contexts(ctx_expr: str) -> None:
    source = f"""\
        import mxnet as mx
        import d2l
        from mxnet import gluon, nd

        def try_gpu():
            return mx.gpu() if mx.context.num_gpus() else mx.cpu()

        ctx = {ctx_expr}
        net = gluon.nn.Dense(2)
        net.initialize(ctx=ctx)
        y = net(nd.ones((1, 2)))
        """
    assert _rows(source, "MXL201") == [11]


@pytest.mark.parametrize(
    "ctx_expr",
    [
        "mx.cpu()",
        "mx.Context('cpu', 0)",
        "[mx.cpu(0), mx.cpu(1)]",
        "[mx.cpu(0), mx.gpu(0)]",  # a copy lives on cpu(0)
        "args.ctx",
        "mx.context.current_context()",
    ],
)
def test_cpu_or_unknown_contexts_are_silent(ctx_expr: str) -> None:
    source = f"""\
        import mxnet as mx
        from mxnet import gluon, nd
        ctx = {ctx_expr}
        net = gluon.nn.Dense(2)
        net.initialize(ctx=ctx)
        y = net(nd.ones((1, 2)))
        print(net.weight.data())
        """
    assert _check(source) == []


def test_branches_join_conservatively() -> None:
    source = """\
        import mxnet as mx
        from mxnet import gluon, nd
        ctx = mx.gpu()
        net = gluon.nn.Dense(2)
        net.initialize(ctx=ctx)
        x = nd.ones((1, 2))
        if fast:
            x = x.as_in_context(ctx)
        net(x)
        """
    assert _check(source) == []
    try_source = """\
        import mxnet as mx
        from mxnet import gluon, nd
        try:
            ctx = mx.gpu()
            nd.zeros((1,), ctx=ctx)
        except mx.MXNetError:
            ctx = mx.cpu()
        net = gluon.nn.Dense(2)
        net.initialize(ctx=ctx)
        net(nd.ones((1, 2)))
        """
    assert _rows(try_source, "MXL201") == [10]


def test_module_level_net_is_seen_in_functions() -> None:
    source = """\
        import mxnet as mx
        from mxnet import gluon
        ctx = mx.gpu()
        net = gluon.nn.Dense(2)
        net.initialize(ctx=ctx)

        def evaluate(val_loader):
            for data, label in val_loader:
                print(net(data))

        def evaluate_ok(val_loader, net):
            for data, label in val_loader:
                print(net(data))
        """
    assert _rows(source, "MXL201") == [9]


def test_forward_creator_fix_and_requirement() -> None:
    source = textwrap.dedent("""\
        from mxnet import gluon, nd

        class Net(gluon.Block):
            def forward(self, x):
                return x + nd.ones((1, 4), dtype='float32')
        """)
    findings = check_source(source, "script.py", Settings(select=("MXL202",)))
    assert [f.location.row for f in findings] == [5]
    assert findings[0].data == {"function": "script.Net.forward", "ctx": "x.context"}
    assert findings[0].fix is not None
    fixed = apply_edits(source, findings[0].fix.edits)
    assert "nd.ones((1, 4), dtype='float32', ctx=x.context)" in fixed
    # a base class the run cannot see: not provably a Block, silent
    unknown = source.replace("gluon.Block", "thirdparty.Base")
    assert check_source(unknown, "script.py", Settings(select=("MXL202",))) == []


def test_forward_creator_in_project_subclass() -> None:
    base = "from mxnet import gluon\n\nclass Base(gluon.Block):\n    pass\n"
    source = (
        "from mxnet import nd\nfrom base import Base\n\n"
        "class Net(Base):\n    def forward(self, x):\n        return x * nd.ones((1,))\n"
    )
    findings = check_source(
        source, "script.py", Settings(select=("MXL202",)), project=[("base", base)]
    )
    assert [f.location.row for f in findings] == [6]


def test_mxnet2_hybridblock_forward_is_silent_but_block_is_not() -> None:
    source = """\
        from mxnet import gluon, np

        class A(gluon.HybridBlock):
            def forward(self, x):
                return x + np.zeros((1,))

        class B(gluon.Block):
            def forward(self, x):
                return x + np.zeros((1,))
        """
    assert _rows(source, "MXL202", mxnet="2") == [9]


def test_finetune_fix_adds_ctx() -> None:
    source = textwrap.dedent("""\
        import mxnet as mx
        from mxnet.gluon import nn
        from mxnet.gluon.model_zoo import vision
        ctx = mx.gpu()
        net = vision.resnet18_v1(pretrained=True, ctx=ctx)
        net.output = nn.Dense(3)
        net.output.initialize()
        """)
    findings = check_source(source, "script.py", Settings(select=("MXL203",)))
    assert [f.location.row for f in findings] == [7]
    fix = findings[0].fix
    assert fix is not None and fix.applicability == "unsafe"
    fixed = apply_edits(source, fix.edits)
    assert fixed.endswith("net.output.initialize(ctx=ctx)\n")


def test_new_layer_fed_gpu_features_is_mxl203_not_mxl201() -> None:
    source = """\
        import mxnet as mx
        from mxnet import gluon, nd
        ctx = mx.gpu()
        body = gluon.nn.Dense(8)
        body.initialize(ctx=ctx)
        head = gluon.nn.Dense(2)
        head.initialize()
        x = nd.ones((1, 4), ctx=ctx)
        y = head(body(x))
        """
    findings = _check(source)
    assert [(f.code, f.location.row) for f in findings] == [("MXL203", 7)]


def test_param_data_fix() -> None:
    source = textwrap.dedent("""\
        import mxnet as mx
        from mxnet import gluon
        devs = [mx.gpu(0), mx.gpu(1)]
        net = gluon.nn.Dense(4)
        net.initialize(ctx=devs)
        params = net.collect_params()
        for p in params.values():
            p.grad()
        """)
    findings = check_source(source, "script.py", Settings(select=("MXL204",)))
    assert [f.location.row for f in findings] == [8]
    fix = findings[0].fix
    assert fix is not None
    assert apply_edits(source, fix.edits).endswith("p.grad(devs[0])\n")


def test_ignore_is_respected() -> None:
    source = """\
        import mxnet as mx
        from mxnet import gluon, nd
        ctx = mx.gpu()
        net = gluon.nn.Dense(2)
        net.initialize(ctx=ctx)
        net(nd.ones((1, 2)))
        """
    assert _rows(source, "MXL201") == [6]
    findings = check_source(
        textwrap.dedent(source), "script.py", Settings(select=("MXL2",), ignore=("MXL201",))
    )
    assert findings == []


def test_mxnet2_spelling_uses_to_device() -> None:
    source = textwrap.dedent("""\
        from mxnet import gluon, np, npx
        npx.set_np()
        device = npx.gpu(0) if npx.num_gpus() else npx.cpu()
        net = gluon.nn.Dense(3)
        net.initialize(device=device)
        x = np.random.uniform(size=(2, 4))
        y = net(x)
        z = net(np.ones((2, 4), device=device))
        """)
    findings = check_source(source, "script.py", Settings(select=("MXL201",)))
    assert [f.location.row for f in findings] == [7]
    assert "x.to_device(device)" in findings[0].message
    fix = findings[0].fix
    assert fix is not None
    assert "y = net(x.to_device(device))" in apply_edits(source, fix.edits)


def test_reinitialising_a_placed_network_is_a_no_op() -> None:
    source = """\
        import mxnet as mx
        from mxnet import gluon, nd
        from mxnet.gluon.model_zoo import vision
        net = vision.resnet18_v1(pretrained=True)
        net.initialize(ctx=mx.gpu())
        print(net(nd.ones((1, 3, 224, 224))))
        """
    assert _check(source) == []


def test_a_context_placed_under_a_name_the_method_lacks_is_not_spelled_with_it(fixtures_dir):
    """The network was placed in `__init__` on its `ctx` parameter; the method that feeds it
    has no `ctx`: the message says so instead of suggesting a name that is not there."""
    path = fixtures_dir / "contexts" / "bad" / "trainer_object_keeps_no_ctx.py"
    findings = check_source(path.read_text(), path.name, Settings(select=("MXL201",)))
    assert [(f.code, f.location.row) for f in findings] == [("MXL201", 18)]
    assert "(`ctx` where they were placed)" in findings[0].message
    assert "`self.ctx = ctx`" in findings[0].message
    assert findings[0].fix is None


def test_a_batch_handed_over_as_one_tuple_is_unpacked_by_the_callee() -> None:
    """`learner.step((data, label))`: the tuple's arrays are what `step` unpacks (and indexes);
    a tuple of moved arrays, or one whose arrays are unknown, says nothing."""
    source = """\
        import mxnet as mx
        from mxnet import gluon


        class Learner:
            def __init__(self, net, ctx):
                self.net = net
                self.net.initialize(ctx=ctx)

            def step(self, batch):
                data, label = batch
                return self.net(data)

            def first(self, batch):
                return self.net(batch[0])

            def last(self, batch):
                return self.net(batch[-1])


        def main(train_loader, ctx=mx.gpu(0)):
            learner = Learner(gluon.nn.Dense(1), ctx)
            for data, label in train_loader:
                learner.step((data, label))
                learner.first((data, label))
                learner.last((data.as_in_context(ctx), label.as_in_context(ctx)))
        """
    assert [(f.code, f.location.row) for f in _check(source)] == [
        ("MXL201", 12),
        ("MXL201", 15),
    ]


def test_a_method_called_through_self_holds_what_its_caller_passes() -> None:
    source = """\
        import mxnet as mx
        from mxnet import gluon


        class Solver:
            def __init__(self, ctx=mx.gpu(0)):
                self.ctx = ctx
                self.net = gluon.nn.Dense(10)
                self.net.initialize(ctx=self.ctx)

            def train_step(self, x):
                return self.net(x)

            def predict(self, x):
                return self.net(x)

            def fit(self, train_data):
                for x, y in train_data:
                    self.train_step(x)
                    self.predict(x.as_in_context(self.ctx))
        """
    assert [(f.code, f.location.row) for f in _check(source)] == [("MXL201", 12)]


def test_a_loss_is_computed_where_its_prediction_is() -> None:
    """The value of a loss of a GPU prediction is on the GPU: a cpu mask scaling it, or cpu
    class weights indexed by a GPU label, mix contexts; reading it into Python does not."""
    source = """\
        import mxnet as mx
        from mxnet import gluon, nd

        ctx = mx.gpu(0)
        WEIGHTS = nd.array([1.0, 2.0])
        net = gluon.nn.Dense(2)
        net.initialize(ctx=ctx)
        loss_fn = gluon.loss.L2Loss()


        def step(train_loader):
            mask = nd.ones((8,))
            for x, y in train_loader:
                x, y = x.as_in_context(ctx), y.as_in_context(ctx)
                loss = loss_fn(net(x), y)
                a = loss * mask
                b = WEIGHTS.take(y)
                c = nd.ones((1,)) + loss.mean().asscalar()
                d = nd.ones((8,), ctx=ctx) * loss
        """
    assert [(f.code, f.location.row) for f in _check(source)] == [
        ("MXL201", 16),
        ("MXL201", 17),
    ]


def test_a_child_block_computes_where_its_input_was_moved() -> None:
    source = """\
        import mxnet as mx
        from mxnet import gluon

        ctx = mx.gpu(0)
        net = gluon.model_zoo.vision.resnet18_v1(pretrained=True, ctx=ctx)
        head = gluon.nn.Dense(2)
        head.initialize()
        for x, _ in gluon.data.DataLoader(dataset, batch_size=4):
            out = head(net.features(x.as_in_context(ctx)))
        """
    assert [(f.code, f.location.row) for f in _check(source)] == [("MXL203", 7)]


def test_what_a_function_of_the_file_returns_for_an_array_on_the_cpu() -> None:
    """`data = prepare(img)`: the function is read with the array it is given; a function that
    moves it, one whose result is unknown on some path, and a generator say nothing."""
    source = """\
        import mxnet as mx
        from mxnet import gluon, nd


        def prepare(img):
            return nd.transpose(img, (2, 0, 1)).expand_dims(0)


        def moved(img, ctx=mx.gpu(0)):
            return img.as_in_context(ctx)


        def maybe(img, flag):
            if flag:
                return img
            return lookup(img)


        def batches(img):
            yield img


        def main(path, flag):
            ctx = mx.gpu(0)
            net = gluon.nn.SymbolBlock.imports("m-symbol.json", ["data"], "m-0000.params", ctx=ctx)
            img = mx.image.imread(path)
            a = net(prepare(img))
            b = net(moved(img))
            c = net(maybe(img, flag))
            for x in batches(img):
                d = net(x)
        """
    findings = _check(source)
    assert [(f.code, f.location.row) for f in findings] == [("MXL201", 27)]
    assert "returned by `prepare()`" in findings[0].message


HELPERS = """\
from mxnet import gluon, nd


def make_mask(lengths, max_len):
    mask = nd.zeros((len(lengths), max_len))
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
    return mask


def make_mask_on(lengths, max_len, ctx):
    return nd.zeros((len(lengths), max_len), ctx=ctx)


def loaders(dataset):
    return gluon.data.DataLoader(dataset, 32)
"""

TRAIN = """\
import mxnet as mx
from mxnet import gluon
from utils import loaders, make_mask, make_mask_on

ctx = mx.gpu(0)
net = gluon.nn.Dense(5, flatten=False)
net.initialize(ctx=ctx)
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
for data, label, lengths in loaders(dataset):
    data = data.as_in_context(ctx)
    label = label.as_in_context(ctx)
    out = net(data)
    a = loss_fn(out, label, make_mask(lengths, 20).expand_dims(-1))
    b = loss_fn(out, label, make_mask_on(lengths, 20, ctx).expand_dims(-1))
    c = out * make_mask(lengths, 20)
"""


def test_an_array_another_file_makes_without_ctx() -> None:
    """`make_mask` (in `utils`) makes its array on the cpu: the run shows it; `make_mask_on`
    takes the context, and `loaders` returns no array. Without `utils` in the run, nothing."""
    settings = Settings(select=("MXL201",))
    found = check_source(TRAIN, "train.py", settings, (("utils", HELPERS),))
    assert [(f.code, f.location.row) for f in found] == [("MXL201", 13), ("MXL201", 15)]
    assert "from `make_mask()`" in found[0].message
    assert check_source(TRAIN, "train.py", settings) == []


def test_a_network_a_builder_places_on_the_context_it_is_given() -> None:
    """`net = get_net(device)`: the builder is read with the context the call passes; the
    network it returns is placed there, spelled as the caller spells it."""
    source = """\
        import mxnet as mx
        from mxnet import gluon


        def get_net(ctx):
            net = gluon.nn.Dense(10)
            net.initialize(ctx=ctx)
            return net


        def main(train_loader):
            device = mx.gpu(0)
            net = get_net(device)
            other = get_net(device)
            other.collect_params().reset_ctx(mx.cpu())
            for x, _ in train_loader:
                out = net(x)
                fine = other(x)
        """
    findings = _check(source)
    assert [(f.code, f.location.row) for f in findings] == [("MXL201", 17)]
    assert "on `device`" in findings[0].message


def test_weights_beside_a_slice_of_a_split_batch_are_worded_as_weights() -> None:
    source = """\
        import mxnet as mx
        from mxnet import gluon, nd

        ctx = [mx.gpu(i) for i in range(4)]
        net = gluon.nn.Dense(10)
        net.initialize(ctx=ctx)
        loss_fn = gluon.loss.L2Loss()
        weights = nd.ones((16,))
        for data, label in gluon.data.DataLoader(dataset, batch_size=64):
            xs = gluon.utils.split_and_load(data, ctx)
            ys = gluon.utils.split_and_load(label, ctx)
            ls = [loss_fn(net(x), y, weights) for x, y in zip(xs, ys)]
        """
    (finding,) = _check(source)
    assert (finding.code, finding.location.row) == ("MXL201", 12)
    assert "weighs a prediction on one of the contexts of `ctx` by `weights`" in finding.message


def test_a_layer_appended_to_a_loaded_network_and_initialised_by_index() -> None:
    source = """\
        import mxnet as mx
        from mxnet.gluon import nn

        def grow(net, f):
            net.load_parameters(f, ctx=mx.gpu(0))
            net.add(nn.Dense(10))
            net[-1].initialize()
            return net

        def grow_on_ctx(net, f):
            net.load_parameters(f, ctx=mx.gpu(0))
            net.add(nn.Dense(10))
            net[-1].initialize(ctx=mx.gpu(0))
            return net

        def older_layer(net, f):
            net.load_parameters(f, ctx=mx.gpu(0))
            net.add(nn.Dense(10), nn.Dense(2))
            net[-3].initialize()
            return net
        """
    findings = _check(source)
    assert [(f.code, f.location.row) for f in findings] == [("MXL203", 7)]
    assert "`net[-1].initialize()` has no `ctx`" in findings[0].message


def test_a_helper_given_an_array_its_caller_moved_to_a_gpu() -> None:
    source = """\
        import mxnet as mx
        from mxnet import nd

        OFFSET = nd.array([1.0, 2.0])


        def shift(batch):
            return batch + OFFSET


        def shift_cpu(batch):
            return batch + OFFSET


        def run(loader):
            gpu = mx.gpu(0)
            for x in loader:
                shift(x.as_in_context(gpu))
                shift_cpu(x)
        """
    findings = _check(source, select="MXL201")
    assert [(f.code, f.location.row) for f in findings] == [("MXL201", 8)]
    assert "`OFFSET.as_in_context(batch.context)`" in findings[0].message


def test_parameters_read_in_a_dict_comprehension() -> None:
    source = """\
        import mxnet as mx
        from mxnet import gluon

        ctxs = [mx.gpu(0), mx.gpu(1)]
        net = gluon.nn.Dense(2, in_units=3)
        net.initialize(ctx=ctxs)
        norms = {k: p.data().norm() for k, p in net.collect_params().items()}
        grads = {k: p.grad(ctxs[0]) for k, p in net.collect_params().items()}
        """
    assert _rows(source, "MXL204") == [7]
