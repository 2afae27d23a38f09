"""MXL204 param-data-without-ctx: finds `param.data()` / `param.grad()` called without a context on
the parameters of a network initialised on a list of (possibly GPU) contexts.

The functions after the class decide and word its findings; the family's checker
(`rules/contexts/checker.py`) runs them. Its tests are
the examples below (run by `tests/test_rule_examples.py`), `tests/test_contexts.py` and
`tests/snapshots/MXL204.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint.checker import FixSpec, NodeEdit
from mxlint.placement import (
    Ctx,
    ParamRead,
    Scope,
)
from mxlint.rule import CONTEXT_ERROR, Example, Rule, Runtime

if TYPE_CHECKING:
    from mxlint.rules.contexts.checker import ContextChecker


class ParamDataWithoutCtx(Rule):
    code = "MXL204"
    name = "param-data-without-ctx"
    runtime = Runtime("context", loud=True, error=CONTEXT_ERROR)
    message = (
        "`.{method}()` without `ctx` on a parameter initialised on several contexts "
        "(`{ctx}`) fails: pass one context (`.{method}({ctx0})`) or use "
        "`.list_{method}()`"
    )
    what = """
        Finds `param.data()` / `param.grad()` called without a context on the parameters of a
        network initialised on a list of (possibly GPU) contexts, in loops and in list, dict
        and set comprehensions over its parameters.
    """
    why = """
        With several contexts, `Parameter.data()` looks up the copy on the *current* context
        (`cpu(0)`), which does not exist, and raises `RuntimeError: Parameter ... was not
        initialized on context cpu(0)`. Code written and tested on one GPU breaks when a
        second GPU is added.
    """
    example = """
        ctx = [mx.gpu(0), mx.gpu(1)]
        net.initialize(ctx=ctx)
        print(net.weight.data())
    """
    use_instead = """
        ctx = [mx.gpu(0), mx.gpu(1)]
        net.initialize(ctx=ctx)
        print(net.weight.data(ctx[0]))
    """
    fix_safety = """
        The fix passes the first context of the list (`.data(ctx[0])`). It is unsafe: it reads
        one replica where the code may have meant all of them (`list_data()`).
    """
    fixable = "unsafe"
    invalid = (
        Example(
            "import mxnet as mx\nfrom mxnet import gluon\n"
            "ctx = [mx.gpu(0), mx.gpu(1)]\n"
            "net = gluon.nn.Dense(4)\n"
            "net.initialize(ctx=ctx)\n"
            "w = net.weight.data()\n",
            line=6,
            expected_fix=(
                "import mxnet as mx\nfrom mxnet import gluon\n"
                "ctx = [mx.gpu(0), mx.gpu(1)]\n"
                "net = gluon.nn.Dense(4)\n"
                "net.initialize(ctx=ctx)\n"
                "w = net.weight.data(ctx[0])\n"
            ),
        ),
        Example(
            "import mxnet as mx\nfrom mxnet import gluon\n"
            "ctx = [mx.gpu(i) for i in range(num_gpus)]\n"
            "net = gluon.nn.Dense(4)\n"
            "net.initialize(ctx=ctx)\n"
            "for name, param in net.collect_params().items():\n"
            "    print(name, param.grad().norm())\n",
            line=7,
        ),
        Example(
            "import mxnet as mx\nfrom mxnet import gluon\n\n"
            "def report(devices=[mx.gpu(0), mx.gpu(1)]):\n"
            "    net = gluon.nn.Dense(4)\n"
            "    net.initialize(ctx=devices)\n"
            "    params = net.collect_params()\n"
            "    return params['dense0_weight'].data()\n",
            line=8,
        ),
    )
    valid = (
        "import mxnet as mx\nfrom mxnet import gluon\nctx = mx.gpu(0)\n"
        "net = gluon.nn.Dense(4)\nnet.initialize(ctx=ctx)\nw = net.weight.data()\n",
        "import mxnet as mx\nfrom mxnet import gluon\nctx = [mx.gpu(0), mx.gpu(1)]\n"
        "net = gluon.nn.Dense(4)\nnet.initialize(ctx=ctx)\nw = net.weight.data(ctx[0])\n"
        "ws = net.weight.list_data()\n",
        "import mxnet as mx\nfrom mxnet import gluon\nctx = [mx.cpu(0), mx.cpu(1)]\n"
        "net = gluon.nn.Dense(4)\nnet.initialize(ctx=ctx)\nw = net.weight.data()\n",
        "import mxnet as mx\nfrom mxnet import gluon\nctx = [mx.gpu(0), mx.gpu(1)]\n"
        "net = gluon.nn.Dense(4)\nnet.initialize(ctx=ctx)\n"
        "with ctx[0]:\n    w = net.weight.data()\n",
        # placement unknown (library code)
        "def dump(net):\n    return {k: p.data() for k, p in net.collect_params().items()}\n",
        # a batch's .data() is not a parameter
        "import mxnet as mx\nctx = [mx.gpu(0), mx.gpu(1)]\nnet = build()\nnet.initialize(ctx=ctx)\n"
        "for batch in train_iter:\n    x = batch.data()\n",
    )


def check_param_read(
    checker: ContextChecker, scope: Scope, event: ParamRead, symbol: str | None, data_fn: str
) -> None:
    node = event.node
    net_ctx = event.net.ctx
    if node.args or event.default_ctx is not None or net_ctx is None:
        return
    if not (net_ctx.multi and net_ctx.gpu is True and event.net.placed):
        return
    func = node.func
    method = func.attr.value if type(func) is cst.Attribute else "data"
    src = net_ctx.src or "ctx"
    ctx0 = f"{src}[0]" if src.isidentifier() else "ctx[0]"
    fix = None
    if src.isidentifier() and isinstance(scope.env.get(src), Ctx):
        fix = FixSpec(
            "unsafe",
            f"Read the copy on `{ctx0}`",
            (NodeEdit(node, f"{checker.ctx.code(func)}({ctx0})"),),
        )
    checker.ctx.report(
        node,
        ParamDataWithoutCtx,
        ParamDataWithoutCtx.format(method=method, ctx=src, ctx0=ctx0),
        fix=fix,
        symbol=symbol,
        data={"function": data_fn, "ctx": src},
    )
