"""`mxlint server` end to end: a real LSP client (pytest-lsp) talks to the server over stdio.

The server's diagnostics must be what `mxlint check --output-format json` reports at the same
root (cross-file findings included), a fix action must give `--fix`'s text, and a cross-file
finding must follow edits of the file it depends on.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SERVER = [sys.executable, "-m", "mxlint", "server"]

pytestmark = pytest.mark.slow


def check_json(root: Path, *extra: str) -> list[dict[str, object]]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mxlint",
            "check",
            "--no-cache",
            "--output-format",
            "json",
            *extra,
            ".",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def expected(root: Path) -> dict[str, set[tuple[str, int, int]]]:
    """`mxlint check`'s findings per file as (code, 0-based line, 0-based column)."""
    by_file: dict[str, set[tuple[str, int, int]]] = {}
    for f in check_json(root):
        loc = f["location"]
        assert isinstance(loc, dict)
        by_file.setdefault(str(f["filename"]), set()).add(
            (str(f["code"]), int(loc["row"]) - 1, int(loc["column"]) - 1)
        )
    return by_file


def shown(client: LanguageClient, uri: str) -> set[tuple[str, int, int]]:
    return {
        (str(d.code), d.range.start.line, d.range.start.character)
        for d in client.diagnostics.get(uri, [])
    }


