"""Inputs for a block under verification (runs inside the verify subprocess): one candidate list
per input of its forward, by what the input is (its name, the first layer it reaches), searched
in order within a small budget.

A `(batch, dim)` input next to a `(batch,)` label or a list of recurrent states cannot share one
probe shape, so every input gets its own rank, dtype and (for labels and token ids) integer
values. Shapes the project itself passes at a call site, or that `[tool.mxlint.verify.blocks]`
declares, come first.
"""

from __future__ import annotations

import inspect
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mxnet import gluon

BATCH = 2
#: Input shapes tried (in order) for a tensor input nothing else describes.
LADDER: tuple[tuple[int, ...], ...] = (
    (2, 8),
    (2, 3, 16, 16),
    (2, 16),
    (2, 1, 28, 28),
    (2, 3, 32, 32),
    (2, 4, 8),
    (2, 10),
    (5, 2, 8),
    (2, 32),
    (2, 3, 8, 8),
    (2, 64),
    (2, 8, 16),
    (2, 784),
)
#: At most this many combinations are tried before giving up.
BUDGET = 40

LABEL = re.compile(r"^(y|labels?|targets?|tags?|classes|cls|gt)$|_labels?$|_targets?$")
LENGTH = re.compile(r"(valid_?)?len(gth)?s?$|seq_len|num_valid")
STATE = re.compile(r"^(begin_)?states?$|^hidden(_state)?s?$|^h$|^c$|^hc$|^prev_state|_states?$")
SCALAR = re.compile(r"^(factor|scale|temperature|alpha|beta|gamma|weight|coef|t)$")
MASK = re.compile(r"mask")
TOKENS = re.compile(r"tokens?|ids$|indices|words?$|^idx$")


@dataclass(frozen=True)
class Input:
    """One input: a shape (or, for recurrent states, a list of shapes) and its values."""

    shape: tuple[int, ...] | None = None
    integer: bool = False
    high: int = 5
    #: A list of arrays, one shape each (recurrent states).
    parts: tuple[tuple[int, ...], ...] | None = None

    def describe(self) -> str:
        if self.parts is not None:
            return "[" + ", ".join(str(list(p)) for p in self.parts) + "]"
        kind = " int" if self.integer else ""
        return f"{list(self.shape or ())}{kind}"

    def to_json(self) -> Any:
        if self.parts is not None:
            return {"parts": [list(p) for p in self.parts]}
        return {"shape": list(self.shape or ()), "integer": self.integer, "high": self.high}

    @staticmethod
    def from_json(value: Any) -> Input:
        if isinstance(value, dict) and "parts" in value:
            return Input(parts=tuple(tuple(int(d) for d in p) for p in value["parts"]))
        if isinstance(value, dict):
            return Input(
                tuple(int(d) for d in value.get("shape", ())),
                integer=bool(value.get("integer")),
                high=int(value.get("high", 5)),
            )
        return Input(tuple(int(d) for d in value))


@dataclass
class Signature:
    """The forward's inputs: names, in order, and how many are required."""

    names: list[str]
    required: int
    defaults: dict[str, Any] = field(default_factory=dict)


def signature(block: gluon.Block) -> Signature:
    method = type(block).hybrid_forward if isinstance(block, gluon.HybridBlock) else None
    skip = 2
    if method is None or method is gluon.HybridBlock.hybrid_forward:
        method, skip = type(block).forward, 1
    own = set(getattr(block, "_reg_params", {}))
    names, required, defaults = [], 0, {}
    for p in list(inspect.signature(method).parameters.values())[skip:]:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or p.name in own:
            continue
        names.append(p.name)
        if p.default is p.empty:
            required += 1
        else:
            defaults[p.name] = p.default
    return Signature(names, max(1, required) if names else 1, defaults)


def _first_leaf(block: gluon.Block) -> gluon.Block | None:
    children = list(block._children.values())
    if not children:
        return block if block._reg_params else None
    for child in children:
        leaf = _first_leaf(child)
        if leaf is not None:
            return leaf
    return None


def _hidden_size(block: gluon.Block, kwargs: dict[str, Any]) -> list[int]:
    """Recurrent state sizes: the block's cells and layers, then its constructor arguments."""
    sizes: list[int] = []

    def walk(b: gluon.Block) -> None:
        size = getattr(b, "_hidden_size", None)
        if isinstance(size, int) and size > 0 and size not in sizes:
            sizes.append(size)
        for child in b._children.values():
            walk(child)

    walk(block)
    for key in ("hidden", "hidden_size", "num_hidden", "units", "hidden_dim"):
        value = kwargs.get(key)
        if isinstance(value, int) and value > 0 and value not in sizes:
            sizes.append(value)
    return sizes or [8]


