"""`mxlint server`: a language server (LSP over stdio) for editors.

It indexes the workspace once (from the results cache when files are unchanged), keeps the
project in memory (`mxlint.workspace`) and, after each edit, lints the edited document again and
re-runs the cross-file passes, so that an editor shows what `mxlint check .` reports at the
workspace root: cross-file findings included, in Python files, notebooks (LSP notebook
documents) and dependency files. Code actions apply a finding's fix (unsafe ones say so), add a
`# noqa: CODE` comment, or fix the whole file as `mxlint check --fix` would. Configuration is
read again when `pyproject.toml` or `mxlint.toml` changes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from mxlint import __version__, registry
from mxlint.notebooks import Notebook
from mxlint.rule import Edit, Finding, Location
from mxlint.server_boot import EarlyIndex, boot
from mxlint.sources import NOTEBOOK_SUFFIX
from mxlint.suppressions import parse_lines
from mxlint.workspace import CONFIG_NAMES, NotebookCell, Workspace, standalone

log = logging.getLogger(__name__)

FIX_ALL_KIND = "source.fixAll.mxlint"
#: Findings the engine reports about a file it could not read or parse.
ERROR_CODES = frozenset({"MXL001", "MXL003"})


@dataclass
class Published:
    """What was last sent for one document: the diagnostics and the findings they show."""

    diagnostics: list[lsp.Diagnostic]
    findings: list[Finding]


class MxlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "mxlint",
            __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
            notebook_document_sync=lsp.NotebookDocumentSyncOptions(
                notebook_selector=[
                    lsp.NotebookDocumentFilterWithCells(
                        cells=[lsp.NotebookCellLanguage(language="python")],
                        notebook="jupyter-notebook",
                    )
                ],
                save=True,
            ),
        )
        self.project: Workspace | None = None
        self.ready = asyncio.Event()
        self.published: dict[str, Published] = {}
        #: Documents edited since the last publish, by URI (text documents and notebooks).
        self.dirty: set[str] = set()
        self._pending: asyncio.Task[None] | None = None
        self._text_task: asyncio.Future[None] | None = None
        self.unsafe_fixes = False
        #: The index begun at start-up, before the client named its folder (`server_boot`).
        self.early: EarlyIndex | None = None

    # -- names ---------------------------------------------------------------------------------

    def name_of(self, uri: str) -> str | None:
        """The document's path as `mxlint check` at the workspace root shows it; None when the
        document is not a file (an untitled buffer) or lies outside the workspace."""
        path = to_fs_path(uri)
        if path is None or self.project is None:
            return None
        try:
            rel = os.path.relpath(path, self.project.root)
        except ValueError:
            return None
        if rel.startswith(".."):
            return None
        return Path(rel).as_posix()

    def uri_of(self, name: str) -> str:
        assert self.project is not None
        uri = from_fs_path(str(self.project.root / name))
        assert uri is not None
        return uri

    # -- indexing ------------------------------------------------------------------------------

    async def start_project(self, root: Path) -> None:
        """Index the workspace in a thread, then publish for what was opened meanwhile."""
        project = None
        if self.early is not None:
            early, self.early = self.early, None
            project = await asyncio.to_thread(early.take, root)
        if project is None:
            os.chdir(root)
            project = Workspace(root)
            await asyncio.to_thread(project.index)
        self.project = project
        self._warn_config()
        for uri in list(self.workspace.text_documents):
            if self.workspace.get_notebook_document(cell_uri=uri) is None:
                self._sync_text(uri)
                self.dirty.discard(uri)  # read now: published below
        for uri in list(self.workspace.notebook_documents):
            self._sync_notebook(uri)
            self.dirty.discard(uri)
        self.ready.set()
        project.findings()  # the dependency files' findings too, before the first publish
        self.publish()

    async def reload(self) -> None:
        """Configuration changed: read it and index again (cached files are not read again)."""
        if self.project is None:
            return
        self.ready.clear()  # edits wait for the new index instead of racing its thread
        try:
            await asyncio.to_thread(self.project.index)
        finally:
            self.ready.set()
        self._warn_config()
        self.publish()

    def _warn_config(self) -> None:
        if self.project is not None and self.project.config_error:
            self.window_show_message(
                lsp.ShowMessageParams(
                    type=lsp.MessageType.Error,
                    message=f"mxlint: {self.project.config_error} (using the default settings)",
                )
            )

    # -- documents -----------------------------------------------------------------------------

    def _sync_text(self, uri: str) -> None:
        name = self.name_of(uri)
        if name is None or self.project is None:
            return
        doc = self.workspace.text_documents.get(uri)
        if doc is None:
            self.project.close(name)
        else:
            self.project.change(name, doc.source)

    def _sync_notebook(self, uri: str) -> None:
        name = self.name_of(uri)
        if name is None or self.project is None:
            return
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            self.project.close(name)
            return
        self.project.set_notebook(name, self._cells(notebook))

    def _cells(self, notebook: lsp.NotebookDocument) -> list[NotebookCell]:
        cells = []
        for cell in notebook.cells:
            doc = self.workspace.text_documents.get(cell.document)
            text = doc.source if doc is not None else ""
            code = cell.kind == lsp.NotebookCellKind.Code and (
                doc is None or doc.language_id in (None, "python")
            )
            cells.append(NotebookCell(text, code))
        return cells

    def changed(self, uri: str) -> None:
        """A document changed: lint it again soon (edits that arrive meanwhile are coalesced)."""
        self.dirty.add(uri)
        if self._pending is None or self._pending.done():
            self._pending = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        await self.ready.wait()
        await asyncio.sleep(0)  # let queued edits arrive first
        # A reload may have begun meanwhile: its index thread rewrites the workspace's results
        # (files not open read for their facts, then the open ones in full), not to be read
        # before it is done.
        await self.ready.wait()
        dirty, self.dirty = self.dirty, set()
        for uri in dirty:
            if uri in self.workspace.notebook_documents:
                self._sync_notebook(uri)
            else:
                self._sync_text(uri)
        self.publish(edited=dirty)

    # -- diagnostics ---------------------------------------------------------------------------

    def open_targets(self) -> dict[str, str]:
        """Open documents that get diagnostics: URI -> workspace name (notebooks by their URI)."""
        out: dict[str, str] = {}
        for uri in self.workspace.notebook_documents:
            name = self.name_of(uri)
            if name is not None:
                out[uri] = name
        for uri in self.workspace.text_documents:
            if self.workspace.get_notebook_document(cell_uri=uri) is not None:
                continue
            name = self.name_of(uri)
            if name is not None or to_fs_path(uri) is not None:
                out[uri] = name or ""
        return out

    def findings_for(self, uri: str, name: str, by_file: dict[str, list[Finding]]) -> list[Finding]:
        if name and self.project is not None and self.project.is_checked(name):
            found = by_file.get(name, [])
            if name.endswith(NOTEBOOK_SUFFIX) and uri not in self.workspace.notebook_documents:
                return self._on_json_lines(uri, found)
            return found
        if name == "" and uri.endswith((".py", ".pyi")) and self.project is not None:
            doc = self.workspace.text_documents.get(uri)
            path = to_fs_path(uri) or uri
            if doc is not None:  # outside the workspace: the file alone is its project
                return standalone(path, doc.source, self.project.settings)
        return []

    async def _refresh_text(self) -> None:
        """The dependency files' pass, in a thread (it reads every launch script and Python file
        of the project); published when it is done, again if edits made it stale meanwhile."""
        project = self.project
        while project is not None and project.text_stale:
            paths, texts = project.text_inputs()
            found = await asyncio.to_thread(project.check_text, paths, texts)
            if project is not self.project:
                return
            project.set_text_findings(found)
            if not project.text_stale:
                self.publish()

    def _on_json_lines(self, uri: str, found: list[Finding]) -> list[Finding]:
        """A notebook opened as its JSON text: each finding on the lines of the file that hold
        its cell's rows (as SARIF and GitHub annotations place them); fixes cannot apply."""
        doc = self.workspace.text_documents.get(uri)
        if doc is None:
            return []
        try:
            notebook = Notebook.parse(doc.source)
        except (ValueError, SyntaxError):
            return []
        lines = doc.lines
        out = []
        for f in found:
            start = notebook.json_line(f.cell, f.location.row) if f.cell is not None else None
            if start is None:
                start = 1
            end = notebook.json_line(f.cell, f.end_location.row) if f.cell is not None else None
            end = max(end or start, start)
            width = len(lines[end - 1].rstrip("\r\n")) if end <= len(lines) else 0
            out.append(
                dataclasses.replace(
                    f,
                    location=Location(start, 1),
                    end_location=Location(end, width + 1),
                    cell=None,
                    fix=None,
                )
            )
        return out

    def publish(self, edited: Collection[str] = ()) -> None:
        """Send the diagnostics of every open document whose findings changed, and of the
        `edited` ones in any case (the editor waits for diagnostics of its new version)."""
        if self.project is None:
            return
        by_file = self.project.findings(text=False)
        if self.project.text_stale and (self._text_task is None or self._text_task.done()):
            self._text_task = asyncio.ensure_future(self._refresh_text())
        seen: set[str] = set()
        for uri, name in self.open_targets().items():
            notebook = self.workspace.notebook_documents.get(uri)
            if uri in self.dirty:
                # Opened or edited, not read yet (the index may hold the file read for its
                # facts only): the flush that reads it publishes it.
                seen.update(self._code_cell_uris(notebook) if notebook is not None else (uri,))
                continue
            found = self.findings_for(uri, name, by_file)
            if notebook is not None:
                per_cell = self._by_cell(notebook, found)
                for cell_uri, cell_found in per_cell.items():
                    self._send(cell_uri, cell_found, force=uri in edited)
                    seen.add(cell_uri)
            else:
                self._send(uri, found, force=uri in edited)
                seen.add(uri)
        for uri in list(self.published):
            if uri not in seen:  # closed: clear what the editor still shows
                self._send(uri, [])
                del self.published[uri]

    def _by_cell(
        self, notebook: lsp.NotebookDocument, found: Sequence[Finding]
    ) -> dict[str, list[Finding]]:
        code_cells = self._code_cell_uris(notebook)
        out: dict[str, list[Finding]] = {uri: [] for uri in code_cells}
        for f in found:
            if f.cell is not None and 1 <= f.cell <= len(code_cells):
                out[code_cells[f.cell - 1]].append(f)
        return out

    def _code_cell_uris(self, notebook: lsp.NotebookDocument) -> list[str]:
        cells = self._cells(notebook)
        return [c.document for c, mine in zip(notebook.cells, cells) if mine.code]

    def _send(self, uri: str, found: list[Finding], force: bool = False) -> None:
        lines = self._lines(uri)
        diagnostics = [self._diagnostic(f, lines) for f in found]
        previous = self.published.get(uri)
        if not force and previous is not None and previous.diagnostics == diagnostics:
            previous.findings = found
            return
        self.published[uri] = Published(diagnostics, found)
        doc = self.workspace.text_documents.get(uri)
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(
                uri=uri, diagnostics=diagnostics, version=doc.version if doc else None
            )
        )

    def _lines(self, uri: str) -> list[str]:
        doc = self.workspace.text_documents.get(uri)
        return list(doc.lines) if doc is not None else []

    def _range(self, lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> lsp.Range:
        """mxlint's 1-based rows and character columns as the client's positions (UTF-16 code
        units unless the client chose another encoding)."""
        r = lsp.Range(
            start=lsp.Position(line=max(start[0] - 1, 0), character=max(start[1] - 1, 0)),
            end=lsp.Position(line=max(end[0] - 1, 0), character=max(end[1] - 1, 0)),
        )
        if not lines:
            return r
        codec = self.workspace.position_codec
        return lsp.Range(
            start=self._client_position(codec, lines, r.start),
            end=self._client_position(codec, lines, r.end),
        )

    @staticmethod
    def _client_position(codec: Any, lines: list[str], pos: lsp.Position) -> lsp.Position:
        if pos.line >= len(lines):
            return lsp.Position(line=pos.line, character=0)
        return codec.position_to_client_units(lines, pos)  # type: ignore[no-any-return]

    def _diagnostic(self, f: Finding, lines: list[str]) -> lsp.Diagnostic:
        rng = self._range(
            lines,
            (f.location.row, f.location.column),
            (f.end_location.row, f.end_location.column),
        )
        url = f.url
        return lsp.Diagnostic(
            range=rng,
            message=f.message,
            severity=(
                lsp.DiagnosticSeverity.Error
                if f.code in ERROR_CODES
                else lsp.DiagnosticSeverity.Warning
            ),
            code=f.code,
            code_description=lsp.CodeDescription(href=url) if url else None,
            source="mxlint",
            data={"fixable": f.fix is not None},
        )

    # -- code actions --------------------------------------------------------------------------

    def code_actions(self, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        published = self.published.get(uri)
        only = params.context.only
        actions: list[lsp.CodeAction] = []
        want_quick = not only or any(k.startswith("quickfix") for k in only)
        want_all = not only or any(FIX_ALL_KIND.startswith(k) for k in only)
        if published is not None and want_quick:
            for diagnostic in params.context.diagnostics:
                if diagnostic.source != "mxlint":
                    continue
                finding = self._finding_for(published, diagnostic)
                if finding is None:
                    continue
                fix = self._fix_action(uri, finding, diagnostic)
                if fix is not None:
                    actions.append(fix)
                noqa = self._noqa_action(uri, finding, diagnostic)
                if noqa is not None:
                    actions.append(noqa)
        if want_all:
            fix_all = self._fix_all_action(uri)
            if fix_all is not None:
                actions.append(fix_all)
        return actions

    @staticmethod
    def _finding_for(published: Published, diagnostic: lsp.Diagnostic) -> Finding | None:
        for d, f in zip(published.diagnostics, published.findings):
            if d.code == diagnostic.code and d.range == diagnostic.range:
                return f
        return None

    def _edit_uri(self, uri: str, edit: Edit) -> str:
        """The document an edit applies to: a notebook's fix may touch another cell."""
        if edit.cell is None:
            return uri
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        if notebook is None:
            return uri
        cells = self._code_cell_uris(notebook)
        return cells[edit.cell - 1] if 1 <= edit.cell <= len(cells) else uri

    def _fix_action(
        self, uri: str, finding: Finding, diagnostic: lsp.Diagnostic
    ) -> lsp.CodeAction | None:
        fix = finding.fix
        if fix is None or fix.applicability == "display":
            return None
        safe = fix.applicability == "safe"
        changes: dict[str, list[lsp.TextEdit]] = {}
        for e in fix.edits:
            target = self._edit_uri(uri, e)
            rng = self._range(
                self._lines(target),
                (e.location.row, e.location.column),
                (e.end_location.row, e.end_location.column),
            )
            changes.setdefault(target, []).append(lsp.TextEdit(range=rng, new_text=e.content))
        title = f"{finding.code}: {fix.message}" + ("" if safe else " (unsafe)")
        return lsp.CodeAction(
            title=title,
            kind=lsp.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=lsp.WorkspaceEdit(changes=changes),
            is_preferred=safe,
        )

    def _noqa_action(
        self, uri: str, finding: Finding, diagnostic: lsp.Diagnostic
    ) -> lsp.CodeAction | None:
        """`# noqa: CODE` where `--add-noqa` would put it for this kind of file."""
        # Loaded when first asked for: with the fixes it imports, a tenth of the protocol
        # library's import, which competes with the first index for the CPU.
        from mxlint.add_noqa import add_to_python, plan_text, write_plan

        doc = self.workspace.text_documents.get(uri)
        if doc is None:
            return None
        python = _takes_python_comments(uri, self.workspace)
        if python:
            new, count = add_to_python(doc.source, [finding])
        else:
            name = self.name_of(uri) or ""
            style = next(
                (t.comment_style(name) for t in registry.text_checkers() if t.matches(name)),
                None,
            )
            if style is None:
                return None
            plan = plan_text(doc.source, [finding], style)
            new, count = write_plan(doc.source, plan, parse_lines(doc.source, style))
        if not count:
            return None
        edit = _line_edit(doc.source, new)
        if edit is None:
            return None
        return lsp.CodeAction(
            title=f"Disable {finding.code} for this line",
            kind=lsp.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=lsp.WorkspaceEdit(changes={uri: [edit]}),
        )

    def _fix_all_action(self, uri: str) -> lsp.CodeAction | None:
        name = self.name_of(uri)
        if name is None or self.project is None:
            return None
        fixed = self.project.fix_all(name, unsafe=self.unsafe_fixes)
        if fixed is None:
            return None
        text, applied = fixed
        doc = self.workspace.text_documents.get(uri)
        if doc is None or not applied or text == doc.source:
            return None
        lines = list(doc.lines)
        whole = lsp.Range(
            start=lsp.Position(line=0, character=0), end=lsp.Position(line=len(lines), character=0)
        )
        return lsp.CodeAction(
            title=f"mxlint: fix all auto-fixable problems ({applied})",
            kind=FIX_ALL_KIND,
            edit=lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(range=whole, new_text=text)]}),
        )


