"""MXL113 block-state-in-forward: finds a hybridized forward pass that changes the block's
Python-side state: attributes assigned or updated (`self.count += 1`, `self.cache = x`),
containers held by the block changed (`self.outputs.append(y)`, `self.memory[k] = v`) and
parameters set (`self.weight.set_data(...)`).

Its findings are found by the family's one analysis per file (`_analysis.py`, deciding through
`_state.py`, run by `checker.py`) and worded by the messages above the class; its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL113.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime
from mxlint.rules.hybridization._examples import _IMPORTS, _L, _MX2, _PLAIN_BLOCK, _block

#: The message for an attribute or a container of the block changed, with the statement.
STATE_ADVICE = (
    "`{code}` changes the block's state in its forward pass: hybridized, the forward runs only "
    "while the graph is traced, so this happens once and never again; keep the state outside "
    "the block (update it in the training loop) or return it as an output"
)
#: The message for a tensor kept on the block, with the statement.
TENSOR_STATE_ADVICE = (
    "`{code}` keeps a tensor on the block in its forward pass: hybridized, this runs once while "
    "the graph is traced and keeps a graph node (a Symbol), never a later call's values; "
    "return it as an output instead"
)
#: The message for a parameter set from the forward pass, with the call.
PARAM_ADVICE = (
    "`{code}` sets a parameter in the forward pass: hybridized, it runs only while the graph is "
    "traced (in MXNet 1.x with a Symbol, which raises `AttributeError: 'Symbol' object has no "
    "attribute 'shape'`); set parameters outside the forward (after `trainer.step()`) or "
    "return the new value as an output"
)


#: What to do when a helper called from a hybridized method does this, said at the call.
SITE_ADVICE = "keep block state out of the forward pass (update it in the training loop)"
#: What happens to it once the block is hybridized, said at the call.
SITE_EFFECT = "which runs only while the graph is traced when this block is hybridized"

_COUNTER = "self.count = 0"


class BlockStateInForward(Rule):
    code = "MXL113"
    name = "block-state-in-forward"
    runtime = Runtime("hybrid", shows=("state",))
    message = (
        "Block state changed in a hybridized forward pass happens once, when the graph is "
        "traced; keep state outside the forward or return it as an output"
    )
    what = """
        Finds a hybridized forward pass (`hybrid_forward`, or an MXNet 2 HybridBlock's
        `forward`) that changes the block's Python-side state: an attribute assigned or updated
        (`self.count += 1`, `self.cache = x`, `self.mode = ...` under `autograd.is_training()`),
        a container the block holds changed (`self.outputs.append(y)`, `self.memory[k] = v`) or
        a parameter set (`self.weight.set_data(...)`, `self.params.get('w').set_data(...)`),
        directly or in a helper method it calls.
    """
    why = """
        Once `hybridize()` is called, the forward's Python code runs only once, while MXNet
        traces the graph; later calls run the cached graph. A counter is incremented once and
        never again, a cached value holds a graph node (a Symbol in MXNet 1.x) instead of the
        last call's values, and a mode-dependent setting keeps whatever the tracing call saw:
        the hybridized block silently diverges from the imperative one every unit test runs.
        `Parameter.set_data` called with a Symbol raises
        `AttributeError: 'Symbol' object has no attribute 'shape'` in MXNet 1.9.1.

        A write on an imperative-only path (`if F is nd:`), a one-time initialisation of a
        non-tensor (`if self.size is None: self.size = ...`), the same constant assigned on
        every call, and an attribute the forward binds afresh and returns (a list of outputs
        built in place) leave the same state either way and are not reported; nor is a plain
        value bound to an attribute that the file neither reads back nor declares in a
        constructor (a record nothing consults). Nor is the per-sequence state of a recurrent
        cell (a subclass of an MXNet `*Cell`) that its `reset()` clears, as MXNet's own
        `ZoneoutCell` keeps `_prev_output`: `unroll()` resets the cell before the first step,
        and inside a hybridized network all steps run in the one trace. In-place writes
        into a tensor (`self.weight.data()[:] = v`, `out=weight`) are MXL107's. `--verify`
        does not run this rule: the divergence is in the block's attributes, which the hybrid
        check (outputs and gradients) does not compare.
    """
    example = """
        def hybrid_forward(self, F, x):
            self.steps += 1
            self.last = x
            return self.dense(x)
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            return self.dense(x), x  # count steps and keep `x` in the training loop
    """
    fix_safety = (
        "This rule has no automatic fix: where the state should live (the training loop, an "
        "output, a constructor argument) depends on what reads it."
    )
    invalid = (
        Example(_block("self.count += 1\nreturn x", init=_COUNTER), line=_L + 1),
        Example(_block("self.cache = F.relu(x)\nreturn x"), line=_L),
        Example(
            _block("y = self.dense(x)\nself.outputs.append(y)\nreturn y", init="self.outputs = []"),
            line=_L + 2,
        ),
        Example(
            _block(
                "if autograd.is_training():\n    self.mode = 'train'\nreturn x",
                init="self.mode = 'eval'",
            ),
            line=_L + 2,
        ),
        Example(
            _block(
                "self.weight.set_data(weight * 0.9)\nreturn x * weight",
                args="x, weight",
                init="self.weight = self.params.get('weight', shape=(4,))",
            ),
            line=_L + 1,
        ),
        Example(
            _block("self._remember(x)\nreturn x") + "\n    def _remember(self, v):\n"
            "        self.memory['last'] = v\n",
            line=_L,
        ),
        Example(
            _MX2 + "        self.steps += 1\n        return self.dense(x)\n", line=11, mxnet="2"
        ),
    )
    valid = (
        _block("return self.dense(x) * self.units", init=_COUNTER),
        _block("if F is nd:\n    self.count += 1\n    self.last = x\nreturn x", init=_COUNTER),
        _block("cache = {}\ncache['x'] = x\ncount = 0\ncount += 1\nreturn cache['x'] * count"),
        _block("if self.size is None:\n    self.size = self.units * 2\nreturn x * self.size"),
        _block("self.outs = []\nself.outs.append(F.relu(x))\nreturn self.outs"),
        _block("self.mode = 'fused'\nreturn x"),
        _PLAIN_BLOCK.replace("if x.sum() > 0:", "self.count += 1\n        if x.sum() > 0:"),
        _block("return x", init=_COUNTER) + "\n    def hybridize(self, active=True, **kwargs):\n"
        "        raise NotImplementedError('runs imperatively')\n\n"
        "    def forward(self, x):\n        self.count += 1\n        return x\n",
        _block("return x + 1", init=_COUNTER) + "\n    def reset(self):\n        self.count = 0\n",
        _IMPORTS + "def step(net, x, log):\n    log.append(net(x))\n",
    )
