"""MXNet's API as generated from MXNet itself (`generate.py`), loaded once, when first asked.

Rules ask here which names a tensor namespace has, which members NDArray and Symbol have, and
what was observed by running MXNet (broadcasting, `reshape` forms, random draws). The data file
is versioned by the MXNet release it was generated from; `tests/test_knowledge.py` regenerates it
from the installed MXNet and fails on any difference.
"""

from __future__ import annotations

import functools
import marshal
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mxlint.knowledge import store

#: The release the committed facts describe (MXNet 1.9.1 is the last 1.x release).
VERSION = "1.9.1"


@dataclass(frozen=True)
class Members:
    """The public members of one tensor class."""

    properties: frozenset[str]
    methods: frozenset[str]
    raising: frozenset[str]  # methods that exist only to raise (Symbol's `asnumpy`...)

    @property
    def all(self) -> frozenset[str]:
        return self.properties | self.methods


@dataclass(frozen=True)
class Signature:
    """How one generated function is called, as MXNet's own signature says."""

    params: tuple[str, ...]
    varargs: bool  # `*data`: every positional argument is an input array
    required: tuple[str, ...]
    tensors: tuple[str, ...]  # parameters that take arrays (`NDArray-or-Symbol`)
    #: the operator's parameters the function does not name (its `**kwargs` go to them)
    operator_params: tuple[str, ...] = ()
    #: keywords that cannot be known (a Python function passing `**kwargs` on, or an operator
    #: that takes any keyword)
    open: bool = True

    @property
    def keywords(self) -> frozenset[str] | None:
        """Every keyword the call accepts; None when that cannot be known. Built on demand:
        kept for 1,800 functions, the sets would cost every process a megabyte."""
        if self.open:
            return None
        return frozenset((*self.params, *self.operator_params)) | ALWAYS_ACCEPTED


#: Keywords every generated operator function takes besides its operator's parameters.
ALWAYS_ACCEPTED = frozenset({"name", "attr", "out", "ctx", "dtype"})


@dataclass(frozen=True)
class Api:
    """The facts of one MXNet release, generated from MXNet itself."""

    version: str
    namespaces: Mapping[str, frozenset[str]]
    ndarray: Members
    symbol: Members
    np_ndarray: Members
    signatures: Mapping[str, Signature]
    takes_ctx: frozenset[str]
    draws: frozenset[str]
    #: operator or function -> {"ndarray": broadcasts?, "symbol": broadcasts?}
    broadcasts: Mapping[str, Mapping[str, bool]]
    #: reshape spelling ("varargs", "tuple", "keyword") -> {"ndarray": ok?, "symbol": ok?}
    reshape_forms: Mapping[str, Mapping[str, bool]]
    #: operator or function -> the name stem MXNet gives its Symbol node (`-` -> `_minus`)
    symbol_nodes: Mapping[str, str]
    #: Gluon layer -> the size keywords with which its `initialize()` draws the weights at
    #: once (empty: always); other layers draw at their first forward pass, or never.
    init_at_once: Mapping[str, tuple[str, ...]]
    #: `mxnet.nd.zeros_like`, `mxnet.np.random.uniform_like`...: arrays made on their
    #: argument's context (see `like_creators`).
    like_creators: frozenset[str]
    #: `mxnet.nd.zeros`, `mxnet.np.array`...: arrays made on `ctx=` or the default context
    #: (see `ndarray_creators`).
    ndarray_creators: frozenset[str]

    def names(self, namespace: str) -> frozenset[str]:
        """Public names of a namespace key (`nd`, `sym.contrib`, `npx`...); empty if unknown."""
        return self.namespaces.get(namespace, frozenset())

    def only_imperative(self, sub: str = "") -> frozenset[str]:
        """Names `mx.nd[.sub]` has and `mx.sym[.sub]` lacks: `F.<name>` fails once hybridized."""
        suffix = f".{sub}" if sub else ""
        return self.names("nd" + suffix) - self.names("sym" + suffix)

    def only_symbolic(self, sub: str = "") -> frozenset[str]:
        """Names `mx.sym[.sub]` has and `mx.nd[.sub]` lacks: `F.<name>` fails until hybridized."""
        suffix = f".{sub}" if sub else ""
        return self.names("sym" + suffix) - self.names("nd" + suffix)

    @functools.cached_property
    def ndarray_only_members(self) -> frozenset[str]:
        """NDArray members a Symbol lacks or only has to raise (`.shape`, `.T`, `.copyto`,
        `.detach()`...)."""
        return (self.ndarray.all - self.symbol.all) | (self.symbol.raising & self.ndarray.all)

    @functools.cached_property
    def tensor_members(self) -> frozenset[str]:
        """Every member an MXNet tensor has, in 1.x imperative, symbolic or numpy form."""
        return self.ndarray.all | self.symbol.all | self.np_ndarray.all

    def same_signature(self, name: str) -> bool:
        """Whether `nd.<name>` and `sym.<name>` take the same parameters (an `nd` call can be
        spelt `F.<name>` unchanged)."""
        nd, sym = self.signatures.get(f"nd.{name}"), self.signatures.get(f"sym.{name}")
        if nd is None or sym is None or nd.params != sym.params:
            return False
        observed = self.broadcasts.get(name, {})
        return observed.get("ndarray") == observed.get("symbol")


