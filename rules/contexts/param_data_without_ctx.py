"""MXL204 param-data-without-ctx: finds `param.data()` / `param.grad()` called without a context on
the parameters of a network initialised on a list of (possibly GPU) contexts.

Its findings are decided by the family's checker (`rules/contexts/checker.py`); its tests are
the examples below (run by `tests/test_rule_examples.py`), `tests/test_contexts.py` and
`tests/snapshots/MXL204.txt`.
"""

from __future__ import annotations

from mxlint.rule import CONTEXT_ERROR, Example, Rule, Runtime


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
        network initialised on a list of (possibly GPU) contexts.
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
