"""The environment checkers: MXNet settings a project writes into the environment of its programs,
read where they are written — Python code (`os.environ[...] = ...`, `os.environ.setdefault`,
`os.environ.update`, `os.putenv`), Dockerfiles (`ENV`) and shell launch scripts (`export`,
`NAME=value python train.py`). They report MXL511 (a value MXNet does not accept) and MXL606 (a
debugging switch left on for training); the rules' files decide and word the findings.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from mxlint.checker import Checker, FixSpec, NodeEdit, TextChecker
from mxlint.flow import has_main_guard, is_main_guard, main_runs_tests
from mxlint.parsing import split_lines
from mxlint.rule import Finding, Location
from mxlint.rules.sync import debug_setting_left_on
from mxlint.rules.sync.debug_setting_left_on import DebugSettingLeftOn
from mxlint.rules.versions import invalid_mxnet_setting
from mxlint.rules.versions._files import file_kind
from mxlint.rules.versions.invalid_mxnet_setting import InvalidMxnetSetting
from mxlint.semantic.program import is_test_file
from mxlint.walker import NESTED_SCOPES, iter_nodes

if TYPE_CHECKING:
    from mxlint.dockerfile import Stage
    from mxlint.settings import Settings
    from mxlint.shell import Assignment

#: What a file does that makes it a training run (a program that steps an optimizer).
_TRAINS = re.compile(r"\.backward\(|\.step\(|\.fit\(|\bTrainer\(|\.update\(\)")
_SHELL_SCRIPT = re.compile(r"\.(?:sh|bash)$", re.I)


# --- Python ---------------------------------------------------------------------------------


@dataclass
class _Written:
    """An environment variable a Python statement sets."""

    name: str
    value: str | None
    #: The expression holding the value (a string literal when the value is known).
    value_node: cst.BaseExpression
    statement: cst.SimpleStatementLine
    guarded: bool
    #: The compound statement (or module) whose block holds the statement.
    parent: cst.CSTNode


class EnvironmentChecker(Checker):
    """`os.environ` writes of one Python file."""

    rules = (InvalidMxnetSetting, DebugSettingLeftOn)
    name = "environment"

    def begin(self) -> None:
        self._written: list[_Written] = []
        # Every write goes through `os.environ` or `os.putenv`, which the text then names
        # (imported as such, or as an alias of them): other files' statements are not read.
        source = self.ctx.source
        self._writes = "environ" in source or "putenv" in source

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if not self._writes:
            return
        for small in node.body:
            for name_node, value in self._settings(small):
                name = _string(name_node)
                if name is None or not name.startswith("MXNET_"):
                    continue
                parent = self.ctx.stack[-1] if self.ctx.stack else self.ctx.module
                self._written.append(
                    _Written(name, _string(value), value, node, self._guarded(), parent)
                )

    def _settings(
        self, small: cst.BaseSmallStatement
    ) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
        """(name, value) expressions of what this statement writes into the environment."""
        if type(small) is cst.Assign:
            out = []
            for target in small.targets:
                t = target.target
                if (
                    type(t) is cst.Subscript
                    and self.ctx.resolve(t.value) == "os.environ"
                    and len(t.slice) == 1
                    and type(t.slice[0].slice) is cst.Index
                ):
                    out.append((t.slice[0].slice.value, small.value))
            return out
        if type(small) is not cst.Expr or type(small.value) is not cst.Call:
            return []
        call = small.value
        func = self.ctx.resolve(call.func)
        args = [a for a in call.args if a.keyword is None and not a.star]
        if func in ("os.environ.setdefault", "os.putenv", "os.environ.__setitem__"):
            return [(args[0].value, args[1].value)] if len(args) == 2 else []
        if func == "os.environ.update":
            out = [
                (cst.SimpleString(repr(a.keyword.value)), a.value)
                for a in call.args
                if a.keyword is not None
            ]
            if args and type(args[0].value) is cst.Dict:
                out += [
                    (el.key, el.value)
                    for el in args[0].value.elements
                    if type(el) is cst.DictElement
                ]
            return out
        return []

    def _guarded(self) -> bool:
        """Set on some paths only: under an `if` (not the `__main__` guard), in an `except`
        handler, or in a function named for debugging, profiling or tests."""
        for node in self.ctx.stack:
            if type(node) is cst.If and not is_main_guard(node):
                return True
            if type(node) is cst.FunctionDef and not debug_setting_left_on.production_path(
                node.name.value
            ):
                return True
        return False

    def end(self) -> None:
        if not self._written:
            return
        ctx = self.ctx
        if is_test_file(ctx.settings.relative(ctx.path)):
            return
        if ctx.settings.enabled(InvalidMxnetSetting, ctx.path):
            for written in self._written:
                found = invalid_mxnet_setting.problem(written.name, written.value)
                if found is None:
                    continue
                text, spelled = found
                fix = None
                if spelled is not None and type(written.value_node) is cst.SimpleString:
                    quote = written.value_node.quote
                    fix = FixSpec(
                        "safe",
                        f"Replace with `{spelled}`",
                        (NodeEdit(written.value_node, f"{quote}{spelled}{quote}"),),
                    )
                ctx.report(
                    written.value_node,
                    InvalidMxnetSetting,
                    InvalidMxnetSetting.format(
                        setting=f"{written.name}={written.value}", problem=text
                    ),
                    fix=fix,
                    data={"setting": written.name, "value": written.value},
                )
        if ctx.settings.enabled(DebugSettingLeftOn, ctx.path) and self._training_program():
            for written in self._written:
                effect = debug_setting_left_on.effect(written.name, written.value)
                if effect is None or written.guarded:
                    continue
                ctx.report(
                    written.statement,
                    DebugSettingLeftOn,
                    DebugSettingLeftOn.format(
                        setting=f"{written.name}={written.value}", effect=effect
                    ),
                    fix=_removal(written.statement, written.parent),
                    data={"setting": written.name, "value": written.value},
                )

    def _training_program(self) -> bool:
        """A production program that trains: run as a script (declared an entry point, a
        `__main__` block that is not a test runner, or work at module level), with an optimizer
        step or `fit()` in it, and nothing in its path that says test, debug or profile."""
        ctx = self.ctx
        if not debug_setting_left_on.production_path(ctx.settings.relative(ctx.path)):
            return False
        if not _TRAINS.search(ctx.source):
            return False
        module = ctx.module
        if ctx.is_entry or (has_main_guard(module) and not main_runs_tests(module)):
            return True
        return any(
            type(stmt) in (cst.For, cst.While, cst.With)
            or (
                type(stmt) is cst.SimpleStatementLine
                and any(type(s) is cst.Expr and type(s.value) is cst.Call for s in stmt.body)
            )
            for stmt in module.body
        )


def _removal(statement: cst.SimpleStatementLine, parent: cst.CSTNode) -> FixSpec | None:
    """Delete the statement's line; `pass` when it is the only statement of its block."""
    if len(statement.body) != 1:
        return None
    for block in iter_nodes(parent, stop=(*NESTED_SCOPES, cst.SimpleStatementLine)):
        if type(block) is cst.IndentedBlock and statement in block.body:
            if len(block.body) == 1:
                return FixSpec(
                    "unsafe", "Replace with `pass`", (NodeEdit(statement.body[0], "pass"),)
                )
            break
    return FixSpec("unsafe", "Remove the setting", (NodeEdit(statement, "", "delete_lines"),))


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


