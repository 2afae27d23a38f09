"""MXL102 tensor-to-python: finds `.asnumpy()`, `.asscalar()`, `.item()`, `.tolist()`,
`float(x)`/`int(x)`/ `bool(x)` and `np.array(x)` on tensors in hybridized code and in helpers it
calls with tensors (across files).

Its findings are found by the family's one analysis per file (`_analysis.py`, run by
`checker.py`) and worded by the messages above the class; its tests
are the examples below (run by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL102.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.hybridization._examples import _GUARDED, _IMPORTS, _L, _MX2, _PLAIN_BLOCK, _block

#: The message, with the call that copies the tensor (`{call}`).
TO_PYTHON_ADVICE = (
    "`{call}` copies a tensor into Python: a Symbol has no value under "
    "hybridize(); keep the computation in `F.*` operators and move value "
    "checks outside the HybridBlock"
)


#: What to do when a helper called from a hybridized method does this, said at the call.
SITE_ADVICE = "keep the computation in `F.*` operators"


class TensorToPython(Rule):
    code = "MXL102"
    name = "tensor-to-python"
    runtime = Runtime("hybrid")
    message = (
        "Tensor value read into Python in hybridized code; keep the computation in `F.*` operators"
    )
    what = """
        Finds `.asnumpy()`, `.asscalar()`, `.item()`, `.tolist()`, `float(x)`/`int(x)`/
        `bool(x)` and `np.array(x)` on tensors in hybridized code and in helpers it calls
        with tensors (across files).
    """
    why = """
        A Symbol has no value: these calls raise under `hybridize()` (MXNet 1.x) and in
        deferred compute (MXNet 2). Where they work imperatively they also block on the
        asynchronous engine every batch.
    """
    example = """
        def hybrid_forward(self, F, x):
            scale = x.max().asscalar()
            return x / scale
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            return F.broadcast_div(x, x.max().reshape((1, 1)))
    """
    invalid = (
        Example(_block("scale = x.asnumpy().max()\nreturn x / scale"), line=_L),
        Example(_block("return x / x.max().asscalar()"), line=_L),
        Example(_block("n = int(x.sum())\nreturn x * n"), line=_L),
        Example(_block("y = self.dense(x)\nreturn y.mean().item()"), line=_L + 1),
        Example(
            _IMPORTS + "from .utils import normalize\n\nclass Net(nn.HybridBlock):\n"
            "    def hybrid_forward(self, F, x):\n        return normalize(x)\n",
            line=8,
            project=(("utils", "def normalize(x):\n    return x / x.abs().max().asscalar()\n"),),
        ),
        Example(
            _IMPORTS + "from .utils import scale\n\nclass Net(nn.HybridBlock):\n"
            "    def hybrid_forward(self, F, x):\n        y = F.relu(x)\n"
            "        return scale(y, 2)\n",
            line=9,
            project=(
                (
                    "utils",
                    "from .ops import peak\n\ndef scale(v, k):\n    return v * k / peak(v)\n",
                ),
                ("ops", "def peak(t):\n    return float(t.max().asnumpy())\n"),
            ),
        ),
        Example(
            _block("return self.norm(x)") + "\n    def norm(self, v):\n"
            "        return v / v.norm().asscalar()\n",
            line=_L,
        ),
        Example(_MX2 + "        return self.dense(x) / x.max().item()\n", line=11, mxnet="2"),
    )
    valid = (
        _block("return F.broadcast_div(x, F.max(x, axis=1, keepdims=True))"),
        _GUARDED,
        _PLAIN_BLOCK,
        _IMPORTS + "from .utils import normalize\n\nclass Net(nn.HybridBlock):\n"
        "    def hybrid_forward(self, F, x):\n        return normalize(F, x)\n",
        Valid(
            _IMPORTS + "from .utils import normalize\n\nclass Net(nn.HybridBlock):\n"
            "    def hybrid_forward(self, F, x):\n        return normalize(F, x)\n",
            project=(("utils", "def normalize(F, x):\n    return F.broadcast_div(x, F.max(x))\n"),),
        ),
        Valid(
            _IMPORTS + "from .utils import report\n\nclass Net(nn.HybridBlock):\n"
            "    def hybrid_forward(self, F, x):\n        report(self.units)\n"
            "        return x\n",
            project=(("utils", "def report(n):\n    print(n.asnumpy())\n"),),
        ),
        _IMPORTS + "def evaluate(net, x):\n    return net(x).asnumpy()\n",
        _block("eps = float(self.units)\nreturn x * eps"),
        Valid(
            _IMPORTS + "from .base import Base\n\nclass Net(Base):\n"
            "    def hybrid_forward(self, F, x):\n        return x.asnumpy()\n",
            project=(("base", "from mxnet.gluon import nn\n\nclass Base(nn.Block):\n    pass\n"),),
        ),
        # A test double that refuses hybridize(): it always runs imperatively.
        """from mxnet import gluon


class Doubler(gluon.HybridBlock):
    def hybridize(self, active=True, **kwargs):
        raise NotImplementedError("imperative only")

    def hybrid_forward(self, F, x):
        return x * 2 if x.sum().asscalar() > 0 else x
""",
    )
