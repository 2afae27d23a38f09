"""MXL118 unknown-operator-keyword: finds an MXNet operator call with a keyword argument the
operator does not have: `F.concat(a, b, axis=1)` (concat's is `dim`), `F.softmax(x, axes=1)`.

Which keywords an operator takes is MXNet's own registry (`keywords` of the signatures in
`mxlint/knowledge/api.py`, generated from MXNet). The function after the class decides and
words its findings; `OperatorCallChecker` (`rules/hybridization/checker.py`) runs it on every
call with keywords. Its tests are the examples below (run by `tests/test_rule_examples.py`) and
`tests/snapshots/MXL118.txt`.
"""

from __future__ import annotations

import libcst as cst

from mxlint.checker import FileContext, FixSpec, NodeEdit, shortened
from mxlint.knowledge.api import ALWAYS_ACCEPTED, api
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.hybridization._examples import _IMPORTS, _L, _block
from mxlint.rules.hybridization.unknown_mxnet_member import closest

KEYWORD_ADVICE = (
    "`{call}` passes `{keyword}=`, which `{op}` does not take (its parameters: {params}): MXNet "
    "raises `Cannot find argument '{keyword}'` in both modes{suggestion}"
)
#: Keywords people carry over from NumPy or from another operator, and what MXNet calls them
#: there (checked against the operator's parameters before it is suggested).
_MEANT = {"axis": ("dim",), "dim": ("axis",), "axes": ("axis", "axes"), "keepdim": ("keepdims",)}


class UnknownOperatorKeyword(Rule):
    code = "MXL118"
    name = "unknown-operator-keyword"
    runtime = Runtime("raise", loud=True, error=r"Cannot find argument")
    message = "A keyword argument the MXNet operator does not take"
    fixable = "unsafe"
    what = """
        Finds calls of MXNet operators (`F.<op>` in a `hybrid_forward` or a helper taking `F`,
        `mx.nd.<op>` anywhere) with a keyword argument the operator does not have:
        `F.concat(a, b, axis=1)` (`concat` takes `dim`), `F.stack(a, b, dim=1)` (`stack` takes
        `axis`), `F.softmax(x, axes=1)`, `F.sum(x, keepdim=True)`. The accepted keywords are the
        ones MXNet's own parameter parser lists; operators that accept any keyword (`Custom`,
        `gather_nd`) and `mx.sym.<op>` calls (a Symbol also takes attributes such as
        `lr_mult=` as keywords) are not judged.
    """
    why = """
        The generated operator functions accept any keyword and hand it to the operator, which
        rejects what it does not know: `MXNetError: Cannot find argument 'axis', Possible
        Arguments: ...`, imperatively and hybridized alike, at the first batch. The parameters
        each operator takes are read from MXNet's operator registry.
    """
    example = """
        def hybrid_forward(self, F, a, b):
            return F.concat(a, b, axis=1)
    """
    use_instead = """
        def hybrid_forward(self, F, a, b):
            return F.concat(a, b, dim=1)
    """
    fix_safety = """
        Unsafe: the replacement is the operator's parameter the keyword most plausibly meant
        (`axis` -> `dim` for `concat`, a close spelling otherwise); review it. No fix when no
        parameter is close.
    """
    invalid = (
        Example(
            _block("return F.concat(x, self.dense(x), axis=1)"),
            line=_L,
            expected_fix=_block("return F.concat(x, self.dense(x), dim=1)"),
        ),
        Example(
            _block("return F.softmax(x, axes=-1)"),
            line=_L,
            expected_fix=_block("return F.softmax(x, axis=-1)"),
        ),
        Example(
            _IMPORTS + "import mxnet as mx\n\ns = mx.nd.sum(mx.nd.ones((2, 3)), keepdim=True)\n",
            line=6,
        ),
    )
    valid = (
        _block("return F.concat(x, self.dense(x), dim=1)"),
        _block("return F.softmax(x, axis=-1, name='probs')"),
        _block("return F.Dropout(x, p=0.5, axes=(1,))"),
        _block("return F.gather_nd(x, x, axis=1)"),
        _IMPORTS
        + "import mxnet as mx\n\ny = mx.sym.FullyConnected(mx.sym.var('x'), num_hidden=2, lr_mult=0)\n",
        _IMPORTS + "import mxnet as mx\n\nx = mx.nd.zeros((2, 3), ctx=mx.cpu(), dtype='float16')\n",
        _IMPORTS + "def concat(*parts, axis=0):\n    return parts\n\nconcat(1, 2, axis=3)\n",
        Valid("from mxnet import np\n\ny = np.concatenate([np.ones(2)], axis=0)\n", mxnet="2"),
    )


def check_keywords(ctx: FileContext, call: cst.Call, key: str) -> None:
    """Report the first keyword the operator does not take."""
    if key.startswith("sym."):
        return  # a Symbol takes attributes as keywords too (`lr_mult=`, `__layout__=`)
    sig = api().signatures.get(key)
    if sig is None or sig.keywords is None:
        return
    op = key.rsplit(".", 1)[-1]
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value in sig.keywords:
            continue
        keyword = arg.keyword.value
        params = sorted(sig.keywords - ALWAYS_ACCEPTED)
        meant = next((m for m in _MEANT.get(keyword, ()) if m in sig.keywords), None)
        if meant is None:
            meant = closest(keyword, params, cutoff=0.75)
        listed = ", ".join(f"`{p}`" for p in params[:8]) + (", ..." if len(params) > 8 else "")
        message = KEYWORD_ADVICE.format(
            call=shortened(ctx.code(call), 50),
            keyword=keyword,
            op=op,
            params=listed,
            suggestion=f"; did you mean `{meant}=`?" if meant else "",
        )
        fix = (
            FixSpec(
                "unsafe", f"Replace `{keyword}=` with `{meant}=`", (NodeEdit(arg.keyword, meant),)
            )
            if meant
            else None
        )
        ctx.report(arg, UnknownOperatorKeyword, message, fix=fix)
        return