async def until(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    """Wait for the server's notifications to make `condition` true."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        if loop.time() > end:
            raise AssertionError("timed out waiting for the server")
        await asyncio.sleep(0.05)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "sample_project"
    shutil.copytree(FIXTURES / "sample_project", root)
    (root / ".git").mkdir()  # the project's root: no configuration found above it
    return root


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, project: Path):  # type: ignore[no-untyped-def]
    registered: list[lsp.Registration] = []

    @lsp_client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:  # as VS Code accepts it
        registered.extend(params.registrations)

    params = lsp.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=project.as_uri(),
        workspace_folders=[lsp.WorkspaceFolder(uri=project.as_uri(), name="sample")],
    )
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


def open_file(client: LanguageClient, path: Path, language: str = "python") -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(
                uri=uri, language_id=language, version=1, text=path.read_text(encoding="utf-8")
            )
        )
    )
    return uri


def replace_all(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


@pytest.mark.asyncio
async def test_diagnostics_equal_mxlint_check(client: LanguageClient, project: Path) -> None:
    want = expected(project)
    names = ["train.py", "infer.py", "models/classifier.py", "requirements.txt", "Dockerfile"]
    assert {n for n in names if n in want} == {
        "train.py",
        "infer.py",
        "models/classifier.py",
        "requirements.txt",
    }
    uris = {
        n: open_file(client, project / n, "pip-requirements" if n.endswith(".txt") else "python")
        for n in names
    }
    await until(lambda: all(uri in client.diagnostics for uri in uris.values()))
    for name, uri in uris.items():
        assert shown(client, uri) == want.get(name, set()), name
    # The cross-file finding (a helper in models/utils.py reads `.asscalar()`) is among them.
    assert ("MXL102", 20, 12) in shown(client, uris["models/classifier.py"])
    d = client.diagnostics[uris["train.py"]][0]
    assert d.source == "mxlint"
    assert d.code_description is not None and "MXL" in d.code_description.href


@pytest.mark.asyncio
async def test_cross_file_finding_follows_the_helper(client: LanguageClient, project: Path) -> None:
    classifier = open_file(client, project / "models/classifier.py")
    utils_path = project / "models/utils.py"
    utils = open_file(client, utils_path)
    cross = ("MXL102", 20, 12)
    await until(lambda: cross in shown(client, classifier))
    original = utils_path.read_text(encoding="utf-8")
    synced = original.replace(".asscalar()", "")
    assert synced != original
    replace_all(client, utils, synced, 2)  # unsaved: the buffer, not the disk, is the truth
    await until(lambda: cross not in shown(client, classifier))
    assert ("MXL103", 18, 16) in shown(client, classifier)  # its own findings stay
    replace_all(client, utils, original, 3)
    await until(lambda: cross in shown(client, classifier))


@pytest.mark.asyncio
async def test_fix_actions_give_fixs_text(client: LanguageClient, project: Path) -> None:
    path = project / "models/classifier.py"
    uri = open_file(client, path)
    await until(lambda: uri in client.diagnostics)
    diagnostics = client.diagnostics[uri]
    fixable = [d for d in diagnostics if d.code == "MXL105"]
    assert len(fixable) == 1
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=fixable[0].range,
            context=lsp.CodeActionContext(diagnostics=fixable),
        )
    )
    assert actions is not None
    by_kind = {(a.kind, a.title.split(":")[0]) for a in actions if isinstance(a, lsp.CodeAction)}
    assert (lsp.CodeActionKind.QuickFix, "MXL105") in by_kind
    fix_all = [
        a for a in actions if isinstance(a, lsp.CodeAction) and a.kind == "source.fixAll.mxlint"
    ]
    assert len(fix_all) == 1
    edit = fix_all[0].edit
    assert edit is not None and edit.changes is not None
    (text_edit,) = edit.changes[uri]
    # What `mxlint check --fix` writes for the same file.
    fixed_copy = project.parent / "fixed"
    shutil.copytree(project, fixed_copy)
    subprocess.run(
        [sys.executable, "-m", "mxlint", "check", "--no-cache", "--fix", "models/classifier.py"],
        cwd=fixed_copy,
        capture_output=True,
        check=False,
    )
    assert text_edit.new_text == (fixed_copy / "models/classifier.py").read_text(encoding="utf-8")
    noqa = [a for a in actions if isinstance(a, lsp.CodeAction) and a.title.startswith("Disable")]
    assert [a.title for a in noqa] == ["Disable MXL105 for this line"]
    assert noqa[0].edit is not None and noqa[0].edit.changes is not None
    (line_edit,) = noqa[0].edit.changes[uri]
    assert line_edit.range.start.line == fixable[0].range.start.line
    assert line_edit.new_text.rstrip().endswith("# noqa: MXL105")


@pytest.mark.asyncio
async def test_notebook_cells_get_their_findings(client: LanguageClient, project: Path) -> None:
    path = project / "notebook.ipynb"
    shutil.copy(FIXTURES / "notebooks" / "gluon_cnn.ipynb", path)
    want: dict[int, set[tuple[str, int, int]]] = {}
    for f in check_json(project):
        if f["filename"] == "notebook.ipynb":
            loc = f["location"]
            assert isinstance(loc, dict) and isinstance(f["cell"], int)
            want.setdefault(f["cell"], set()).add(
                (str(f["code"]), int(loc["row"]) - 1, int(loc["column"]) - 1)
            )
    assert set(want) == {3, 4}
    doc = json.loads(path.read_text(encoding="utf-8"))
    uri = path.as_uri()
    cells, items = [], []
    for i, cell in enumerate(doc["cells"]):
        cell_uri = f"vscode-notebook-cell:{path}#C{i}"
        code = cell["cell_type"] == "code"
        kind = lsp.NotebookCellKind.Code if code else lsp.NotebookCellKind.Markup
        cells.append(lsp.NotebookCell(kind=kind, document=cell_uri))
        source = cell["source"]
        text = "".join(source) if isinstance(source, list) else source
        items.append(
            lsp.TextDocumentItem(
                uri=cell_uri, language_id="python" if code else "markdown", version=1, text=text
            )
        )
    client.notebook_document_did_open(
        lsp.DidOpenNotebookDocumentParams(
            notebook_document=lsp.NotebookDocument(
                uri=uri, notebook_type="jupyter-notebook", version=1, cells=cells
            ),
            cell_text_documents=items,
        )
    )
    code_cells = [c.document for c in cells if c.kind == lsp.NotebookCellKind.Code]
    await until(lambda: all(c in client.diagnostics for c in code_cells))
    for number, cell_uri in enumerate(code_cells, start=1):
        assert shown(client, cell_uri) == want.get(number, set()), number


@pytest.mark.asyncio
async def test_configuration_is_read_again_when_it_changes(
    client: LanguageClient, project: Path
) -> None:
    uri = open_file(client, project / "train.py")
    await until(lambda: "MXL601" in {c for c, _, _ in shown(client, uri)})
    config = project / "mxlint.toml"
    config.write_text('ignore = ["MXL601"]\n', encoding="utf-8")
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=config.as_uri(), type=lsp.FileChangeType.Created)]
        )
    )
    await until(lambda: "MXL601" not in {c for c, _, _ in shown(client, uri)})
    assert "MXL401" in {c for c, _, _ in shown(client, uri)}


@pytest.mark.asyncio
async def test_a_broken_configuration_is_reported(client: LanguageClient, project: Path) -> None:
    uri = open_file(client, project / "train.py")
    await until(lambda: uri in client.diagnostics)
    config = project / "mxlint.toml"
    config.write_text("ignore = [\n", encoding="utf-8")
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=config.as_uri(), type=lsp.FileChangeType.Created)]
        )
    )
    await until(lambda: any("invalid TOML" in m.message for m in client.messages))
    (message,) = [m for m in client.messages if "invalid TOML" in m.message]
    assert message.type == lsp.MessageType.Error
    assert "mxlint.toml" in message.message and "default settings" in message.message


@pytest.mark.asyncio
async def test_a_project_indexed_by_worker_processes(client: LanguageClient, project: Path) -> None:
    """Enough files for worker processes (where there are cores): the threaded server must
    spawn them, and their results are the workspace's."""
    source = (project / "models/classifier.py").read_text(encoding="utf-8")
    for i in range(30):
        (project / "models" / f"copy_{i}.py").write_text(source, encoding="utf-8")
    config = project / "mxlint.toml"
    config.write_text("", encoding="utf-8")  # reload: index again, now with 30 more files
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=config.as_uri(), type=lsp.FileChangeType.Created)]
        )
    )
    uri = open_file(client, project / "models" / "copy_29.py")
    await until(lambda: uri in client.diagnostics)
    assert shown(client, uri) == expected(project)["models/copy_29.py"]