def first_input(block: gluon.Block) -> tuple[list[Input], bool]:
    """Candidates for the first input from the first layer it reaches, then the ladder; and
    whether that layer takes token ids (an Embedding)."""
    leaf = _first_leaf(block)
    first: list[Input] = []
    integer = False
    if leaf is not None:
        name = type(leaf).__name__
        weight = leaf._reg_params.get("weight")
        shape = tuple(weight.shape) if weight is not None and weight.shape else ()
        if name == "Embedding":
            integer = True
            vocab = int(shape[0]) if shape and shape[0] else 5
            high = max(2, min(vocab, 20))
            first = [Input((2, 6), True, high), Input((6, 2), True, high)]
        elif name == "Dense" and len(shape) == 2 and shape[1]:
            first = [Input((2, int(shape[1])))]
        elif name.startswith("Conv") and len(shape) >= 3 and shape[1]:
            first = [Input((2, int(shape[1])) + (16,) * (len(shape) - 2))]
        elif name in ("LSTM", "GRU", "RNN"):
            size = getattr(leaf, "_input_size", 0) or 8
            first = [Input((5, 2, size)), Input((2, 5, size))]
    for param in block._reg_params.values():  # a block's own parameters: their sizes
        for size in tuple(param.shape or ())[-1:]:
            if size and Input((BATCH, int(size))) not in first:
                first.append(Input((BATCH, int(size))))
    ladder = [Input(s) for s in LADDER]
    sized = [
        Input(shape)
        for size in _sizes(block)
        for shape in ((BATCH, 4, size), (BATCH, size))
        if Input(shape) not in first
    ]
    return first + [c for c in ladder + sized if c not in first], integer


#: Constructor arguments that usually size the input's last axis.
SIZE_NAMES = re.compile(r"units|hidden|dim|channels|size|features|d_model|embed")


def _sizes(block: gluon.Block) -> list[int]:
    """Sizes the constructor was given or defaults to (`units=32`): an input's last axis is
    often one of them (a residual connection, attention over `units` features)."""
    try:
        params = inspect.signature(type(block).__init__).parameters.values()
    except (TypeError, ValueError):
        return []
    out = []
    for p in params:
        value = getattr(block, p.name, p.default)
        if (
            SIZE_NAMES.search(p.name)
            and isinstance(value, int)
            and not isinstance(value, bool)
            and 1 < value <= 4096
            and value not in out
        ):
            out.append(value)
    return out


def _batch_sizes(first: Input) -> list[int]:
    shape = first.shape or (BATCH,)
    out = [shape[0]]
    if len(shape) > 1 and shape[1] != shape[0]:
        out.append(shape[1])
    return out


def _other(name: str, first: Input, block: gluon.Block, kwargs: dict[str, Any]) -> list[Input]:
    """Candidates for an input after the first, relative to the first's candidate."""
    lowered = name.lower()
    shape = first.shape or (BATCH, 8)
    batches = _batch_sizes(first)
    if STATE.search(lowered):
        out: list[Input] = []
        for b in batches:
            for h in _hidden_size(block, kwargs):
                out += [Input(parts=((b, h),)), Input((b, h)), Input(parts=((b, h), (b, h)))]
        return out
    if LENGTH.search(lowered):
        return [Input((b,), True, max(2, shape[1] if len(shape) > 1 else 2)) for b in batches]
    if LABEL.search(lowered):
        return [Input((b,), True) for b in batches] + [Input((shape[0], 1)), Input(shape)]
    if SCALAR.search(lowered):
        return [Input((1,)), Input(shape)]
    if MASK.search(lowered):
        out = [Input(shape, True, 2)]
        if len(shape) > 2:
            out += [Input(shape[:2] + (shape[1],), True, 2), Input(shape[:2], True, 2)]
        return out + [Input((shape[0], 1), True, 2)]
    if TOKENS.search(lowered):
        return [Input(shape[:2], True)] + [Input(shape)]
    return [Input(shape, first.integer, first.high), Input((shape[0],)), Input((shape[0], 1))]


def candidates(
    block: gluon.Block,
    sig: Signature,
    kwargs: dict[str, Any],
    given: list[list[Input]] | None = None,
    all_inputs: bool = False,
) -> Iterator[list[Input]]:
    """Input lists to try, best first: the given ones (config, call sites), then per-input
    candidates around each first-input candidate, within BUDGET."""
    seen: set[tuple[Input, ...]] = set()
    count = 0
    for inputs in given or []:
        key = tuple(inputs)
        if key not in seen:
            seen.add(key)
            count += 1
            yield inputs
    n = len(sig.names) if all_inputs else sig.required
    firsts, _ = first_input(block)
    for first in firsts:
        rest = [_other(sig.names[i], first, block, kwargs) for i in range(1, n)]
        for combo in itertools.islice(itertools.product(*rest), 12):
            inputs = [first, *combo]
            key = tuple(inputs)
            if key in seen:
                continue
            seen.add(key)
            count += 1
            if count > BUDGET:
                return
            yield inputs


def describe(inputs: list[Input]) -> str:
    return "[" + ", ".join(i.describe() for i in inputs) + "]"
