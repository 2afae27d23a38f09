"""The hybridization family (MXL101-MXL108): fixtures, taint flow, ancestry, helpers, guards."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from expectations import actual, expected

from mxlint.api import check_source
from mxlint.config import Settings
from mxlint.fixes import apply_edits
from mxlint.rules.hybridization._taint import Hooks, Interpreter, Kind, join

HEADER = "from mxnet import nd, autograd\nfrom mxnet.gluon import nn\n"


def _check(
    source: str,
    project: tuple[tuple[str, str], ...] = (),
    mxnet: str = "1",
    filename: str = "model.py",
) -> list[tuple[int, str]]:
    findings = check_source(
        textwrap.dedent(source), filename, Settings(select=("MXL1",), mxnet_version=mxnet), project
    )
    return sorted((f.location.row, f.code) for f in findings)


def _dedent(text: str) -> str:
    return textwrap.dedent(text)


# --- fixtures ---------------------------------------------------------------------------------


def test_bad_fixtures_report_exactly_the_marked_lines(fixtures_dir):
    root = fixtures_dir / "hybridization" / "bad"
    marks = expected(root)
    assert len(marks) >= 20
    assert {code for _, _, code in marks} >= {f"MXL1{i:02d}" for i in range(1, 19)}
    assert actual(root, prefix="MXL1") == marks


def test_good_fixtures_are_silent(fixtures_dir):
    root = fixtures_dir / "hybridization" / "good"
    assert expected(root) == set()
    assert actual(root, prefix="MXL1") == set()


# --- the taint interpreter --------------------------------------------------------------------


class _Recorder(Hooks):
    def __init__(self) -> None:
        self.tests: list[tuple[str, Kind]] = []

    def test(self, node: cst.BaseExpression, kind: Kind) -> None:
        self.tests.append((cst.Module([]).code_for_node(node), kind))


def _tests_of(body: str, env: dict[str, Kind]) -> list[tuple[str, Kind]]:
    fn = cst.parse_module(_dedent(body)).body[0]
    assert isinstance(fn, cst.FunctionDef)
    hooks = _Recorder()
    Interpreter(hooks, env).block(fn.body)
    return hooks.tests


def test_reassignment_to_a_python_value_clears_taint():
    tests = _tests_of(
        """
        def f(x):
            y = x * 2
            if y > 0:
                pass
            y = 3
            if y > 0:
                pass
    """,
        {"x": Kind.TENSOR},
    )
    assert tests == [("y > 0", Kind.TENSOR), ("y > 0", Kind.PYTHON)]


def test_none_checks_narrow_optional_tensors():
    tests = _tests_of(
        """
        def f(x, mask):
            if mask is None:
                return x
            if mask.sum() > 0:
                pass
    """,
        {"x": Kind.TENSOR, "mask": Kind.OPTIONAL},
    )
    assert tests == [("mask is None", Kind.PYTHON), ("mask.sum() > 0", Kind.TENSOR)]


def test_branches_join_and_loops_reach_a_fixpoint():
    tests = _tests_of(
        """
        def f(x, n):
            h = None
            for i in range(n):
                h = x + i
            if h:
                pass
            if i:
                pass
    """,
        {"x": Kind.TENSOR, "n": Kind.PYTHON},
    )
    assert tests == [("h", Kind.OPTIONAL), ("i", Kind.UNKNOWN)]
    assert join(Kind.TENSOR, Kind.PYTHON) is Kind.UNKNOWN
    assert join(Kind.TENSOR, Kind.MAYBE_GROUP) is Kind.MAYBE_GROUP


def test_identity_isinstance_and_len_are_python_values():
    tests = _tests_of(
        """
        def f(x):
            if x is not None and isinstance(x, list) and len(x) > 1:
                pass
    """,
        {"x": Kind.TENSOR},
    )
    assert all(kind is Kind.PYTHON for _, kind in tests)


# --- flow inside hybrid_forward ---------------------------------------------------------------


def test_taint_flows_through_operators_methods_children_and_slices():
    src = HEADER + _dedent("""
        class Net(nn.HybridBlock):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                self.dense = nn.Dense(4)
                self.flag = True

            def hybrid_forward(self, F, x, weight, bias=None, eps=1e-5):
                a = self.dense(x).reshape((0, -1)).T
                if a.sum() > eps:
                    pass
                b = F.relu(weight)[1:]
                if b:
                    pass
                if self.flag and eps > 0 and bias is None:
                    pass
                return a
        """)
    # `.T` is an NDArray property a 1.x Symbol lacks (AttributeError once hybridized).
    assert _check(src) == [(11, "MXL103"), (12, "MXL101"), (14, "MXL104"), (15, "MXL101")]


def test_arrays_built_from_python_values_are_reported_where_they_are_built():
    # `nd.linspace(...)` is an NDArray in both modes: the operators, members and reshapes of
    # what it built receive no Symbol (the creation is the finding); once it meets a block
    # input, the result is a tensor again.
    src = HEADER + _dedent("""
        class Net(nn.HybridBlock):
            def hybrid_forward(self, F, x):
                ind = nd.linspace(0, 9, 10, ctx=x.context, dtype="float32")
                ind = nd.repeat(ind * 2, repeats=3)
                ind = ind.reshape(3, 10)
                n = ind.shape[0]
                if ind[0].sum() > 0:
                    pass
                y = nd.relu(x + ind)
                return y
        """)
    assert _check(src) == [(6, "MXL103"), (6, "MXL105"), (12, "MXL105")]


def test_messages_suggest_the_rewrite_and_never_cond():
    src = HEADER + _dedent("""
        class Net(nn.HybridBlock):
            def hybrid_forward(self, F, x):
                if x.sum() > 0:
                    x = -x
                return x[0], x.shape
        """)
    findings = check_source(src, "model.py", Settings(select=("MXL1",)))
    by_code = {f.code: f.message for f in findings}
    assert "F.where" in by_code["MXL101"]
    assert "F.slice_axis" in by_code["MXL104"] and "selects an output" in by_code["MXL104"]
    assert "constructor argument" in by_code["MXL103"]
    assert not any("contrib.cond" in m or "while_loop" in m for m in by_code.values())
    assert all(
        f.data == {"class": "model.Net", "method": "hybrid_forward", "file": "model.py"}
        for f in findings
    )
    assert all(f.symbol == "Net.hybrid_forward" for f in findings)


def test_imperative_guards_silence_their_branch_only():
    src = (
        HEADER
        + "import mxnet as mx\n"
        + _dedent("""
        class Net(nn.HybridBlock):
            def hybrid_forward(self, F, x):
                if F is nd:
                    print(x.asnumpy())
                else:
                    print(x)
                if F is mx.sym:
                    y = x
                else:
                    y = nd.relu(x)
                if isinstance(x, mx.nd.NDArray):
                    assert x.sum() > 0
                if not isinstance(x, mx.sym.Symbol):
                    print(len(x))
                return x.asnumpy()
        """)
    )
    assert _check(src) == [(10, "MXL106"), (19, "MXL102")]


def test_mxnet2_forward_is_checked_only_in_hybrid_blocks():
    src = _dedent("""
        from mxnet import np, npx
        from mxnet.gluon import nn

        class Net(nn.HybridBlock):
            def forward(self, x):
                if np.sum(x) > 0:
                    x = -x
                return x[0] + len(x) + x.shape[0]

        class Eager(nn.Block):
            def forward(self, x):
                if np.sum(x) > 0:
                    x = -x
                return x
        """)
    assert _check(src, mxnet="2") == [(7, "MXL101")]
    # In MXNet 1.x a HybridBlock's `forward` override is not hybridized.
    assert _check(src, mxnet="1") == []


# --- ancestry across files ----------------------------------------------------------------------


BASES = _dedent("""
    from mxnet.gluon import nn

    class HybridBase(nn.HybridBlock):
        pass

    class Mid(HybridBase):
        pass

    class PlainBase(nn.Block):
        pass
    """)

SUB = HEADER + _dedent("""
    from .bases import {base}

    class Net({base}):
        def hybrid_forward(self, F, x):
            return x.asnumpy()
    """)


@pytest.mark.parametrize(
    ("base", "expected_codes"),
    [
        ("Mid", [(8, "MXL102")]),
        ("HybridBase", [(8, "MXL102")]),
        ("PlainBase", []),
    ],
)
def test_ancestry_is_followed_across_files(base, expected_codes):
    src = SUB.format(base=base)
    assert _check(src, project=(("bases", BASES),)) == expected_codes


def test_unknown_ancestry_with_hybrid_forward_is_treated_as_hybrid():
    src = HEADER + _dedent("""
        from somewhere_else import Base

        class Net(Base):
            def hybrid_forward(self, F, x):
                return x.asnumpy()
        """)
    assert _check(src) == [(8, "MXL102")]


NETWORKS = HEADER + _dedent("""
    class Base(nn.HybridBlock):
        def hybrid_forward(self, F, x):
            return x.reshape((x.shape[0], -1))

    class Net(Base):
        pass
    """)

ESTIMATOR = _dedent("""
    from trainers import Trainer
    from networks import {name}

    def fit(batches, trainer=Trainer(hybridize={flag})):
        net = {name}()
        net.initialize()
        trainer(net, batches)
    """)


@pytest.mark.parametrize(
    ("name", "flag", "others", "expected_codes"),
    [
        # Built only where training says hybridize=False: it runs imperatively by design,
        # for the subclass and the base class whose forward it inherits.
        ("Net", "False", (), []),
        ("Base", "False", (), []),
        # Trained hybridized, or hybridized by another file that builds it: reported.
        ("Net", "True", (), [(6, "MXL103")]),
        (
            "Net",
            "False",
            (("bench", "from networks import Net\nNet().hybridize()\n"),),
            [(6, "MXL103")],
        ),
    ],
)
def test_blocks_the_project_trains_with_hybridize_false_are_not_checked(
    name, flag, others, expected_codes
):
    project = (("estimator", ESTIMATOR.format(name=name, flag=flag)), *others)
    assert _check(NETWORKS, project=project, filename="networks.py") == expected_codes


# --- helpers, transitively and across files -----------------------------------------------------


def test_transitive_cross_file_helper_names_the_helper_and_location():
    src = HEADER + _dedent("""
        from .utils import scale

        class Net(nn.HybridBlock):
            def hybrid_forward(self, F, x):
                y = F.relu(x)
                z = scale(F, y, 3)
                return scale(F, z, self.k) if False else z
        """)
    utils = "from .ops import peak\n\ndef scale(F, v, k):\n    return F.relu(v) * k / peak(v)\n"
    ops = "def peak(t):\n    m = t.max()\n    return m.asscalar()\n"
    findings = check_source(
        src, "model.py", Settings(select=("MXL1",)), (("utils", utils), ("ops", ops))
    )
    hits = [f for f in findings if f.code == "MXL102"]
    assert [f.location.row for f in hits] == [9, 10]
    assert "`scale()`" not in hits[0].message or "ops.py:3" in hits[0].message
    assert "ops.py:3" in hits[0].message and "`.asscalar()`" in hits[0].message
    assert hits[0].data["helper"] == "utils.scale"


def test_helper_breaks_depend_on_which_arguments_are_tensors():
    src = HEADER + _dedent("""
        class Net(nn.HybridBlock):
            def __init__(self, size=4, **kwargs):
                super().__init__(**kwargs)
                self.size = size

            def hybrid_forward(self, F, x):
                a = self.count(self.size)
                b = self.count(x)
                return x * a + b

            def count(self, v):
                return len(v)
        """)
    assert _check(src) == [(11, "MXL104")]


def test_recursive_helpers_terminate():
    src = HEADER + _dedent("""
        def ping(x, n):
            return pong(x, n - 1) if n > 0 else x.asnumpy()

        def pong(x, n):
            return ping(x, n)

        class Net(nn.HybridBlock):
            def hybrid_forward(self, F, x):
                return ping(x, 3)
        """)
    assert _check(src) == [(12, "MXL102")]


def test_helpers_called_outside_hybrid_code_are_silent():
    src = HEADER + _dedent("""
        def to_numpy(x):
            return x.asnumpy()

        def evaluate(net, data):
            return to_numpy(net(data))
        """)
    assert _check(src) == []


# --- fixes ---------------------------------------------------------------------------------------


def test_nd_call_fix_uses_the_f_parameter_name():
    src = HEADER + _dedent("""
        class Net(nn.HybridBlock):
            def hybrid_forward(self, G, x):
                y = nd.relu(x)
                z = nd.zeros((2, 2))
                w = nd.zeros((2, 2), ctx=x.context)
                return y + z + w
        """)
    findings = check_source(src, "model.py", Settings(select=("MXL105",)))
    fixes = {f.location.row: f.fix for f in findings}
    assert fixes[6] is not None and fixes[6].applicability == "safe"
    assert fixes[7] is not None and fixes[7].applicability == "unsafe"
    assert fixes[8] is None
    fixed = apply_edits(src, list(fixes[6].edits))
    assert "y = G.relu(x)" in fixed


def test_inherited_helper_methods_are_found_in_base_classes_of_other_files():
    base = _dedent("""
        from mxnet.gluon import nn

        class Base(nn.HybridBlock):
            def _norm(self, v):
                return v / v.max().asscalar()

            def _scale(self, F, v):
                return F.relu(v) * 2
        """)
    src = HEADER + _dedent("""
        from .base import Base

        class Net(Base):
            def hybrid_forward(self, F, x):
                y = self._scale(F, x)
                return self._norm(y)
        """)
    findings = check_source(src, "model.py", Settings(select=("MXL1",)), (("base", base),))
    assert [(f.location.row, f.code) for f in findings] == [(9, "MXL102")]
    assert "base.py:6" in findings[0].message


def test_shape_reads_in_none_or_config_fallbacks_are_not_reported():
    src = HEADER + _dedent("""
        class Net(nn.HybridBlock):
            def hybrid_forward(self, F, x, size=None):
                a = self.size if self.fixed else x.shape[2:]
                b = x.shape[2:] if size is None else size
                if size is None:
                    size = x.shape[-1]
                c = x.shape[0]
                return F.contrib.BilinearResize2D(x, height=a[0], width=b[1]) * c
        """)
    assert _check(src) == [(10, "MXL103")]


# --- block state and outputs (MXL113, MXL114) --------------------------------------------------


def test_block_state_written_in_the_forward_is_reported_where_it_diverges():
    src = HEADER + _dedent("""
        class Net(nn.HybridBlock):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                self.dense = nn.Dense(4)
                self.count = 0
                self.size = None

            def hybrid_forward(self, F, x, w):
                self.count += 1
                self.seen = self.count
                if self.size is None:
                    self.size = 4
                if self.mask is None:
                    self.mask = F.ones_like(x)
                self.mode = 'fused'
                if self.count > 2:
                    self.mode = 'slow'
                self.log[self.count] = x
                self.w.set_data(w)
                self.w.data()[:] = 0
                if F is nd:
                    self.last = x
                local = {}
                local['x'] = x
                return self.dense(x) * self.size + local['x']
        """)
    # count (declared in __init__), the tensor mask (even when initialised once), the log
    # entry, set_data; `.data()[:] = 0` is MXL107's in-place write. `seen` and `mode` are plain
    # values nothing in the file reads back or declares: writing them changes nothing.
    assert _check(src) == [
        (12, "MXL113"),
        (17, "MXL113"),
        (21, "MXL113"),
        (22, "MXL113"),
        (23, "MXL107"),
    ]
    read_back = src.replace("self.dense(x) * self.size", "self.dense(x) * self.size * self.seen")
    assert (13, "MXL113") in _check(read_back.replace("'slow'", "'slow'\n        print(self.mode)"))


def test_block_state_messages_quote_the_code_and_say_what_is_kept():
    src = HEADER + _dedent("""
        class Net(nn.HybridBlock):
            def hybrid_forward(self, F, x):
                self.steps += 1
                self.last = F.relu(x)
                self.params.get('w').set_data(x)
                return x
        """)
    findings = check_source(src, "model.py", Settings(select=("MXL113",)))
    messages = [f.message for f in findings]
    assert messages[0].startswith("`self.steps += 1` changes the block's state")
    assert messages[1].startswith("`self.last = F.relu(x)` keeps a tensor on the block")
    assert "Symbol" in messages[1]
    assert messages[2].startswith("`self.params.get('w').set_data(x)` sets a parameter")
    assert "'Symbol' object has no attribute 'shape'" in messages[2]


def test_block_state_changed_by_a_helper_is_reported_at_the_call():
    src = HEADER + _dedent("""
        class Net(nn.HybridBlock):
            def hybrid_forward(self, F, x):
                self._track(x)
                return x

            def _track(self, v):
                self.outputs.append(v)

            def reset(self):
                self.outputs = []
        """)
    findings = check_source(src, "model.py", Settings(select=("MXL113",)))
    assert [(f.location.row, f.code) for f in findings] == [(6, "MXL113")]
    assert findings[0].message.startswith(
        "`_track()` changes `self.outputs` (model.py:10), which runs only while the "
        "graph is traced when this block is hybridized;"
    )


def test_outputs_bound_on_the_block_and_returned_are_not_state():
    src = HEADER + _dedent("""
        class Net(nn.HybridBlock):
            def hybrid_forward(self, F, x):
                self.outs = []
                self.outs.append(F.relu(x))
                self.a, self.b = x, F.relu(x)
                self.kept = []
                self.kept.append(x)
                return self.outs, self.a, self.b
        """)
    # `self.kept = []` binds a plain value nothing reads; appending a tensor to it keeps one.
    assert _check(src) == [(10, "MXL113")]


def test_block_state_in_an_mxnet2_forward_and_not_in_a_plain_block():
    src = _dedent("""
        from mxnet import np, npx
        from mxnet.gluon import nn

        class Net(nn.HybridBlock):
            def forward(self, x):
                self.steps += 1
                return x

        class Eager(nn.Block):
            def forward(self, x):
                self.steps += 1
                return x
        """)
    assert _check(src, mxnet="2") == [(7, "MXL113")]
    assert _check(src, mxnet="1") == []


def test_non_tensor_outputs_are_reported_only_when_provable():
    src = HEADER + _dedent("""
        from collections import OrderedDict

        class Net(nn.HybridBlock):
            def hybrid_forward(self, F, x, mask=None, mode=0):
                y = F.relu(x)
                if mode == 1:
                    return {'y': y}
                if mode == 2:
                    return y, [F.sum(y), -1]
                if mode == 3:
                    return y, None
                if mode == 4:
                    d = OrderedDict()
                    d['y'] = y
                    return d
                if mode == 5:
                    return y, mask
                if mode == 6:
                    return self.head(y), self.extra
                if mode == 7:
                    return 'done'
                if mode == 8:
                    return
                aux = None
                if mask is not None:
                    aux = y * mask
                else:
                    aux = F.zeros_like(y)
                return y, aux
        """)
    # `mask` may be a tensor and `self.extra` is not seen into: neither is reported.
    assert _check(src) == [
        (10, "MXL114"),
        (12, "MXL114"),
        (14, "MXL114"),
        (18, "MXL114"),
        (24, "MXL114"),
        (26, "MXL114"),
    ]
    findings = check_source(src, "model.py", Settings(select=("MXL114",)))
    by_row = {f.location.row: f for f in findings}
    assert by_row[12].location.column == 34  # at the number itself
    assert by_row[14].message.startswith("`return y, None` returns None as an output")
    assert "TypeError: Expected a list of symbols as input" in by_row[14].message
    assert "ValueError: When hybridized" in by_row[10].message
    assert "build the dict in the caller" in by_row[10].message


def test_none_outputs_are_accepted_by_mxnet2_and_helpers_may_return_dicts():
    src = _dedent("""
        from mxnet import np, npx
        from mxnet.gluon import nn

        class Net(nn.HybridBlock):
            def forward(self, x):
                out = self._pack(x)
                if out is None:
                    return x, None
                return {'y': x}

            def _pack(self, x):
                return {'y': x}
        """)
    assert _check(src, mxnet="2") == [(10, "MXL114")]


def test_one_time_initialisation_branches():
    from mxlint.rules.hybridization._taint import initialising_branch

    def branch(code: str) -> str | None:
        node = cst.parse_statement(_dedent(code))
        assert isinstance(node, cst.If)
        return initialising_branch(node)

    assert branch("if self.a is None:\n    self.a = 1\n") == "body"
    assert branch("if not hasattr(self, 'a'):\n    self.a = 1\n") == "body"
    assert branch("if not isinstance(self.a, nn.Block):\n    self.a = f()\n") == "body"
    assert branch("if self.a is not None:\n    pass\nelse:\n    self.a = 1\n") == "orelse"
    assert branch("if self.a:\n    pass\nelse:\n    self.a = 1\n") == "orelse"
    # A test of another attribute, or a branch that does not assign it, is not initialisation.
    assert branch("if self.a is None:\n    self.b = 1\n") is None
    assert branch("if self.count > 2:\n    self.count = 0\n") is None


def test_dict_displays_and_dict_calls_are_mappings():
    tests = _tests_of(
        """
        def f(x):
            d = {'x': x}
            if d:
                pass
            e = dict(x=x)
            if e:
                pass
    """,
        {"x": Kind.TENSOR},
    )
    assert tests == [("d", Kind.MAPPING), ("e", Kind.MAPPING)]


def test_integer_literals_in_any_base_are_read_as_python_reads_them():
    """An axis or a shape written `0x1` or `0b10` (once an internal error, MXL002)."""
    source = HEADER + _dedent("""
        class Net(nn.HybridBlock):
            def hybrid_forward(self, F, x):
                y = F.sum(x, axis=0x1)
                if y.sum() > 0:
                    return y + nd.zeros((0b10, 3))
                return x
        """)
    findings = check_source(source, "model.py", Settings(select=("MXL",)), ())
    rows = sorted((f.location.row, f.code) for f in findings)
    assert rows == [(7, "MXL101"), (8, "MXL105"), (8, "MXL202")]


# --- blocks the project never hybridizes ------------------------------------------------------

_LOSS = """\
from mxnet import gluon