def _names(raw: list[str]) -> tuple[str, ...]:
    """Parameter names, interned: `data`, `axis`... repeat across 1,800 signatures."""
    return tuple(sys.intern(name) for name in raw)


#: One signature as the tuple of `Signature`'s fields.
SignatureFields = tuple[
    tuple[str, ...], bool, tuple[str, ...], tuple[str, ...], tuple[str, ...], bool
]


class _Signatures(Mapping[str, Signature]):
    """The signatures by key, each built from its fields when first asked for: a run asks
    about a few dozen operators of some 1,800, and building them all was a tenth of a one-file
    run's start-up. The fields of each are kept marshalled (see `compact`): reading the
    1,800 tuples of names from the cache file was a millisecond of every run."""

    def __init__(self, fields: dict[str, bytes]) -> None:
        # Tuples of interned names once read: the JSON's dicts and lists would cost every
        # process about a megabyte more for as long as it runs.
        self._raw = fields
        self._built: dict[str, Signature] = {}

    def __getitem__(self, key: str) -> Signature:
        sig = self._built.get(key)
        if sig is None:
            fields: SignatureFields = marshal.loads(self._raw[key])
            sig = self._built[key] = Signature(*fields)
        return sig

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw


def _members(raw: Mapping[str, Any]) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    return frozenset(raw["properties"]), frozenset(raw["methods"]), frozenset(raw["raising"])


def compact(data: Mapping[str, Any]) -> dict[str, Any]:
    """The facts of the JSON document as plain data that `marshal` can keep (see
    `mxlint.knowledge.store`): sets as frozensets, each signature as its fields marshalled,
    and what rules derive from the facts on every run derived once."""
    members = data["members"]
    namespaces = {k: frozenset(v) for k, v in data["namespaces"].items()}
    takes_ctx = frozenset(data["takes_ctx"])
    likes = like_creators(namespaces)
    return {
        "version": data["mxnet"],
        "namespaces": namespaces,
        "ndarray": _members(members["NDArray"]),
        "symbol": _members(members["Symbol"]),
        "np_ndarray": _members(members["np.ndarray"]),
        "signatures": {
            k: marshal.dumps(
                (
                    _names(v["params"]),
                    v["varargs"],
                    _names(v["required"]),
                    _names(v["tensors"]),
                    _names(v["operator_params"]),
                    v["open"],
                )
            )
            for k, v in data["signatures"].items()
        },
        "takes_ctx": takes_ctx,
        "like_creators": likes,
        "ndarray_creators": ndarray_creators(takes_ctx, likes),
        "draws": frozenset(data["draws"]),
        "broadcasts": data["broadcasts"],
        "reshape_forms": data["reshape_forms"],
        "symbol_nodes": data["symbol_nodes"],
        "init_at_once": {k: _names(v) for k, v in data["init_at_once"].items()},
    }


def from_compact(facts: Mapping[str, Any]) -> Api:
    return Api(
        version=facts["version"],
        namespaces=facts["namespaces"],
        ndarray=Members(*facts["ndarray"]),
        symbol=Members(*facts["symbol"]),
        np_ndarray=Members(*facts["np_ndarray"]),
        signatures=_Signatures(facts["signatures"]),
        takes_ctx=facts["takes_ctx"],
        draws=facts["draws"],
        broadcasts=facts["broadcasts"],
        reshape_forms=facts["reshape_forms"],
        symbol_nodes=facts["symbol_nodes"],
        init_at_once=facts["init_at_once"],
        like_creators=facts["like_creators"],
        ndarray_creators=facts["ndarray_creators"],
    )


def like_creators(namespaces: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """`zeros_like`, `ones_like`, `random.uniform_like`... of every tensor namespace, as MXNet
    names them: arrays made on their argument's context, never a context bug."""
    return frozenset(
        f"mxnet.{key}.{name}"
        for key, names in namespaces.items()
        if key.split(".")[0] in ("nd", "np", "npx", "sym")
        for name in names
        if name.endswith("_like")
    )


def ndarray_creators(takes_ctx: frozenset[str], likes: frozenset[str]) -> frozenset[str]:
    """Imperative functions that take `ctx=` and build an array on it (default: the current
    context, cpu(0)), from MXNet's own signatures; the `*_like` creators inherit instead."""
    return frozenset(
        f"mxnet.{name}"
        for name in takes_ctx
        if name.split(".")[0] in ("nd", "np", "npx")
        and not name.rsplit(".", 1)[-1].startswith("get_")
        and f"mxnet.{name}" not in likes
    )


def parse(data: Mapping[str, Any]) -> Api:
    return from_compact(compact(data))


def compact_text(text: str) -> dict[str, Any]:
    """`compact` of the data file's text: what `store.cached` keeps."""
    import json  # only when the cache has no facts for this file

    return compact(json.loads(text))


def data_file(version: str = VERSION) -> str:
    return f"data/mxnet_api_{version}.json"


@functools.cache
def api(version: str = VERSION) -> Api:
    """The facts of one MXNet release, read from the package once per process (through the
    marshal cache of `mxlint.knowledge.store`)."""
    return from_compact(store.cached(data_file(version), compact_text))
