"""MXL104 tensor-as-sequence: finds `len(x)`, iteration (`for row in x`, `enumerate(x)`),
tuple-unpacking and indexing or slicing (`x[0]`, `x[:, 1]`) of tensors inside MXNet 1.x
`hybrid_forward`.

Its findings are found by the family's one analysis per file (`_analysis.py`, run by
`checker.py`) and worded by the messages above the class; its tests
are the examples below (run by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL104.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.hybridization._examples import _GUARDED, _L, _MX2, _PLAIN_BLOCK, _block

#: The messages for `len()`, iteration, unpacking, indexing and slicing of a tensor.
LEN_ADVICE = (
    "`{code}` on a Symbol counts its outputs, not rows; pass the length as a "
    "constructor argument, unroll over a fixed count, or use `F.contrib.foreach` "
    "(inference) / `F.split`"
)
ITER_ADVICE = (
    "iterating a tensor in a hybridized block iterates a Symbol's outputs, not its "
    "rows; split it with `F.split(x, num_outputs=n, axis=0)` or unroll over a "
    "fixed, configured length"
)
UNPACK_ADVICE = (
    "unpacking a tensor in a hybridized block unpacks a Symbol's outputs, not its "
    "rows; use `F.split(x, num_outputs=n, axis=0, squeeze_axis=True)`"
)
INDEX_ADVICE = (
    "`{code}` on a Symbol selects an output, not a row: under hybridize() it "
    "silently means something else; use `F.slice_axis`, `F.take` or `F.split`"
)
SLICE_ADVICE = (
    "`{code}`: a Symbol supports only integer output selection, so slicing "
    "fails under hybridize(); use `F.slice_axis`, `F.slice` or `F.take`"
)


#: What to do when a helper called from a hybridized method does this, said at the call.
SITE_ADVICE = "use `F.slice_axis`/`F.take`/`F.split` instead"


class TensorAsSequence(Rule):
    code = "MXL104"
    name = "tensor-as-sequence"
    runtime = Runtime("hybrid", shows=("silent",))
    message = (
        "Tensor used as a Python sequence in MXNet 1.x hybridized code; use "
        "`F.slice_axis`/`F.take`/`F.split`"
    )
    mxnet = "1"
    what = """
        Finds `len(x)`, iteration (`for row in x`, `enumerate(x)`), tuple-unpacking and
        indexing or slicing (`x[0]`, `x[:, 1]`) of tensors inside MXNet 1.x `hybrid_forward`.
        Multi-output operators (`F.split`, RNN cells) return groups and are not reported.
    """
    why = """
        A Symbol is a sequence of its *outputs*: `x[0]` on a single-output Symbol returns the
        whole tensor instead of the first row, `len(x)` is 1, and `x[:, 1]` raises. The
        imperative run (NDArray) and the hybridized run silently compute different things.
    """
    example = """
        def hybrid_forward(self, F, x):
            outs = [self.cell(x[t]) for t in range(len(x))]
            return F.stack(*outs)
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            steps = F.split(x, num_outputs=self.seq_len, axis=0, squeeze_axis=True)
            return F.stack(*[self.cell(s) for s in steps])
    """
    invalid = (
        Example(_block("y = self.dense(x)\nreturn y[0]"), line=_L + 1),
        Example(
            _block("out = []\nfor t in range(len(x)):\n    out.append(x[t])\nreturn F.stack(*out)"),
            line=_L + 1,
        ),
        Example(_block("for row in x:\n    pass\nreturn x"), line=_L),
        Example(_block("a, b = F.relu(x)\nreturn a + b"), line=_L),
        Example(_block("return x[:, 0]"), line=_L),
        Example(_block("return F.stack(*[r * 2 for r in x])"), line=_L),
    )
    valid = (
        _block("a, b = F.split(x, num_outputs=2, axis=1)\nreturn a + b"),
        _block("parts = F.split(x, num_outputs=3)\nreturn parts[0] + parts[2]"),
        _block("return F.slice_axis(x, axis=0, begin=0, end=1)"),
        _block("for layer in self._children.values():\n    x = layer(x)\nreturn x"),
        _block("h = states[0]\nreturn x + h", args="x, states"),
        _block(
            "out, new_states = self.cell(x, states)\nreturn out, new_states",
            args="x, states",
            init="self.cell = rnn.LSTMCell(4)",
        ).replace("from mxnet.gluon import nn", "from mxnet.gluon import nn, rnn"),
        _block("return args[0] + x", args="x, *args"),
        _block(
            "for i in range(self.units):\n    x[i] = self.dense(x[i])\nreturn x[0]", args="x0, x"
        ),
        _block(
            "return F.contrib.BilinearResize2D(x, height=out_size[0], width=out_size[1])",
            args="x, out_size",
        ),
        _block(
            "if hc is None:\n    h = [F.zeros_like(x)] * 2\nelse:\n    h, c = hc\nreturn x + h[0]",
            args="x, hc=None",
        ),
        _block(
            "outs = []\nfor block, xi in zip(self._children.values(), x):\n"
            "    outs.append(block(xi))\nreturn F.concat(*outs, dim=1)"
        ),
        _block("x = [x0] + rest\nreturn F.concat(x[0], x[1], dim=1)", args="x0, rest"),
        _block("targets, masks = F.contrib.box_encode(x, x, x, x, x, x)\nreturn targets"),
        _block("a, b = F.amp_multicast(x, x, num_outputs=2)\nreturn a + b"),
        _GUARDED,
        _PLAIN_BLOCK,
        Valid(_MX2 + "        return x[0] + len(x)\n", mxnet="2"),
    )