class GatedLoss(gluon.HybridBlock):
    def hybrid_forward(self, F, pred, label):
        if label.sum().asscalar() == 0:
            return F.zeros_like(pred).sum()
        return F.square(pred - label).sum()
"""


def _loss_findings(train: str, *others: tuple[str, str]) -> list[tuple[int, str]]:
    findings = check_source(
        _LOSS,
        "losses.py",
        Settings(select=("MXL1",)),
        (("train", textwrap.dedent(train)), *others),
    )
    return sorted((f.location.row, f.code) for f in findings if f.filename == "losses.py")


def test_a_block_built_called_and_never_hybridized_is_not_checked():
    # built, called, handed to a helper that only calls it: always imperative
    assert (
        _loss_findings(
            """
            from losses import GatedLoss

            def evaluate(net, loss_fn, x, y):
                return loss_fn(net(x), y).asscalar()

            def main(net, x, y):
                net.hybridize()
                loss_fn = GatedLoss()
                loss_fn.initialize()
                print(evaluate(net, loss_fn, x, y), GatedLoss()(x, y))
                return isinstance(loss_fn, GatedLoss)
            """
        )
        == []
    )


@pytest.mark.parametrize(
    "use",
    [
        "loss_fn.hybridize()",  # hybridized
        "loss_fn.export('loss')",  # exported: needs a hybridized block
        "prepare(loss_fn)",  # handed to a helper that hybridizes it
        "blocks.append(loss_fn)",  # kept where the file cannot follow it
        "return loss_fn",  # the caller may hybridize it
        "helper = make(GatedLoss)",  # the class itself handed on
    ],
)
def test_a_block_that_may_be_hybridized_is_still_checked(use):
    train = f"""
        from losses import GatedLoss
        from lib import make

        blocks = []

        def prepare(block):
            block.hybridize(static_alloc=True)

        def main(x, y):
            loss_fn = GatedLoss()
            {use}
        """
    assert _loss_findings(train) == [(6, "MXL102")]


def test_a_block_built_as_a_child_follows_its_parent():
    train = """
        from mxnet import gluon
        from losses import GatedLoss

        class Model(gluon.HybridBlock):
            def __init__(self):
                super().__init__()
                self.loss = GatedLoss()
    """
    assert _loss_findings(train) == [(6, "MXL102")]


_MODEL = """
    from mxnet import gluon
    from losses import GatedLoss

    class Model(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.loss = GatedLoss()
            self.heads = gluon.nn.HybridSequential()
            self.heads.add(GatedLoss())
            {extra}

        def hybrid_forward(self, F, x, y):
            return self.loss(x, y) + self.heads(x, y)

    def score(model, x, y):
        return model(x, y).asscalar()

    def report(model, x, y):
        print(score(model, x, y))

    def main(x, y):
        model = Model()
        model.initialize()
        {use}
        report(model, x, y)
        return score(model, x, y)
"""


@pytest.mark.parametrize(
    ("extra", "use", "expected"),
    [
        # the owner is built, handed to two helpers that call it, never hybridized
        ("", "", []),
        # the owner is hybridized: so are the children it keeps
        ("", "model.hybridize()", [(6, "MXL102")]),
        # the owner's code hybridizes the child it keeps
        ("self.loss.hybridize()", "", [(6, "MXL102")]),
        # the owner hands its child on
        ("gluon.utils.register(self.loss)", "", [(6, "MXL102")]),
    ],
)
def test_a_child_block_meets_hybridize_only_with_its_owner(extra, use, expected):
    train = _MODEL.format(extra=extra, use=use)
    assert _loss_findings(train) == expected


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("return self(x, y)", []),  # a method of the owner's class that only calls it
        ("self.hybridize()\n            return self(x, y)", [(6, "MXL102")]),
    ],
)
def test_a_method_called_on_a_handed_network_is_asked_of_the_project(method, expected):
    train = f"""
        from mxnet import gluon
        from losses import GatedLoss

        class Model(gluon.HybridBlock):
            def __init__(self):
                super().__init__()
                self.loss = GatedLoss()

            def hybrid_forward(self, F, x, y):
                return self.loss(x, y)

            def predict(self, x, y):
                {method}

        def evaluate(model, x, y):
            return model.predict(x, y)

        def main(x, y):
            return evaluate(Model(), x, y)
    """
    assert _loss_findings(train) == expected


def test_a_name_bound_again_is_followed_from_where_it_is_bound():
    # `net.hybridize()` hybridized the backbone the name held before; the wrapper built next
    # under the same name is called and never hybridized.
    straight = """
        from losses import GatedLoss
        from zoo import backbone

        net = backbone()
        net.hybridize()
        net = GatedLoss()
        print(net(1, 2))
    """
    assert _loss_findings(straight) == []
    # in a loop, the earlier line runs again on the object built by the later one
    looped = """
        from losses import GatedLoss

        net = None
        for _ in range(2):
            if net is not None:
                net.hybridize()
            net = GatedLoss()
    """
    assert _loss_findings(looped) == [(6, "MXL102")]


def test_members_and_keywords_of_the_same_name_are_not_uses_of_the_object():
    train = """
        import zoo
        from losses import GatedLoss

        loss_fn = GatedLoss()
        print(loss_fn(1, 2), zoo.loss_fn, dict(loss_fn=3))
    """
    assert _loss_findings(train) == []


def test_a_block_no_file_of_the_run_builds_is_still_checked():
    assert _loss_findings("import losses\n") == [(6, "MXL102")]


def test_a_file_outside_the_run_that_names_the_block_keeps_it_checked(tmp_path, monkeypatch):
    (tmp_path / "losses.py").write_text(_LOSS)
    (tmp_path / "train.py").write_text(
        "from mxnet import nd\nfrom losses import GatedLoss\n\n"
        "def main():\n    return GatedLoss()(nd.ones(2), nd.zeros(2))\n"
    )
    (tmp_path / "serve.py").write_text(
        "import mxnet\nfrom losses import GatedLoss\n\nblock = GatedLoss()\nblock.hybridize()\n"
    )
    monkeypatch.chdir(tmp_path)
    from mxlint.api import check_paths

    def rows(*names: str) -> list[tuple[str, int, str]]:
        found = check_paths([tmp_path / n for n in names], Settings(select=("MXL1",)))
        return sorted(
            (f.filename.rsplit("/", 1)[-1], f.location.row, f.code) for f in found.findings
        )

    reported = [("losses.py", 6, "MXL102")]
    assert rows("losses.py", "train.py") == reported  # serve.py names it and is not read
    assert rows("losses.py", "train.py", "serve.py") == reported  # serve.py hybridizes it
    (tmp_path / "serve.py").unlink()
    assert rows("losses.py", "train.py") == []


def test_a_block_a_star_import_may_give_is_still_checked():
    free = """
        from mxnet import nd
        from losses import GatedLoss

        def main():
            return GatedLoss()(nd.ones(2), nd.zeros(2))
    """
    starred = """
        from mxnet import nd
        from losses import *

        block = GatedLoss()
        block.hybridize()
    """
    assert _loss_findings(free) == []
    assert _loss_findings(free, ("serve", textwrap.dedent(starred))) == [(6, "MXL102")]


def test_a_child_blocks_output_updated_in_place_with_a_tensor():
    """`out = self.body(x)` may be a tuple, but `out += x` (a tensor) or `out *= 0.5` says it is
    the tensor; `feats += self.stage(x)` may be lists joined, and is not reported."""
    source = _dedent("""\
        from mxnet.gluon import nn


        class Net(nn.HybridBlock):
            def __init__(self, body, stage):
                super().__init__()
                self.body = body
                self.stage = stage

            def hybrid_forward(self, F, x):
                out = self.body(x)
                out += x
                feats = self.stage(x)
                feats += self.stage(x)
                half = self.stage(x)
                half *= 0.5
                return out, feats, half
        """)
    found = check_source(source, "model.py", Settings(select=("MXL107",)))
    assert [(f.code, f.location.row) for f in found] == [("MXL107", 12), ("MXL107", 16)]


def test_a_hybridized_block_passed_to_a_helper_that_gives_it_a_number():
    source = _dedent("""\
        from mxnet import nd
        from mxnet.gluon import nn


        class Scale(nn.HybridBlock):
            def hybrid_forward(self, F, x, s):
                return x * s


        def run(net, x, s):
            return net(x, s)


        def main():
            net = Scale()
            net.hybridize()
            run(net, nd.ones((2,)), 0.5)
            run(net, nd.ones((2,)), nd.ones((1,)))
            eager = Scale()
            run(eager, nd.ones((2,)), 0.5)
        """)
    found = check_source(source, "script.py", Settings(select=("MXL109",)))
    assert [(f.code, f.location.row) for f in found] == [("MXL109", 11)]
    assert "(by `main()`, which passes it here)" in found[0].message
    assert "(`0.5` from `main()`)" in found[0].message


def test_a_block_an_objects_init_hybridizes_called_with_a_number_by_its_methods():
    source = _dedent("""\
        from mxnet import nd
        from mxnet.gluon import nn


        class Scale(nn.HybridBlock):
            def hybrid_forward(self, F, x, s):
                return x * s


        class Runner:
            def __init__(self):
                self.net = Scale()
                self.net.hybridize()
                self.eager = Scale()

            def run(self, x):
                return self.net(x, 0.5), self.eager(x, 0.5), self.net(x, nd.ones((1,)))


        class Parent(nn.HybridBlock):
            def __init__(self):
                super().__init__()
                self.net = Scale()
                self.net.hybridize()

            def hybrid_forward(self, F, x):
                return self.net(x, 0.5)
        """)
    found = check_source(source, "script.py", Settings(select=("MXL109",)))
    assert [(f.code, f.location.row) for f in found] == [("MXL109", 17)]
    assert "`self.net` is hybridized (in `__init__()`)" in found[0].message


def test_a_command_line_option_holding_a_number_is_a_python_number():
    source = _dedent("""\
        import argparse
        from mxnet import gluon, nd


        class Scale(gluon.HybridBlock):
            def hybrid_forward(self, F, x, s):
                return x * s


        parser = argparse.ArgumentParser()
        parser.add_argument("--scale", type=float)
        parser.add_argument("--steps", default=3)
        parser.add_argument("--name", type=str, default="1")
        parser.add_argument("--sizes", type=int, nargs="+")
        parser.add_argument("--flip", default=0, type=lambda s: s)
        args = parser.parse_args()
        net = Scale()
        net.hybridize()
        x = nd.ones((2,))
        net(x, args.scale)
        net(x, args.steps)
        net(x, args.name)
        net(x, args.sizes)
        net(x, args.flip)
        net(x, nd.array([args.scale]))
        """)
    found = check_source(source, "script.py", Settings(select=("MXL109",)))
    assert [(f.code, f.location.row) for f in found] == [("MXL109", 20), ("MXL109", 21)]
    assert "(its command-line option has `type=float`)" in found[0].message
    assert "(its command-line option has a number default)" in found[1].message


def test_a_layer_of_a_sequential_child_indexed_in_forward_is_a_tensor():
    source = """\
        from mxnet.gluon import nn


        class Sum(nn.HybridBlock):
            def __init__(self, n):
                super().__init__()
                self.n = n
                self.convs = nn.HybridSequential()
                self.heads = nn.HybridSequential()
                for _ in range(n):
                    self.convs.add(nn.Conv2D(4, 3, padding=1))
                    self.heads.add(Unknown())

            def hybrid_forward(self, F, x):
                a = self.convs[0](x)
                b = self.heads[0](x)
                for i in range(1, self.n):
                    a += self.convs[i](x)
                    b += self.heads[i](x)
                return a, b


        def run(x):
            net = Sum(2)
            net.hybridize()
            return net(x)
        """
    # A head of unknown class may return a tuple (`b += ...` extends it): not reported.
    assert _check(source) == [(18, "MXL107")]


def test_a_number_an_objects_init_keeps_and_passes_to_its_hybridized_block():
    source = """\
        import mxnet as mx
        from mxnet.gluon import nn


        class Scaled(nn.HybridBlock):
            def hybrid_forward(self, F, x, s):
                return x * s


        class Runner:
            def __init__(self, cfg):
                self.scale = float(cfg["scale"])
                self.shift = int(cfg["shift"])
                self.net = Scaled()
                self.net.hybridize()

            def set_shift(self, value):
                self.shift = mx.nd.array([value])

            def __call__(self, x):
                return self.net(x, self.scale) + self.net(x, self.shift)
        """
    found = check_source(textwrap.dedent(source), "run.py", Settings(select=("MXL109",)))
    # `self.shift` is rebound by another method: not known to be a number when called.
    assert [(f.code, f.location.row, f.location.column) for f in found] == [("MXL109", 21, 28)]
    assert '`self.scale` is a Python number (`float(cfg["scale"])` from `__init__()`)' in (
        found[0].message
    )
