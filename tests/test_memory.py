"""MXL4xx and MXL601: fixtures match their markers exactly; the traps of the record rules."""

from __future__ import annotations

import textwrap

import pytest
from expectations import actual, expected

from mxlint.api import check_source
from mxlint.config import Settings
from mxlint.rule import Example
from mxlint.rules.memory.outputs_kept_in_record import OutputsKeptInRecord

CODES = ("MXL4", "MXL601")
RECORD = Settings(select=("MXL402", "MXL404", "MXL405"))


def _rows(source: str, settings: Settings = RECORD) -> list[tuple[str, int]]:
    findings = check_source(textwrap.dedent(source), "example.py", settings)
    return sorted((f.code, f.location.row) for f in findings)


def _memory(root):
    return {
        row for row in actual(root, Settings(select=CODES, root=root)) if row[2].startswith(CODES)
    }


def test_bad_fixtures_report_exactly_the_marked_findings(fixtures_dir):
    root = fixtures_dir / "memory" / "bad"
    marked = expected(root)
    assert {code for _, _, code in marked} >= {
        "MXL401",
        "MXL402",
        "MXL403",
        "MXL404",
        "MXL405",
        "MXL406",
        "MXL601",
    }
    assert _memory(root) == marked


def test_good_twins_are_silent(fixtures_dir):
    assert _memory(fixtures_dir / "memory" / "good") == set()


def test_verify_fixtures_match_their_markers(fixtures_dir):
    """The `--verify` programs: every MXL402/404/405 marker is reported, no look-alike is."""
    for kind in ("bad", "good"):
        root = fixtures_dir / "verify" / "memory" / kind
        got = {row for row in actual(root, RECORD) if row[2] in ("MXL402", "MXL404", "MXL405")}
        want = {row for row in expected(root) if row[2] in ("MXL402", "MXL404", "MXL405")}
        assert got == (want if kind == "bad" else set())


# -- MXL402 ------------------------------------------------------------------------------------

MULTI_GPU = """
from mxnet import autograd, gluon

def train(net, loss_fn, trainer, loader, ctx):
    {outside}
    for batch in loader:
        data = gluon.utils.split_and_load(batch[0], ctx)
        label = gluon.utils.split_and_load(batch[1], ctx)
        {inside}
        with autograd.record():
            for x, y in zip(data, label):
                losses.append(loss_fn(net(x), y))
        autograd.backward(losses)
        trainer.step(batch[0].shape[0])
"""


def test_multi_gpu_idiom_is_silent_only_when_the_list_is_new_every_step():
    per_step = MULTI_GPU.format(outside="pass", inside="losses = []")
    assert _rows(per_step) == []
    kept = MULTI_GPU.format(outside="losses = []", inside="pass")
    assert _rows(kept) == [("MXL402", 12)]
    cleared = MULTI_GPU.format(outside="losses = []", inside="losses.clear()")
    assert _rows(cleared) == []


@pytest.mark.parametrize(
    "spelling",
    [
        "import mxnet as mx\nrecord = mx.autograd.record",
        "from mxnet import autograd\nrecord = autograd.record",
        "from mxnet import autograd as ag\nrecord = ag.record",
    ],
)
def test_every_import_spelling_of_record(spelling):
    imports, alias = spelling.split("\n")
    call = alias.split(" = ")[1]
    source = f"""
{imports}

def train(net, loss_fn, loader):
    outputs = []
    for x, y in loader:
        with {call}(train_mode=True):
            out = net(x)
            outputs.append(out)
            loss = loss_fn(out, y)
        loss.backward()
"""
    assert _rows(source) == [("MXL402", 9)]


def test_detached_or_synchronised_values_are_silent():
    source = """
    from mxnet import autograd

    def train(net, loss_fn, loader):
        keep = []
        for x, y in loader:
            with autograd.record():
                out = net(x)
                loss = loss_fn(out, y)
                keep.append(out.detach())
                keep.append(loss.mean().asscalar())
                keep.append(float(loss.mean()))
                keep.append(loss.asnumpy())
                keep.append(y)
            loss.backward()
    """
    assert _rows(source) == []


