"""MXL7xx: fixtures match their markers exactly; targeted export/AMP orderings."""

from __future__ import annotations

from pathlib import Path

from expectations import actual, expected

from mxlint.api import check_paths, check_source
from mxlint.config import Settings

SETTINGS = Settings(select=("MXL7",))


def _rows(source: str, project: list[tuple[str, str]] | None = None) -> list[tuple[str, int]]:
    return [
        (f.code, f.location.row)
        for f in check_source(source, "example.py", SETTINGS, project or [])
    ]


def test_bad_fixtures_report_exactly_the_marked_findings(fixtures_dir):
    root = fixtures_dir / "lifecycle" / "bad"
    assert expected(root)
    assert actual(root, prefix="MXL7") == expected(root)


def test_good_twins_are_silent(fixtures_dir):
    assert actual(fixtures_dir / "lifecycle" / "good", prefix="MXL7") == set()


def test_twins_checked_together_keep_their_own_modules(fixtures_dir):
    """`bad/` and `good/` define the same module names (`zoo`, `tools`, `models`): a script's
    import means the module beside it, as Python's path puts the script's folder first."""
    root = fixtures_dir / "lifecycle"
    assert {path for path, _, _ in expected(root)} >= {"bad/builder_chain/serve.py"}
    assert actual(root, prefix="MXL7") == expected(root)


def test_forward_before_hybridize_does_not_count():
    source = (
        "import mxnet as mx\nfrom mxnet import gluon\n\nnet = gluon.nn.Dense(2)\n"
        "net.initialize()\nnet(mx.nd.ones((1, 3)))\nnet.hybridize()\nnet.export('m')\n"
    )
    assert _rows(source) == [("MXL701", 8)]


def test_forward_after_hybridize_is_enough():
    source = (
        "import mxnet as mx\nfrom mxnet import gluon\n\nnet = gluon.nn.Dense(2)\n"
        "net.initialize()\nnet.hybridize()\nnet(mx.nd.ones((1, 3)))\nnet.export('m')\n"
    )
    assert _rows(source) == []


def test_project_hybridblock_is_resolved_across_files():
    source = "from models import Net\n\nnet = Net()\nnet.initialize()\nnet.export('m')\n"
    hybrid = "from mxnet import gluon\n\n\nclass Net(gluon.HybridBlock):\n    pass\n"
    assert _rows(source, [("models", hybrid)]) == [("MXL701", 5)]
    unknown = "from somewhere import Base\n\n\nclass Net(Base):\n    pass\n"
    assert _rows(source, [("models", unknown)]) == []


def test_amp_init_followed_through_main():
    source = (
        "from mxnet import gluon\nfrom mxnet.contrib import amp\n\n\n"
        "def build():\n    return gluon.nn.Dense(4)\n\n\n"
        "def main():\n    net = build()\n    amp.init()\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    assert _rows(source) == [("MXL702", 11)]
    before = source.replace(
        "    net = build()\n    amp.init()\n", "    amp.init()\n    net = build()\n"
    )
    assert _rows(before) == []


def _paths(tmp_path, files: dict[str, str]) -> list[tuple[str, int, str]]:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    result = check_paths([tmp_path], Settings(select=("MXL7",), root=tmp_path))
    return sorted(
        (Path(f.filename).resolve().relative_to(tmp_path).as_posix(), f.location.row, f.code)
        for f in result.findings
    )


EXPORT = (
    "import mxnet as mx\nfrom mxnet import gluon\n\n"
    "net = gluon.nn.Dense(2)\nnet.initialize()\nnet.hybridize()\nnet(mx.nd.ones((1, 3)))\n"
    "net.export('model')\nnet.save_parameters('model.params')\n"
)
SERVE = (
    "from mxnet import gluon\n\n"
    "block = gluon.SymbolBlock.imports('model-symbol.json', ['x'], 'model.params')\n"
)


def test_a_path_is_followed_through_joins_formats_and_names() -> None:
    writes = {
        "os.path.join(out, 'm')": (
            "f'{base}-symbol.json'",
            "'%s-0007.params' % base",
        ),
        "prefix": ("prefix + '-symbol.json'", "'{}-{:04d}.params'.format(prefix, 7)"),
        "args.prefix": ("'%s-symbol.json' % args.prefix", "f'{args.prefix}-0007.params'"),
    }
    for exported, (symbol, params) in writes.items():
        source = (
            "import os\nfrom mxnet import gluon\n\n\n"
            "def run(net, out, prefix, args, x):\n"
            "    base = os.path.join(out, 'm')\n"
            "    net.hybridize()\n    net(x)\n"
            f"    net.export({exported}, epoch=7)\n"
            f"    net.load_parameters({params})\n"
            f"    return gluon.SymbolBlock.imports({symbol}, ['input'])\n"
        )
        source = source.replace("net.export(os.path.join(out, 'm')", "net.export(base")
        assert _rows(source) == [("MXL705", 10), ("MXL704", 11)], exported


def test_an_epoch_written_in_hex_or_binary_names_the_file_python_reads() -> None:
    """`epoch=0x10` writes `-0016.params`, as Python reads the literal (once an internal error)."""
    for epoch in ("0x10", "0o20", "0b10000", "1_6"):
        source = (
            "from mxnet import gluon\n\n\n"
            "def run(net, prefix, x):\n"
            "    net.hybridize()\n    net(x)\n"
            f"    net.export(prefix, epoch={epoch})\n"
            "    net.load_parameters('{}-{:04d}.params'.format(prefix, 16))\n"
            "    return gluon.SymbolBlock.imports(prefix + '-symbol.json', ['input'])\n"
        )
        assert _rows(source) == [("MXL705", 8), ("MXL704", 9)], epoch


def test_different_variables_are_different_files() -> None:
    source = (
        "from mxnet import gluon\n\n\n"
        "def run(net, a, b, x):\n"
        "    net.hybridize()\n    net(x)\n    net.export(a)\n"
        "    return gluon.SymbolBlock.imports(b + '-symbol.json', ['input'])\n"
    )
    assert _rows(source) == []


def test_writers_and_readers_pair_across_files_of_one_directory(tmp_path) -> None:
    assert _paths(tmp_path, {"app/train.py": EXPORT, "app/serve.py": SERVE}) == [
        ("app/serve.py", 3, "MXL704"),
        ("app/serve.py", 3, "MXL705"),
    ]


def test_a_relative_path_in_another_directory_is_another_file(tmp_path) -> None:
    assert _paths(tmp_path, {"train/run.py": EXPORT, "serve/run.py": SERVE}) == []


def test_static_alloc_advice_reads_recording_blocks_as_the_memory_rules_do():
    """MXL703's training loop records under any block `knowledge.recording_block` knows: an
    unresolved `record()` (a star import of `mxnet.autograd`) is taken at its word."""
    source = (
        "from mxnet import gluon\nfrom mxnet.autograd import *\n\n\n"
        "def train(net, dataset, epochs):\n"
        '    loader = gluon.data.DataLoader(dataset, batch_size=64, last_batch="discard")\n'
        '    trainer = gluon.Trainer(net.collect_params(), "sgd")\n'
        "    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()\n"
        "    net.hybridize()\n"
        "    for _ in range(epochs):\n"
        "        for x, y in loader:\n"
        "            with record():\n"
        "                loss = loss_fn(net(x), y)\n"
        "            loss.backward()\n"
        "            trainer.step(64)\n"
    )
    assert ("MXL703", 9) in _rows(source)