# --- Dockerfiles and shell scripts -----------------------------------------------------------


@dataclass(frozen=True)
class _Setting:
    """An MXNet setting written in a Dockerfile or a launch script, where its `NAME=value`
    text is (1-based line and column, width)."""

    name: str
    value: str | None
    line: int
    col: int
    width: int
    #: Set only on some paths (after `&&`/`||` on its line): not always in effect.
    guarded: bool = False


class EnvironmentFilesChecker(TextChecker):
    """`ENV` settings of Dockerfiles and the settings shell launch scripts give the programs
    they start (read with `mxlint.shell`)."""

    rules = (InvalidMxnetSetting, DebugSettingLeftOn)
    name = "environment-files"

    @classmethod
    def matches(cls, filename: str) -> bool:
        return file_kind(filename) == "dockerfile" or bool(_SHELL_SCRIPT.search(filename))

    def check_files(self, files: list[tuple[str, str]], settings: Settings) -> list[Finding]:
        out: list[Finding] = []
        for path, text in files:
            if "MXNET_" not in text:
                continue
            relative = settings.relative(path)
            if is_test_file(relative):
                continue
            if file_kind(path) == "dockerfile":
                # The Dockerfile reader loads `packaging`: only runs with such files pay for it.
                from mxlint.dockerfile import parse_dockerfile

                stages = parse_dockerfile(text)
                written = _docker_settings(text, stages[-1]) if stages else []
                always = written
                production = True
            else:
                written, always, programs = _shell_settings(text)
                production = bool(programs) and all(
                    debug_setting_left_on.production_path(program) for program in programs
                )
            production = production and debug_setting_left_on.production_path(relative)
            out += _judge(path, written, always if production else [], settings)
        return out