def test_attribute_and_global_containers():
    source = """
    from mxnet import autograd, gluon

    history = []

    class Learner:
        def __init__(self, net):
            self.net = net
            self.outputs = []

        def step(self, x):
            with autograd.record():
                out = self.net(x)
                self.outputs.append(out)
                history.append(out.sum())
            out.backward()
    """
    assert _rows(source) == [("MXL402", 14), ("MXL402", 15)]
    reset = source.replace(
        "            out.backward()\n",
        "            out.backward()\n\n        def flush(self):\n            self.outputs = []\n",
    )
    assert _rows(reset) == [("MXL402", 15)]


def test_other_ways_of_keeping_outputs():
    source = """
    import collections
    from mxnet import autograd

    def train(net, loss_fn, loader):
        preds = []
        log = collections.defaultdict(list)
        for x, y in loader:
            with autograd.record():
                out = net(x)
                preds += [out]
                loss = loss_fn(out, y)
                log["loss"].append(loss)
                preds.insert(0, out.detach())
            loss.backward()
    """
    assert _rows(source) == [("MXL402", 11), ("MXL402", 13)]


def test_outputs_backpropagated_after_the_loop_are_kept_on_purpose():
    source = """
    from mxnet import autograd

    def accumulate(net, loss_fn, micro_batches):
        losses = []
        for x, y in micro_batches:
            with autograd.record():
                losses.append(loss_fn(net(x), y))
        autograd.backward(losses)
    """
    assert _rows(source) == []


def test_list_made_per_step_outlives_only_a_device_loop():
    source = """
    from mxnet import autograd

    def train(net, loader, split):
        for batch in loader:
            outputs = []
            for x in split(batch):
                with autograd.record():
                    outputs.append(net(x))
            autograd.backward(outputs)
    """
    assert _rows(source) == []


def test_carried_hidden_state_is_not_a_kept_output():
    source = """
    from mxnet import autograd

    def train(model, loss_fn, loader, ctx, detach):
        hiddens = [model.begin_state(batch_size=32, ctx=c) for c in ctx]
        for data, target in loader:
            hiddens = detach(hiddens)
            with autograd.record():
                for j, (x, y) in enumerate(zip(data, target)):
                    out, h = model(x, hiddens[j])
                    hiddens[j] = h
                    loss = loss_fn(out, y)
            loss.backward()
    """
    assert _rows(source) == []


# -- MXL404 ------------------------------------------------------------------------------------


def test_writes_into_recorded_arrays():
    source = """
    from mxnet import autograd, nd

    def step(net, x, bias):
        with autograd.record():
            out = net(x)
            out[:, 0] = 0
            nd.relu(out, out=out)
            h = out * 2
            h += bias
            x[:] = 0
    """
    assert _rows(source) == [("MXL404", 7), ("MXL404", 8), ("MXL404", 10), ("MXL404", 11)]


def test_writes_before_recording_touches_the_array_are_silent():
    source = """
    from mxnet import autograd, nd

    def step(net, x):
        with autograd.record():
            x[:] = x / 255
            out = net(x)
            mask = nd.zeros(out.shape, ctx=out.context)
            mask[:, 0] = 1
            fresh = nd.empty(out.shape)
            nd.elemwise_mul(out, mask, out=fresh)
            loss = nd.where(mask, out, fresh).sum()
        loss.backward()
        out[:] = 0
    """
    assert _rows(source) == []


def test_partial_write_of_a_recorded_value_into_a_fresh_array():
    source = """
    from mxnet import autograd, nd

    def step(net, x):
        with autograd.record():
            out = net(x)
            buf = nd.zeros((4, 4))
            buf[0] = out[0]
            copy = nd.zeros((4, 4))
            copy[:] = out
            copy[:] = out * 2
    """
    assert _rows(source) == [("MXL404", 8), ("MXL404", 11)]


def test_augmented_assignment_python_number_versus_ndarray():
    loop = """
    from mxnet import autograd, nd

    def train(net, loader):
        total_loss = {init}
        for x, y in loader:
            with autograd.record():
                loss = net(x).sum()
                {line}
            loss.backward()
            {after}
    """
    in_record = loop.format(init="0.0", line="total_loss += loss.mean()", after="pass")
    assert _rows(in_record) == [("MXL404", 9)]  # an NDArray from the second iteration on
    synced = loop.format(init="0.0", line="total_loss += loss.mean().asscalar()", after="pass")
    assert _rows(synced) == []
    after_block = loop.format(init="0.0", line="pass", after="total_loss += loss.mean()")
    assert _rows(after_block) == []
    ndarray = loop.format(init="nd.zeros((1,))", line="total_loss += loss.mean()", after="pass")
    assert _rows(ndarray) == [("MXL404", 9)]


