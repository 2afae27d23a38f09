"""MXL110 unknown-mxnet-member: finds `F.<name>` that neither `mx.nd` nor `mx.sym` has, and
members of a tensor that neither NDArray nor Symbol has but that are one typo away from one, in
MXNet 1.x `hybrid_forward` and the helpers it calls.

The names are MXNet's own (`mxlint/knowledge/api.py`, generated from MXNet). Its findings are
found by the family's one analysis per file (`_analysis.py`); its tests are the examples below
(run by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL110.txt`.
"""

from __future__ import annotations

import libcst as cst

from mxlint.checker import FileContext, FixSpec, NodeEdit, shortened
from mxlint.knowledge.api import api
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.hybridization._arrays import array_origin
from mxlint.rules.hybridization._examples import _GUARDED, _L, _MX2, _block

UNKNOWN_FUNCTION = (
    "`{f}.{name}` exists in neither `mx.nd` nor `mx.sym` (MXNet 1.9.1): AttributeError on the "
    "first call{suggestion}"
)
UNKNOWN_MEMBER = (
    "`{code}`: neither NDArray nor Symbol has `.{name}` (MXNet 1.9.1): AttributeError on the "
    "first call{suggestion}"
)
#: What to do when a helper called from a hybridized method does this, said at the call.
SITE_ADVICE = "use a name MXNet has"


#: A block whose helper calls an operator through its `F` parameter, given `{given}`.
_HELPER = """import mxnet as mx
from mxnet import gluon


class AnchorHead(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.body = gluon.nn.Conv2D(8, 3, padding=1)

    def hybrid_forward(self, F, x):
        contrib = mx.nd.contrib if isinstance(x, mx.nd.NDArray) else mx.sym.contrib
        y, anchors = self.block_forward(x, self.body, {given})
        return F.concat(y.flatten(), anchors.flatten(), dim=1)

    def block_forward(self, x, block, F):
        y = block(x)
        return y, F.MultiBoxPrior(y, sizes=[0.2], ratios=[1.0])
"""


def suggestion(close: str | None) -> str:
    return f"; did you mean `{close}`?" if close else ""


#: Methods of Python's containers and strings: never taken for a tensor typo.
PYTHON_MEMBERS = frozenset(
    name for kind in (list, dict, tuple, set, str) for name in dir(kind) if not name.startswith("_")
)


def closest(name: str, candidates: frozenset[str] | list[str], cutoff: float = 0.8) -> str | None:
    """The one name a typo most plausibly meant (difflib's ratio >= `cutoff`), if any."""
    import difflib  # only when a name is not known

    found = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=cutoff)
    return found[0] if found else None


def unknown_member(name: str) -> bool:
    """A public name no MXNet tensor has and no Python container has either: worth a typo
    check (the cheap half of it; `closest` is the costly one)."""
    return (
        not name.startswith("_") and name not in PYTHON_MEMBERS and name not in api().tensor_members
    )


def typo_message(code: str, name: str, close: str) -> str:
    return UNKNOWN_MEMBER.format(code=code, name=name, suggestion=suggestion(close))


def check_member(ctx: FileContext, node: cst.Attribute) -> None:
    """`x.resahpe` where `x` is an NDArray of imperative code (`_arrays.py`): a member NDArray
    lacks, one typo away from one it has. Hybridized code is the family's analysis."""
    name = node.attr.value
    if type(node.value) not in (cst.Name, cst.Call) or not unknown_member(name):
        return
    # Cheapest first: most attributes read are not of an NDArray bound to an `mx.nd` call.
    if array_origin(ctx, node.value, several=False) is None:
        return
    if any(type(s) is cst.FunctionDef and s.name.value == "hybrid_forward" for s in ctx.stack):
        return
    close = closest(name, api().ndarray.all)
    if close is None:
        return
    ctx.report(
        node,
        UnknownMxnetMember,
        typo_message(shortened(ctx.code(node), 40), name, close),
        fix=FixSpec("unsafe", f"Replace `{name}` with `{close}`", (NodeEdit(node.attr, close),)),
    )


class UnknownMxnetMember(Rule):
    code = "MXL110"
    name = "unknown-mxnet-member"
    # Raised in both modes: the entry script that reaches the line fails there.
    runtime = Runtime("raise", loud=True, error=r"AttributeError: .*has no attribute")
    message = "`F.<name>` or a tensor member that MXNet does not have (a typo)"
    fixable = "unsafe"
    mxnet = "1"
    what = """
        Finds `F.<name>` (also `F.contrib.<name>`, `F.linalg.`, `F.random.`, `F.image.`,
        `F.sparse.`, `F.np.`, `F.npx.`) that neither `mx.nd` nor `mx.sym` has, and a tensor's
        method or attribute that neither NDArray nor Symbol has when it is one typo away from
        one they have
        (`x.resahpe(...)`), in MXNet 1.x `hybrid_forward` and the helpers it calls, and on
        NDArrays of imperative code (names bound to an `mx.nd` operator's result). A helper's
        `F` parameter is the namespace only where the block passes its own `F` (or `mx.nd`,
        `mx.sym`); given another module (`mx.nd.contrib`, chosen by the input's type), its
        members are that module's and are not checked as `F`'s (so for MXL111).
    """
    why = """
        The name does not exist in either mode: the first batch raises `AttributeError`, after
        data loading and model construction have run. The names are MXNet 1.9.1's own,
        generated from the library, so a real operator is never taken for a typo.
    """
    example = """
        def hybrid_forward(self, F, x):
            return x.resahpe((0, -1))
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            return x.reshape((0, -1))
    """
    fix_safety = """
        Unsafe: the replacement is the closest name MXNet has, which is what was meant in the
        usual case but is a guess; review it. No fix when no name is close.
    """
    invalid = (
        Example(
            _block("return x.resahpe((0, -1))"),
            line=_L,
            expected_fix=_block("return x.reshape((0, -1))"),
        ),
        Example(
            _block("return F.reluu(self.dense(x))"),
            line=_L,
            expected_fix=_block("return F.relu(self.dense(x))"),
        ),
        Example(_block("return F.contrib.no_such_operator(x)"), line=_L),
        Example(_block("y = F.relu(x)\nreturn y.expnad_dims(1)"), line=_L + 1),
        # A helper called with the block's namespace: its `F` is the mode's namespace.
        Example(_HELPER.format(given="F"), line=12),
        Example(
            "import mxnet as mx\n\nx = mx.nd.ones((2, 3))\ny = x.tranpose()\n",
            line=4,
            expected_fix="import mxnet as mx\n\nx = mx.nd.ones((2, 3))\ny = x.transpose()\n",
        ),
    )
    valid = (
        # The helper's `F` is given another module (`mx.nd.contrib` or `mx.sym.contrib`, by
        # the input's type): what it holds is not the namespace's.
        _HELPER.format(given="contrib"),
        _block("return x.reshape((0, -1))"),
        _block("return F.contrib.BilinearResize2D(x, height=2, width=2)"),
        _block("states = [x]\nstates.append(F.relu(x))\nreturn states"),
        _block("return x.my_custom_method()"),
        _block("return F.np.add(x, x) + F.npx.relu(x)"),
        _GUARDED.replace("print(y, y.shape, y.asnumpy())", "print(y.resahpe(2))"),
        Valid(_MX2 + "        return self.dense(x).resahpe((2, -1))\n", mxnet="2"),
        "import mxnet as mx\n\nx = mx.nd.load('params')\ny = x.itmes()\n",
        "import mxnet as mx\n\nx = mx.nd.ones((2, 3))\ny = x.items()\nz = x.my_helper\n",
    )