def _width(lines: list[str], line: int, column: int) -> int:
    """The length of the `NAME=value` word starting at (line, column): up to the first blank
    outside quotes."""
    row = lines[line - 1] if 0 < line <= len(lines) else ""
    end, quote = column - 1, ""
    while end < len(row) and (quote or not row[end].isspace()):
        if row[end] in "'\"":
            quote = "" if quote == row[end] else (quote or row[end])
        end += 1
    return max(1, end - column + 1)


def _docker_settings(text: str, stage: Stage) -> list[_Setting]:
    """The `ENV` settings in effect at the end of the (last) stage."""
    lines = split_lines(text)
    out = [
        _Setting(var.name, var.value, var.line, var.column, _width(lines, var.line, var.column))
        for var in stage.env.values()
        if var.name.startswith("MXNET_")
    ]
    return sorted(out, key=lambda s: (s.line, s.col))


def _shell_settings(text: str) -> tuple[list[_Setting], list[_Setting], list[str]]:
    """(every MXNet setting the script writes, those in the environment of a Python program it
    always starts, the programs it starts). A setting written inside an `if`/`case`, a loop
    or a function is not in effect after it (the reader says so); one after `&&`/`||` on its
    line, or given to a launch made only under a condition or in a function, is not always in
    effect either."""
    from mxlint.shell import parse_shell

    script = parse_shell(text)
    lines = split_lines(text)

    def setting(a: Assignment) -> _Setting:
        row = lines[a.line - 1] if 0 < a.line <= len(lines) else ""
        guarded = "&&" in row[: a.column - 1] or "||" in row[: a.column - 1]
        return _Setting(a.name, a.value, a.line, a.column, _width(lines, a.line, a.column), guarded)

    written: dict[tuple[int, int], _Setting] = {}
    for a in [*script.assignments, *(i for c in script.commands for i in c.inline)]:
        if a.name.startswith("MXNET_"):
            written.setdefault((a.line, a.column), setting(a))
    always: dict[tuple[int, int], _Setting] = {}
    programs: list[str] = []
    for command in script.commands:
        program = _python_program([w.value for w in command.words])
        if program is None:
            continue
        programs.append(program)
        if command.conditional or command.in_function:
            continue
        for given in command.env.values():
            if given is not None and given.name.startswith("MXNET_"):
                found = setting(given)
                if not found.guarded:
                    always.setdefault((given.line, given.column), found)
    return sorted(written.values(), key=_at), sorted(always.values(), key=_at), programs


def _at(s: _Setting) -> tuple[int, int]:
    return s.line, s.col


def _python_program(words: list[str | None]) -> str | None:
    """The script or module a command runs with Python (directly or through a launcher such as
    `mpirun`, `horovodrun` or `launch.py`); None for any other command or one the script does
    not spell out."""
    if not words or words[0] is None:
        return None
    program = posixpath.basename(words[0])
    if re.fullmatch(r"python[0-9.]*", program):
        for j, word in enumerate(words[1:], start=1):
            if word is None:
                return None
            if word == "-m":
                return words[j + 1] if j + 1 < len(words) else None
            if word == "-c":
                return None
            if not word.startswith("-"):
                return word
        return None
    if program.endswith(".py"):
        return words[0]
    return next((w for w in words[1:] if w is not None and w.endswith(".py")), None)


def _judge(
    path: str, written: list[_Setting], always: list[_Setting], settings: Settings
) -> list[Finding]:
    """MXL511 for every setting MXNet rejects, MXL606 for a debugging switch always on."""
    out: list[Finding] = []
    for setting in written:
        found = invalid_mxnet_setting.problem(setting.name, setting.value)
        if found is not None and settings.enabled(InvalidMxnetSetting, path):
            message = InvalidMxnetSetting.format(
                setting=f"{setting.name}={setting.value}", problem=found[0]
            )
            out.append(_finding(InvalidMxnetSetting.code, message, path, setting))
    for setting in always:
        effect = debug_setting_left_on.effect(setting.name, setting.value)
        if effect is not None and settings.enabled(DebugSettingLeftOn, path):
            message = DebugSettingLeftOn.format(
                setting=f"{setting.name}={setting.value}", effect=effect
            )
            out.append(_finding(DebugSettingLeftOn.code, message, path, setting))
    return out


def _finding(code: str, message: str, path: str, setting: _Setting) -> Finding:
    start = Location(setting.line, setting.col)
    return Finding(code, message, path, start, Location(setting.line, setting.col + setting.width))