def test_per_step_python_accumulator_and_lists_are_silent():
    source = """
    from mxnet import autograd

    def step(net, loss_fn, data, label):
        with autograd.record():
            loss = 0
            loss = loss + loss_fn(net(data[0]), label[0])
            outs = []
            outs += [net(x) for x in data]
        loss.backward()
    """
    assert _rows(source) == []
    summed = """
    from mxnet import autograd

    def step(net, loss_fn, data, label):
        with autograd.record():
            loss = 0
            for x, y in zip(data, label):
                loss += loss_fn(net(x), y)
        loss.backward()
    """
    assert _rows(summed) == [("MXL404", 8)]


def test_numpy_buffers_and_pause_are_silent():
    source = """
    import numpy as np
    from mxnet import autograd

    def step(net, x, n):
        scores = np.zeros(n)
        with autograd.record():
            out = net(x)
            scores[0] = out.mean().asscalar()
            with autograd.pause():
                ref = net(x)
                ref[:] = 0
        out.backward()
    """
    assert _rows(source) == []


def test_train_mode_does_not_record():
    source = """
    from mxnet import autograd

    def step(net, x):
        with autograd.train_mode():
            out = net(x)
            out[:] = 0
    """
    assert _rows(source) == []


# -- MXL405 ------------------------------------------------------------------------------------


def test_metric_update_inside_versus_after_the_block():
    source = """
    import mxnet as mx
    from mxnet import autograd

    def train(net, loss_fn, loader):
        acc = mx.gluon.metric.Accuracy()
        for x, y in loader:
            with autograd.record():
                out = net(x)
                loss = loss_fn(out, y)
                acc.update([y], [out])
            loss.backward()
            acc.update([y], [out])
    """
    assert _rows(source) == [("MXL405", 11)]


def test_only_evaluation_metrics_count_as_metrics():
    source = """
    from mxnet import autograd

    def step(net, x, y, stats, meter, acc):
        with autograd.record():
            out = net(x)
            stats.update({"n": 1})
            meter.update(out.mean().asscalar(), x.shape[0])
            acc.update([y], [out])
        out.backward()
    """
    assert _rows(source) == [("MXL405", 9)]


def test_validation_forward_and_lookalikes():
    source = """
    import mxnet as mx

    def train(model, loss_fn, loader, val_tokens, val_valid_length):
        for tokens, valid_length, label in loader:
            with mx.autograd.record():
                out = model(tokens, valid_length)
                loss = loss_fn(out, label)
                val_out = model(val_tokens, val_valid_length)
            loss.backward()
    """
    assert _rows(source) == [("MXL405", 9)]


def test_validation_loop_after_a_training_loop_with_the_same_names():
    source = """
    from mxnet import autograd

    def train(net, loss_fn, train_data, val_data):
        for data, label in train_data:
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
        for data, label in val_data:
            out = net(data)
    """
    assert _rows(source) == []


def test_gradients_with_respect_to_test_inputs_are_training_not_evaluation():
    source = """
    from mxnet import autograd

    def fgsm(net, loss_fn, x_test, y_test, eps):
        x_test.attach_grad()
        with autograd.record():
            loss = loss_fn(net(x_test), y_test)
        loss.backward()
        return x_test + eps * x_test.grad.sign()

    def saliency(net, val_images):
        with autograd.record(train_mode=False):
            out = net(val_images)
        return out
    """
    assert _rows(source) == []


def test_evaluation_function_and_pytest_tests():
    source = """
    from mxnet import autograd

    def evaluate_accuracy(data_iterator, net, metric):
        for data, label in data_iterator:
            with autograd.record():
                output = net(data)
            metric.update([label], [output])
        return metric.get()

    def test_dense_records(net, test_data):
        with autograd.record():
            y = net(test_data)
        assert y.shape[0] == 2
    """
    assert _rows(source) == [("MXL405", 7)]


