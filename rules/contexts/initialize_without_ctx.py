"""MXL203 initialize-without-ctx: finds a new layer `initialize()`d without `ctx` after (or before
being attached to) a model whose parameters were placed on a (possibly GPU) context — the
classic fine-tuning step of replacing the output layer of a pretrained network.

The functions after the class decide and word its findings; the family's checker
(`rules/contexts/checker.py`) runs them. Its tests are
the examples below (run by `tests/test_rule_examples.py`), `tests/test_contexts.py` and
`tests/snapshots/MXL203.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint.checker import FixSpec, NodeEdit
from mxlint.placement import (
    Ctx,
    InitNoCtx,
    Scope,
)
from mxlint.rule import CONTEXT_ERROR, Example, Rule, Runtime
from mxlint.rules.contexts._analysis import _add_keyword, _spelled_ctx

if TYPE_CHECKING:
    from mxlint.rules.contexts.checker import ContextChecker


class InitializeWithoutCtx(Rule):
    code = "MXL203"
    name = "initialize-without-ctx"
    runtime = Runtime("context", loud=True, error=CONTEXT_ERROR)
    message = (
        "`{block}.initialize()` has no `ctx`: the new layer's parameters land on cpu "
        "while the model is on `{ctx}`; pass `ctx={ctx}` (or call "
        "`collect_params().reset_ctx({ctx})` afterwards)"
    )
    what = """
        Finds a new layer `initialize()`d without `ctx` after (or before being attached to) a
        model whose parameters were placed on a (possibly GPU) context — the classic
        fine-tuning step of replacing the output layer of a pretrained network.
    """
    why = """
        `initialize()` without `ctx` puts the parameters on the current default context,
        `cpu(0)`. The rest of the model is on the GPU, so the first forward pass fails with
        `Parameter ... was not initialized on context gpu(0)`. A later
        `collect_params().reset_ctx(ctx)` would fix it; this rule stays silent then.
    """
    example = """
        net = vision.resnet50_v1(pretrained=True, ctx=ctx)
        with net.name_scope():
            net.output = nn.Dense(num_classes)
        net.output.initialize(init.Xavier())
    """
    use_instead = """
        net = vision.resnet50_v1(pretrained=True, ctx=ctx)
        with net.name_scope():
            net.output = nn.Dense(num_classes)
        net.output.initialize(init.Xavier(), ctx=ctx)
    """
    fix_safety = """
        The fix adds `ctx=<the model's context>` to the call. It is unsafe: it changes where the
        layer's memory lives. Offered only when the context is a variable or a constant
        expression.
    """
    fixable = "unsafe"
    invalid = (
        Example(
            "import mxnet as mx\nfrom mxnet import init\nfrom mxnet.gluon import nn\n"
            "from mxnet.gluon.model_zoo import vision\n"
            "ctx = mx.gpu()\n"
            "net = vision.resnet50_v1(pretrained=True, ctx=ctx)\n"
            "with net.name_scope():\n"
            "    net.output = nn.Dense(10)\n"
            "net.output.initialize(init.Xavier())\n",
            line=9,
            expected_fix=(
                "import mxnet as mx\nfrom mxnet import init\nfrom mxnet.gluon import nn\n"
                "from mxnet.gluon.model_zoo import vision\n"
                "ctx = mx.gpu()\n"
                "net = vision.resnet50_v1(pretrained=True, ctx=ctx)\n"
                "with net.name_scope():\n"
                "    net.output = nn.Dense(10)\n"
                "net.output.initialize(init.Xavier(), ctx=ctx)\n"
            ),
        ),
        Example(
            "import mxnet as mx\nfrom mxnet.gluon import nn\n\n"
            "def build(ctx=mx.gpu(0)):\n"
            "    body = nn.HybridSequential()\n"
            "    body.initialize(ctx=ctx)\n"
            "    head = nn.Dense(2)\n"
            "    head.initialize()\n"
            "    body.add(head)\n"
            "    return body\n",
            line=8,
        ),
        Example(
            "import mxnet as mx\nimport gluoncv\nfrom mxnet.gluon import nn\n"
            "ctx = [mx.gpu(i) for i in range(4)]\n"
            "net = gluoncv.model_zoo.get_model('resnet18_v1b', pretrained=True, ctx=ctx)\n"
            "net.fc = nn.Dense(5)\n"
            "net.fc.initialize()\n",
            line=7,
        ),
    )
    valid = (
        "import mxnet as mx\nfrom mxnet.gluon import nn\nfrom mxnet.gluon.model_zoo import vision\n"
        "ctx = mx.gpu()\nnet = vision.resnet18_v1(pretrained=True, ctx=ctx)\n"
        "net.output = nn.Dense(10)\nnet.output.initialize(ctx=ctx)\n",
        # reset_ctx afterwards moves everything
        "import mxnet as mx\nfrom mxnet.gluon import nn\nfrom mxnet.gluon.model_zoo import vision\n"
        "ctx = mx.gpu()\nnet = vision.resnet18_v1(pretrained=True, ctx=ctx)\n"
        "net.output = nn.Dense(10)\nnet.output.initialize()\n"
        "net.collect_params().reset_ctx(ctx)\n",
        # the model is on the cpu
        "import mxnet as mx\nfrom mxnet.gluon import nn\nfrom mxnet.gluon.model_zoo import vision\n"
        "net = vision.resnet18_v1(pretrained=True)\n"
        "net.output = nn.Dense(10)\nnet.output.initialize()\n",
        # pretrained weights fetched for the cpu, everything moved later
        "import mxnet as mx\nfrom mxnet.gluon import nn\nfrom mxnet.gluon.model_zoo import vision\n"
        "ctx = mx.gpu()\nnet = vision.resnet18_v1(pretrained=True)\n"
        "net.output = nn.Dense(10)\nnet.output.initialize()\nnet.collect_params().reset_ctx(ctx)\n",
        # an unrelated layer on the cpu
        "import mxnet as mx\nfrom mxnet.gluon import nn\nctx = mx.gpu()\n"
        "net = nn.Dense(3)\nnet.initialize(ctx=ctx)\nprobe = nn.Dense(1)\nprobe.initialize()\n",
        # whole model initialised once, no ctx anywhere
        "from mxnet.gluon import nn\nnet = nn.HybridSequential()\nnet.add(nn.Dense(3))\n"
        "net.initialize()\n",
        # CPU-only context
        "import mxnet as mx\nfrom mxnet.gluon import nn\nctx = mx.cpu()\n"
        "net = nn.Sequential()\nnet.initialize(ctx=ctx)\nhead = nn.Dense(2)\nhead.initialize()\n"
        "net.add(head)\n",
    )


def report_init(
    checker: ContextChecker,
    scope: Scope,
    event: InitNoCtx,
    target: Ctx,
    symbol: str | None,
    data_fn: str,
) -> None:
    node = event.node
    func = node.func
    block = checker.ctx.code(func.value) if type(func) is cst.Attribute else "layer"
    src = target.src or "ctx"
    fix = None
    spelled = _spelled_ctx(scope, target)
    if spelled is not None:
        fix = FixSpec(
            "unsafe",
            f"Initialise on `{spelled}`",
            (NodeEdit(node, _add_keyword(checker.ctx.code, node, "ctx", spelled)),),
        )
    checker.ctx.report(
        node,
        InitializeWithoutCtx,
        InitializeWithoutCtx.format(block=block, ctx=src),
        fix=fix,
        symbol=symbol,
        data={"function": data_fn, "ctx": src},
    )
