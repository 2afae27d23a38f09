"""The MXNet facts rules read are MXNet's own: regenerated from the installed MXNet, they match
the committed data file; and what the rules ask of them says what MXNet does."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mxlint import knowledge
from mxlint.knowledge.api import VERSION, api


def _installed_mxnet() -> str | None:
    try:
        from importlib.metadata import version

        return version("mxnet")
    except Exception:
        return None


@pytest.mark.skipif(_installed_mxnet() != VERSION, reason=f"needs mxnet=={VERSION} installed")
def test_committed_facts_match_the_installed_mxnet() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "mxlint.knowledge.generate", "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"matches MXNet {VERSION}" in run.stdout


def test_names_only_the_imperative_namespace_has() -> None:
    only_nd = api().only_imperative()
    assert {"add", "subtract", "multiply", "divide", "equal", "array", "moveaxis"} <= only_nd
    assert {"relu", "broadcast_add", "concat", "reshape"}.isdisjoint(only_nd)
    assert {"var", "Group", "pow"} <= api().only_symbolic()


def test_layers_that_draw_their_weights_in_initialize() -> None:
    """Observed on MXNet: sized layers and embeddings draw at `initialize()`; layers that learn
    their input size wait for the first input; constant-initialized layers never draw."""
    at_once = api().init_at_once
    assert at_once["mxnet.gluon.nn.Dense"] == ("in_units",)
    assert at_once["mxnet.gluon.nn.Conv2D"] == ("in_channels",)
    assert at_once["mxnet.gluon.rnn.LSTM"] == ("input_size",)
    assert at_once["mxnet.gluon.nn.Embedding"] == ()
    assert "mxnet.gluon.nn.BatchNorm" not in at_once  # gamma ones, beta zeros: no draw
    assert "mxnet.gluon.nn.HybridSequential" not in at_once  # no parameters of its own


def test_members_a_symbol_lacks_or_only_raises() -> None:
    members = api().ndarray_only_members
    assert {"shape", "dtype", "context", "T", "copyto", "attach_grad"} <= members
    assert {"asnumpy", "asscalar", "detach", "as_in_context"} <= members  # Symbol raises
    assert {"reshape", "sum", "transpose", "expand_dims"}.isdisjoint(members)
    assert "resahpe" not in api().tensor_members


def test_observed_broadcasting_and_reshape_forms() -> None:
    facts = api()
    assert facts.broadcasts["+"] == {"ndarray": True, "symbol": False}
    assert facts.broadcasts["broadcast_add"] == {"ndarray": True, "symbol": True}
    assert facts.broadcasts["elemwise_add"] == {"ndarray": False, "symbol": False}
    assert facts.reshape_forms["varargs"] == {"ndarray": True, "symbol": False}
    assert facts.reshape_forms["tuple"] == {"ndarray": True, "symbol": True}


def test_same_signature_needs_the_same_parameters_and_broadcasting() -> None:
    facts = api()
    assert facts.same_signature("relu")
    assert facts.same_signature("broadcast_add")
    assert not facts.same_signature("maximum")  # nd.maximum(lhs, rhs), sym.maximum(left, right)
    assert not facts.same_signature("power")  # NDArray's broadcasts, Symbol's does not
    assert not facts.same_signature("add")  # no `sym.add`


def test_creators_and_where_they_take_ctx() -> None:
    creators = knowledge.ndarray_creators()
    assert {"mxnet.nd.zeros", "mxnet.nd.array", "mxnet.nd.random.uniform"} <= creators
    assert "mxnet.nd.zeros_like" not in creators  # inherits its argument's context
    assert "mxnet.nd.identity" not in creators  # an operator, not a creator
    assert knowledge.ctx_position("mxnet.nd.zeros") == 1
    assert knowledge.ctx_position("mxnet.nd.full") == 2
    assert knowledge.ctx_position("mxnet.nd.relu") is None


def test_draws() -> None:
    draws = api().draws
    assert {"nd.random.uniform", "nd.Dropout", "np.random.choice", "nd.shuffle"} <= draws
    assert "nd.random.seed" not in draws and "nd.random_pdf_normal" not in draws


def test_symbol_node_names_identify_operators() -> None:
    nodes = api().symbol_nodes
    assert nodes["-"] == "_minus" and nodes["/"] == "_div" and nodes["maximum"] == "_maximum"


def test_like_creators_and_draws_are_mxnets_names() -> None:
    likes = knowledge.like_creators()
    assert {"mxnet.nd.zeros_like", "mxnet.np.full_like", "mxnet.nd.random.uniform_like"} <= likes
    assert "mxnet.nd.full_like" not in likes  # MXNet 1.9.1's nd has no full_like
    assert knowledge.mxnet_random_call("mxnet.nd.random.uniform")
    assert knowledge.mxnet_random_call("mxnet.nd.random_uniform")  # the operator's own name
    assert knowledge.mxnet_random_call("mxnet.nd.sample_normal")
    assert not knowledge.mxnet_random_call("mxnet.random.seed")
    assert not knowledge.mxnet_random_call("mxnet.nd.random_pdf_normal")


def test_keywords_are_the_parsers_own() -> None:
    sigs = api().signatures
    assert sigs["nd.concat"].keywords is not None and "dim" in sigs["nd.concat"].keywords
    assert "axis" not in sigs["nd.concat"].keywords
    assert "lower" in (sigs["nd.linalg.potrf"].keywords or ())  # missing from the registry docs
    assert sigs["nd.gather_nd"].keywords is None  # accepts any keyword: not judged
    assert sigs["nd.Custom"].keywords is None


def test_members_of_a_class_spelled_two_ways_have_one_name() -> None:
    assert knowledge.canonical("mxnet.gluon.nn.SymbolBlock") == "mxnet.gluon.SymbolBlock"
    assert (
        knowledge.canonical("mxnet.gluon.nn.SymbolBlock.imports")
        == "mxnet.gluon.SymbolBlock.imports"
    )
    assert knowledge.canonical("mxnet.gluon.nn.Dense") == "mxnet.gluon.nn.Dense"