def test_logging_readbacks_inside_record():
    source = """
    import logging
    from mxnet import autograd

    def train(net, loss_fn, loader):
        total = 0.0
        for i, (x, y) in enumerate(loader):
            with autograd.record():
                loss = loss_fn(net(x), y)
                logging.info("loss %f", loss.mean().asscalar())
                total += loss.mean().asscalar()
                print("batch", i, x.shape)
            loss.backward()
            print(loss.mean().asscalar())
    """
    assert _rows(source) == [("MXL405", 10)]


# -- MXL602 (off by default) -------------------------------------------------------------------


def test_sync_before_the_step_is_off_by_default_and_ignores_later_or_periodic_syncs():
    source = """
    from mxnet import autograd

    def train(net, loss_fn, trainer, loader):
        total = 0.0
        for i, (data, label) in enumerate(loader):
            with autograd.record():
                loss = loss_fn(net(data), label)
            print(loss.mean().asscalar())
            if i % 50 == 0:
                print(loss.max().asscalar())
            loss.backward()
            trainer.step(data.shape[0])
            total += loss.mean().asscalar()
    """
    assert [r for r in _rows(source, Settings()) if r[0] == "MXL602"] == []
    assert _rows(source, Settings(select=("MXL602",))) == [("MXL602", 9)]


# -- MXL401 and MXL402 on one statement ----------------------------------------------------------

#: MXL402's first invalid example: a network output appended to a list made before the loop.
KEPT_IN_RECORD = OutputsKeptInRecord.invalid[0]


def test_a_recorded_output_kept_in_a_list_is_one_finding_the_more_precise_one():
    assert isinstance(KEPT_IN_RECORD, Example)
    source, row = KEPT_IN_RECORD.code, KEPT_IN_RECORD.line
    assert "outputs.append(out)" in source.splitlines()[row - 1]
    assert _rows(source, Settings(select=("MXL4",))) == [("MXL402", row)]
    # With MXL402 off, the loop's memory growth is still reported, as MXL401.
    assert _rows(source, Settings(select=("MXL4",), ignore=("MXL402",))) == [("MXL401", row)]
    # A noqa written for either rule (before they were merged) stays a used directive.
    for code in ("MXL401", "MXL402"):
        marked = source.replace("outputs.append(out)", f"outputs.append(out)  # noqa: {code}")
        assert _rows(marked, Settings(select=("MXL",))) == (
            [("MXL402", row)] if code == "MXL401" else []
        )


@pytest.mark.parametrize(
    "statement, hint",
    [
        ("total += loss.mean()", "total += loss.mean().asscalar()"),
        ("total += loss", "total += loss.asnumpy()"),
        ("total *= loss", "total *= loss.asnumpy()"),
        ("total = total - loss.sum() * 2", "total = total - (loss.sum() * 2).asnumpy()"),
        ("outs.append(loss)", "outs.append(loss.asnumpy())"),
        ("outs.append(loss.sum())", "outs.append(loss.sum().asscalar())"),
        ("total += mx.nd.sum(loss)", "total += mx.nd.sum(loss).asscalar()"),
        ("total += mx.nd.sum(loss, axis=0)", "total += mx.nd.sum(loss, axis=0).asnumpy()"),
        ("total += loss.mean(0)", "total += loss.mean(0).asnumpy()"),
        (
            "outs.append(loss_fn(net(data), label, sample_weight=weights_of(data)))",
            "outs.append((...).asnumpy())",
        ),
    ],
)
def test_accumulation_hint_keeps_the_statement_and_its_values(statement: str, hint: str):
    source = textwrap.dedent(f"""
        import mxnet as mx
        from mxnet import autograd

        def train(net, loss_fn, trainer, loader):
            total, outs = 0, []
            for data, label in loader:
                with autograd.record():
                    loss = loss_fn(net(data), label)
                loss.backward()
                trainer.step(1)
                {statement}
        """)
    [finding] = check_source(source, "example.py", Settings(select=("MXL401",)))
    assert (finding.code, finding.location.row) == ("MXL401", 12)
    assert f"accumulate Python values (`{hint}`)" in finding.message