def _takes_python_comments(uri: str, workspace: Any) -> bool:
    path = to_fs_path(uri) or ""
    return (
        path.endswith((".py", ".pyi")) or workspace.get_notebook_document(cell_uri=uri) is not None
    )


def _line_edit(old: str, new: str) -> lsp.TextEdit | None:
    """The smallest run of whole lines that turns `old` into `new`, as one edit."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    if start == end_a == end_b:
        return None
    return lsp.TextEdit(
        range=lsp.Range(
            start=lsp.Position(line=start, character=0), end=lsp.Position(line=end_a, character=0)
        ),
        new_text="".join(b[start:end_b]),
    )


def build() -> MxlintServer:
    server = MxlintServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: MxlintServer, params: lsp.InitializeParams) -> None:
        options = params.initialization_options or {}
        if isinstance(options, dict):
            ls.unsafe_fixes = bool(options.get("unsafeFixes", False))

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: MxlintServer, params: lsp.InitializedParams) -> None:
        # Indexing starts at once; asking the client to watch files waits for no index.
        indexing = asyncio.ensure_future(ls.start_project(_root(ls)))
        await _watch(ls)
        await indexing

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: MxlintServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.changed(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: MxlintServer, params: lsp.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        notebook = ls.workspace.get_notebook_document(cell_uri=uri)
        ls.changed(notebook.uri if notebook is not None else uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: MxlintServer, params: lsp.DidSaveTextDocumentParams) -> None:
        path = to_fs_path(params.text_document.uri) or ""
        if Path(path).name in CONFIG_NAMES:
            await ls.reload()

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: MxlintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.changed(params.text_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_OPEN)
    def nb_open(ls: MxlintServer, params: lsp.DidOpenNotebookDocumentParams) -> None:
        ls.changed(params.notebook_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def nb_change(ls: MxlintServer, params: lsp.DidChangeNotebookDocumentParams) -> None:
        ls.changed(params.notebook_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def nb_close(ls: MxlintServer, params: lsp.DidCloseNotebookDocumentParams) -> None:
        ls.changed(params.notebook_document.uri)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def watched(ls: MxlintServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        await ls.ready.wait()
        reload = False
        for change in params.changes:
            name = ls.name_of(change.uri)
            if name is None or ls.project is None:
                continue
            if Path(name).name in CONFIG_NAMES:
                reload = True
                continue
            ls.project.file_changed_on_disk(name, deleted=change.type == lsp.FileChangeType.Deleted)
        if reload:
            await ls.reload()
        else:
            ls.publish()

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(
            code_action_kinds=[
                lsp.CodeActionKind.QuickFix,
                lsp.CodeActionKind.SourceFixAll,
                FIX_ALL_KIND,
            ],
            resolve_provider=False,
        ),
    )
    async def code_action(ls: MxlintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        await ls.ready.wait()
        if ls.dirty:
            await ls._flush()
        return ls.code_actions(params)

    return server


def _root(ls: MxlintServer) -> Path:
    """The first workspace folder (or the root the client gave); the current directory if none."""
    folders = list(ls.workspace.folders.values())
    uri = folders[0].uri if folders else ls.workspace.root_uri
    path = to_fs_path(uri) if uri else None
    return Path(path).resolve() if path else Path.cwd().resolve()


async def _watch(ls: MxlintServer) -> None:
    """Ask the client to report changes to the files mxlint reads, if it can watch them."""
    caps = ls.client_capabilities.workspace
    watched = caps.did_change_watched_files if caps is not None else None
    if watched is None or not watched.dynamic_registration:
        return
    patterns = [
        "**/*.py",
        "**/*.ipynb",
        "**/pyproject.toml",
        "**/mxlint.toml",
        "**/*.txt",
        "**/Dockerfile*",
        "**/*.yml",
        "**/*.yaml",
        "**/setup.cfg",
    ]
    options = lsp.DidChangeWatchedFilesRegistrationOptions(
        watchers=[lsp.FileSystemWatcher(glob_pattern=p) for p in patterns]
    )
    try:
        await ls.client_register_capability_async(
            lsp.RegistrationParams(
                registrations=[
                    lsp.Registration(
                        id="mxlint-watched-files",
                        method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        register_options=options,
                    )
                ]
            )
        )
    except Exception as exc:  # the client refused: config changes are seen on save instead
        log.info("file watching not registered: %s", exc)


def main(started: tuple[BinaryIO, Any, EarlyIndex | None] | None = None) -> int:
    """Serve on stdin/stdout (see `server_boot.boot`, which the command runs first)."""
    logging.basicConfig(level=logging.WARNING)
    protocol_out, protocol_in, early = started if started is not None else boot()
    server = build()
    server.early = early
    server.start_io(protocol_in, protocol_out)
    return 0
