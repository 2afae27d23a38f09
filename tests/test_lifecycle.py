"""MXL7xx: fixtures match their markers exactly; targeted export/AMP orderings."""

from __future__ import annotations

from expectations import actual, expected

from mxlint.api import check_source
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