def test_outputs_kept_across_a_synchronising_loop_in_other_containers():
    source = """\
        import mxnet as mx


        def run(net, test_loader, ctx):
            by_index, ring, preds, small = {}, {}, [], []
            for i, (data, _) in enumerate(test_loader):
                out = net(data.as_in_context(ctx))
                by_index[i] = out.softmax()
                ring[i % 4] = out
                preds.extend(out)
                small.append(out.argmax(axis=1))
                mx.nd.waitall()
            return by_index, ring, preds, small
        """
    findings = _rows(source, Settings(select=("MXL406",)))
    assert findings == [("MXL406", 8), ("MXL406", 10)]
    (extend,) = [
        f
        for f in check_source(textwrap.dedent(source), "example.py", Settings(select=("MXL406",)))
        if f.location.row == 10
    ]
    assert "`preds.extend(o.asnumpy() for o in out)`" in extend.message


def test_a_running_total_kept_on_the_object_is_accumulated_like_a_name():
    source = """\
        from mxnet import autograd


        class Fitter:
            def epoch(self, loader):
                for x, y in loader:
                    with autograd.record():
                        loss = self.loss_fn(self.net(x), y)
                    loss.backward()
                    self.total = self.total + loss.sum()
                    self.best = max(self.best, 1.0)
        """
    findings = check_source(textwrap.dedent(source), "fit.py", Settings(select=("MXL401",)))
    assert [(f.code, f.location.row) for f in findings] == [("MXL401", 10)]
    assert "`self.total = self.total + loss.sum().asscalar()`" in findings[0].message


def test_a_method_running_the_objects_network_is_a_forward_pass():
    source = """\
        from mxnet import autograd


        class Learner:
            def _forward(self, x):
                return self.model(x)

            def _scale(self, x):
                return x * 2

            def bad(self, x, y):
                out = self._forward(x)
                with autograd.record():
                    loss = self.loss(out, y)
                loss.backward()

            def fine(self, x, y):
                x2 = self._scale(x)
                with autograd.record():
                    loss = self.loss(self.model(x2), y)
                loss.backward()
        """
    findings = check_source(textwrap.dedent(source), "learn.py", Settings(select=("MXL403",)))
    assert [(f.code, f.location.row) for f in findings] == [("MXL403", 15)]


def test_a_helper_updating_the_metric_it_is_given_inside_record():
    source = """\
        from mxnet import autograd


        def log_stats(train_metric, labels, outputs):
            train_metric.update(labels, outputs)


        def log_cache(cache, key, value):
            cache.update(key, value)


        def train(net, loader, loss_fn, train_metric, cache):
            for x, y in loader:
                with autograd.record():
                    out = net(x)
                    log_stats(train_metric, [y], [out])
                    log_cache(cache, "out", out)
                    loss = loss_fn(out, y)
                    loss.backward()
                    log_stats(train_metric, [y], [out])
        """
    assert _rows(source) == [("MXL405", 16)]


def test_a_same_size_map_of_an_objects_network_output_kept_across_the_loop():
    source = """\
        from mxnet import nd


        def collect(self, val_loader):
            kept = []
            for x, y in val_loader:
                probs = self.net(x).softmax()
                self.metric.update([y], [probs])
                kept.append(probs)
            return kept
        """
    findings = check_source(textwrap.dedent(source), "ev.py", Settings(select=("MXL406",)))
    assert [(f.code, f.location.row) for f in findings] == [("MXL406", 9)]


def test_backward_on_what_a_recording_helper_returns():
    source = """\
        from mxnet import autograd
        from losses import remote_loss


        def local_loss(net, loss_fn, x, y):
            with autograd.record():
                loss = loss_fn(net(x), y)
            return loss


        def train(net, loader, loss_fn):
            for x, y in loader:
                loss = local_loss(net, loss_fn, x, y)
                loss.backward()
                other = remote_loss(net, x, y)
                other.backward()
        """
    recording = (
        "from mxnet import autograd\n\n\ndef remote_loss(net, x, y):\n"
        "    with autograd.record():\n        return (net(x) - y).sum()\n"
    )
    plain = "def remote_loss(net, x, y):\n    return (net(x) - y).sum()\n"
    settings = Settings(select=("MXL403",))
    silent = check_source(textwrap.dedent(source), "t.py", settings, [("losses", recording)])
    assert silent == []
    found = check_source(textwrap.dedent(source), "t.py", settings, [("losses", plain)])
    assert [(f.code, f.location.row) for f in found] == [("MXL403", 16)]
