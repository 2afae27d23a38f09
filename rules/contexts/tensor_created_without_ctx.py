"""MXL202 tensor-created-without-ctx: finds NDArrays created without `ctx=` (`nd.zeros(shape)`,
`nd.array(...)`, `nd.random.uniform(...)`, `mx.np.ones(...)`) inside a Block's `forward` (or an
imperative `nd.*` call in `hybrid_forward`) and then combined with the forward's tensor inputs
(arithmetic, an `nd`/`F` operator, a sub-layer call, a slice assignment).

The functions after the class decide and word its findings; the family's checker
(`rules/contexts/checker.py`) runs them. Its tests are
the examples below (run by `tests/test_rule_examples.py`), `tests/test_contexts.py` and
`tests/snapshots/MXL202.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint.checker import FixSpec, NodeEdit
from mxlint.placement import (
    ForwardCreations,
    tensor_parameters,
)
from mxlint.rule import CONTEXT_ERROR, Example, Rule, Runtime, Valid
from mxlint.rules.contexts._analysis import _add_keyword, _has_bases

if TYPE_CHECKING:
    from mxlint.rules.contexts.checker import ContextChecker


class TensorCreatedWithoutCtx(Rule):
    code = "MXL202"
    name = "tensor-created-without-ctx"
    runtime = Runtime("context", loud=True, error=CONTEXT_ERROR, in_block=True)
    message = (
        "`{creator}` inside `{method}` has no `ctx` and lands on the default context "
        "(cpu) while the inputs may be on a GPU; create it on the input's context "
        "(`ctx={arg}.context`) or use `zeros_like`/`ones_like`"
    )
    what = """
        Finds NDArrays created without `ctx=` (`nd.zeros(shape)`, `nd.array(...)`,
        `nd.random.uniform(...)`, `mx.np.ones(...)`) inside a Block's `forward` (or an
        imperative `nd.*` call in `hybrid_forward`) and then combined with the forward's
        tensor inputs (arithmetic, an `nd`/`F` operator, a sub-layer call, a slice assignment).
    """
    why = """
        A creator without `ctx` uses the current default context, which is `cpu(0)`. The
        block works on CPU and fails as soon as its inputs and parameters are on a GPU. The
        input's context is known inside `forward`: `x.context`.

        `F.zeros(shape)` in `hybrid_forward` is not reported: once hybridized the graph is
        bound on the inputs' context, and `ctx=` cannot be passed symbolically. If the block
        also runs un-hybridized on a GPU, prefer `F.zeros_like(x)`/`F.ones_like(x)`.
    """
    example = """
        class Decoder(gluon.Block):
            def forward(self, x):
                h = nd.zeros((x.shape[0], self.hidden))
                return self.cell(x, h)
    """
    use_instead = """
        class Decoder(gluon.Block):
            def forward(self, x):
                h = nd.zeros((x.shape[0], self.hidden), ctx=x.context)
                return self.cell(x, h)
    """
    fix_safety = """
        The fix adds `ctx=<first input>.context` to the creator. It is unsafe: it changes where
        the tensor's memory lives, and the first input is not always the one combined with it.
        An `nd.*` creator in `hybrid_forward` gets no fix: its input becomes a Symbol, which has
        no `.context`; build the tensor from the inputs with `F.` operators instead.
    """
    fixable = "unsafe"
    invalid = (
        Example(
            "from mxnet import gluon, nd\n\n"
            "class Decoder(gluon.Block):\n"
            "    def forward(self, x):\n"
            "        h = nd.zeros((x.shape[0], 16))\n"
            "        return self.cell(x, h)\n",
            line=5,
            expected_fix=(
                "from mxnet import gluon, nd\n\n"
                "class Decoder(gluon.Block):\n"
                "    def forward(self, x):\n"
                "        h = nd.zeros((x.shape[0], 16), ctx=x.context)\n"
                "        return self.cell(x, h)\n"
            ),
        ),
        Example(
            "import mxnet as mx\nfrom mxnet import gluon\n\n"
            "class Noise(gluon.HybridBlock):\n"
            "    def hybrid_forward(self, F, x):\n"
            "        eps = mx.nd.random.normal(0, 1, shape=(4, 4))\n"
            "        return x + eps\n",
            line=6,
        ),
        Example(
            "from mxnet import gluon, nd\n\n"
            "class Masked(gluon.nn.Block):\n"
            "    def forward(self, x, lengths):\n"
            "        mask = nd.array([[1, 1, 0]])\n"
            "        out = nd.broadcast_mul(x, mask)\n"
            "        return out\n",
            line=5,
        ),
        Example(
            "from mxnet import gluon, nd\n\n"
            "class RNNLoop(gluon.Block):\n"
            "    def forward(self, inputs):\n"
            "        state = nd.zeros((inputs.shape[1], 8))\n"
            "        outs = []\n"
            "        for t in range(inputs.shape[0]):\n"
            "            state = self.cell(inputs[t], state)\n"
            "            outs.append(state)\n"
            "        return nd.stack(*outs)\n",
            line=5,
        ),
        Example(
            "from mxnet import gluon, nd\n\n"
            "class Tagger(gluon.Block):\n"
            "    def forward(self, x):\n"
            "        state = self.lstm.begin_state(batch_size=x.shape[1])\n"
            "        out, _ = self.lstm(x, state)\n"
            "        return out\n",
            line=5,
            expected_fix=(
                "from mxnet import gluon, nd\n\n"
                "class Tagger(gluon.Block):\n"
                "    def forward(self, x):\n"
                "        state = self.lstm.begin_state(batch_size=x.shape[1], ctx=x.context)\n"
                "        out, _ = self.lstm(x, state)\n"
                "        return out\n"
            ),
        ),
        Example(
            "from mxnet import gluon, np\n\n"
            "class Pos(gluon.Block):\n"
            "    def forward(self, x):\n"
            "        pos = np.arange(x.shape[1])\n"
            "        return x + pos\n",
            line=5,
            mxnet="2",
            expected_fix=(
                "from mxnet import gluon, np\n\n"
                "class Pos(gluon.Block):\n"
                "    def forward(self, x):\n"
                "        pos = np.arange(x.shape[1], device=x.device)\n"
                "        return x + pos\n"
            ),
        ),
    )
    valid = (
        "from mxnet import gluon, nd\n\nclass A(gluon.Block):\n    def forward(self, x):\n"
        "        h = nd.zeros((x.shape[0], 4), ctx=x.context)\n        return x + h\n",
        "from mxnet import gluon, nd\n\nclass A(gluon.Block):\n    def forward(self, x):\n"
        "        return x + nd.zeros_like(x)\n",
        "from mxnet import gluon, nd\n\nclass A(gluon.HybridBlock):\n"
        "    def hybrid_forward(self, F, x):\n        return x + F.zeros((1, 4))\n",
        "from mxnet import gluon, nd\n\nclass A(gluon.Block):\n    def forward(self, x):\n"
        "        h = nd.zeros((1, 4)).as_in_context(x.context)\n        return x + h\n",
        # created but never combined with the inputs
        "from mxnet import gluon, nd\n\nclass A(gluon.Block):\n    def forward(self, x):\n"
        "        self.cache = nd.zeros((1,))\n        return self.dense(x)\n",
        # outside a forward
        "from mxnet import gluon, nd\n\nclass A(gluon.Block):\n    def __init__(self):\n"
        "        super().__init__()\n        self.bias0 = nd.zeros((4,))\n"
        "    def begin_state(self, x):\n        return x + nd.zeros((4,))\n",
        # shapes and Python numbers are not tensors
        "from mxnet import gluon, nd\n\nclass A(gluon.Block):\n    def forward(self, x):\n"
        "        n = nd.arange(10).asnumpy()\n        return x.reshape((x.shape[0], n.size))\n",
        # created on the context the caller passes
        "from mxnet import gluon, nd\n\nclass A(gluon.Block):\n    def forward(self, x, ctx):\n"
        "        return x + nd.ones((1,), ctx)\n",
        # a CPU-only script
        "import mxnet as mx\nfrom mxnet import gluon, nd\n\nclass A(gluon.Block):\n"
        "    def forward(self, x):\n        return x + nd.ones((1,))\n\n"
        "net = A()\nnet.initialize(ctx=mx.cpu())\n",
        # not a Block
        "from mxnet import nd\n\nclass Helper:\n    def forward(self, x):\n"
        "        return x + nd.ones((1,))\n",
        # states on the input's context, or made by F.zeros, or under `with x.context:`
        "from mxnet import gluon, nd\n\nclass T(gluon.Block):\n    def forward(self, x):\n"
        "        s = self.lstm.begin_state(batch_size=x.shape[1], ctx=x.context)\n"
        "        return self.lstm(x, s)\n",
        "from mxnet import gluon\n\nclass T(gluon.HybridBlock):\n"
        "    def hybrid_forward(self, F, x):\n"
        "        s = self.lstm.begin_state(func=F.zeros, batch_size=0)\n"
        "        return self.lstm(x, s)\n",
        "from mxnet import gluon, nd\n\nclass T(gluon.Block):\n    def forward(self, x):\n"
        "        with x.context:\n            h = nd.zeros((x.shape[0], 4))\n"
        "        return x + h\n",
        # MXNet 2: a HybridBlock's forward is hybridized
        Valid(
            "from mxnet import gluon, np\n\nclass P(gluon.HybridBlock):\n"
            "    def forward(self, x):\n        return x + np.arange(x.shape[1])\n",
            mxnet="2",
        ),
    )


def check_forward(
    checker: ContextChecker, path: list[str], cls: cst.ClassDef, fn: cst.FunctionDef
) -> None:
    hybrid = fn.name.value == "hybrid_forward"
    positional = [*fn.params.posonly_params, *fn.params.params]
    f_name = positional[1].name.value if hybrid and len(positional) > 1 else None
    params = tensor_parameters(fn, 2 if hybrid else 1)
    if not params:
        return
    found = ForwardCreations(checker.ctx.imports, f_name).run_function(fn, params)
    if not found:
        return
    arg = params[0]
    symbol = ".".join(path)
    cls_path = path[:-1]
    requires = None if hybrid else ("block", checker.ctx.qualname(".".join(cls_path)))
    if not hybrid and not _has_bases(cls):
        return
    hybrid_forward_2 = not hybrid and checker._hybrid_base(cls)
    for node in found:
        name = checker.ctx.imports.resolve(node.func) or ""
        numpy_style = name.startswith("mxnet.np.")
        if hybrid_forward_2 and (numpy_style or checker.ctx.mxnet_line == "2"):
            # MXNet 2 hybridizes `forward`: like `F.zeros`, bound on the inputs' device
            continue
        if numpy_style and checker.ctx.mxnet_line == "2":
            keyword, value = "device", f"{arg}.device"
        elif numpy_style:
            keyword, value = "ctx", f"{arg}.ctx"
        else:
            keyword, value = "ctx", f"{arg}.context"
        # In `hybrid_forward` the input becomes a Symbol, which has no `.context` (MXL103):
        # there the remedy is an `F.` operator on the inputs, not a `ctx=`.
        fix = (
            FixSpec(
                "unsafe",
                f"Create it on `{value}`",
                (NodeEdit(node, _add_keyword(checker.ctx.code, node, keyword, value)),),
            )
            if node.args and not hybrid
            else None
        )
        message = TensorCreatedWithoutCtx.format(
            creator=f"{checker.ctx.code(node.func)}(...)", method=fn.name.value, arg=arg
        )
        if keyword == "device":
            message = message.replace(f"ctx={arg}.context", f"device={arg}.device")
        elif hybrid:
            message = message.replace(
                f"create it on the input's context (`ctx={arg}.context`) or use "
                "`zeros_like`/`ones_like`",
                f"build it from the inputs with `{f_name or 'F'}.` operators "
                f"(`{f_name or 'F'}.zeros_like({arg})`, `{f_name or 'F'}.ones_like({arg})`), "
                "which follow their context hybridized or not",
            )
        checker.ctx.report(
            node,
            TensorCreatedWithoutCtx,
            message,
            fix=fix,
            symbol=symbol,
            data={"function": checker.ctx.qualname(symbol), "ctx": value},
            requires=requires,
        )
