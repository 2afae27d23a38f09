"""Pieces the hybridization rules' examples are written with."""

from __future__ import annotations

_IMPORTS = "from mxnet import nd, autograd\nfrom mxnet.gluon import nn\n\n"


def _block(body: str, args: str = "x", init: str = "") -> str:
    """A HybridBlock with `body` (4-space indented lines) as its hybrid_forward."""
    init_lines = "".join(f"        {line}\n" for line in init.splitlines())
    return (
        _IMPORTS + "class Net(nn.HybridBlock):\n"
        "    def __init__(self, units=4, **kwargs):\n"
        "        super().__init__(**kwargs)\n"
        "        self.units = units\n"
        "        self.dense = nn.Dense(units)\n"
        + init_lines
        + f"\n    def hybrid_forward(self, F, {args}):\n"
        + "".join(f"        {line}\n" for line in body.splitlines())
    )


#: Line of the first body statement in `_block` without `init`.
_L = 11

_MX2 = (
    "from mxnet import np, npx\nfrom mxnet.gluon import nn\nnpx.set_np()\n\n"
    "class Net(nn.HybridBlock):\n"
    "    def __init__(self, **kwargs):\n"
    "        super().__init__(**kwargs)\n"
    "        self.dense = nn.Dense(4)\n\n"
    "    def forward(self, x):\n"
)

_PLAIN_BLOCK = (
    _IMPORTS + "class Net(nn.Block):\n"
    "    def forward(self, x):\n"
    "        if x.sum() > 0:\n"
    "            x = x * 2\n"
    "        return x[0], len(x), x.shape, x.asnumpy()\n"
)

_GUARDED = _block(
    "y = self.dense(x)\nif F is nd:\n    print(y, y.shape, y.asnumpy())\n"
    "    assert y.sum() > 0\nreturn y"
)