@pytest.mark.asyncio
async def test_a_notebook_opened_as_json_text(client: LanguageClient, project: Path) -> None:
    """An editor without notebook support opens the file as JSON: findings go on the lines of
    the file that hold their cells' rows, as GitHub annotations place them."""
    path = project / "notebook.ipynb"
    shutil.copy(FIXTURES / "notebooks" / "gluon_cnn.ipynb", path)
    out = subprocess.run(
        [sys.executable, "-m", "mxlint", "check", "--no-cache", "--output-format", "github", "."],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    want = set()
    for line in out.stdout.splitlines():
        if "file=notebook.ipynb," in line:
            fields = dict(
                kv.split("=", 1) for kv in line.split("::")[1].split(" ", 1)[1].split(",")
            )
            want.add((fields["title"], int(fields["line"]) - 1))
    assert len(want) == 4
    uri = open_file(client, path, "json")
    await until(lambda: uri in client.diagnostics)
    assert {(str(d.code), d.range.start.line) for d in client.diagnostics[uri]} == want


@pytest.mark.asyncio
async def test_files_git_ignores_get_no_diagnostics(client: LanguageClient, project: Path) -> None:
    """As `mxlint check .` skips them: a scratch copy git ignores stays silent in the editor."""
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text("scratch/\n", encoding="utf-8")
    (project / "scratch").mkdir()
    shutil.copy(project / "train.py", project / "scratch" / "train.py")
    assert "scratch/train.py" not in expected(project)
    ignored = open_file(client, project / "scratch" / "train.py")
    checked = open_file(client, project / "train.py")
    await until(lambda: checked in client.diagnostics and ignored in client.diagnostics)
    assert not client.diagnostics[ignored]
    assert shown(client, checked) == expected(project)["train.py"]


@pytest.mark.asyncio
async def test_noqa_action_in_a_requirements_file(client: LanguageClient, project: Path) -> None:
    """The comment goes where `--add-noqa` puts it for the file's kind, and silences it."""
    uri = open_file(client, project / "requirements.txt", "pip-requirements")
    await until(lambda: uri in client.diagnostics)
    (unpinned,) = [d for d in client.diagnostics[uri] if d.code == "MXL501"]
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=unpinned.range,
            context=lsp.CodeActionContext(diagnostics=[unpinned]),
        )
    )
    assert actions is not None
    (noqa,) = [
        a for a in actions if isinstance(a, lsp.CodeAction) and a.title.startswith("Disable")
    ]
    assert noqa.edit is not None and noqa.edit.changes is not None
    (edit,) = noqa.edit.changes[uri]
    lines = (project / "requirements.txt").read_text(encoding="utf-8").splitlines(keepends=True)
    assert edit.range.start.line == 0 and edit.range.end.line == 1
    assert edit.new_text == lines[0].rstrip("\n") + "  # noqa: MXL501\n"
    replace_all(client, uri, edit.new_text + "".join(lines[1:]), 2)
    await until(lambda: "MXL501" not in {c for c, _, _ in shown(client, uri)})
