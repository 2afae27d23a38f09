"""A reader for shell launch scripts (`run_train.sh`): the environment they set and the Python
programs they start.

Only what the rules need: `export NAME=value` (also `declare -x`, `NAME=value` exported later or
under `set -a`, and `NAME=value python train.py` for one command), with `$VAR`/`${VAR}` resolved
from what the script set before; each setting knows whether it is *guarded* — inside an
`if`/`case`/loop or a function, or after `&&`/`||` — so that a debug switch behind a flag is not
taken for one the script always sets. Heredoc bodies are skipped (they are text, not commands).
The word splitting (quotes, escapes, operators) is shared with the Dockerfile reader.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field, replace

from mxlint.parsing import split_lines

_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-+][^}]*)?\}|([A-Za-z_][A-Za-z0-9_]*))")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
#: `name() {`, `function name {`: the start of a function definition.
_FUNCTION = re.compile(
    r"^\s*(?:function\s+[A-Za-z_][\w.:-]*\s*(?:\(\s*\))?|[A-Za-z_][\w.:-]*\s*\(\s*\))\s*\{?"
)
#: Shell operators, longest first.
OPERATORS = ("&&", "||", ";;", ";", "|", "&", "(", ")", "\n")
_OPENERS = frozenset({"if", "case", "while", "until", "for", "select"})
_CLOSERS = {"fi": "if", "esac": "case", "done": "loop"}
#: Words that lead a command without being its program.
_LEADING = frozenset({"then", "do", "else", "{", "!", "time"})
#: Programs that run the command that follows them.
_WRAPPERS = frozenset({"env", "exec", "nohup", "sudo", "time", "nice", "stdbuf", "command"})


@dataclass(frozen=True)
class EnvSetting:
    """One environment variable set by a launch script, a Dockerfile or Python code."""

    name: str
    #: The value as the program sees it; None when it depends on something not known here.
    value: str | None
    line: int
    #: 1-based column of the name, and the length of the `NAME=value` text.
    col: int
    width: int
    #: Set only on some paths: behind a condition, in a loop or a function.
    guarded: bool = False


@dataclass(frozen=True)
class Launch:
    """A command that starts a Python program (`python train.py`, `python -m pkg.train`)."""

    program: str  # the script path or module the command runs
    line: int
    guarded: bool = False


@dataclass
class ShellScript:
    settings: list[EnvSetting] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)


# --- words ------------------------------------------------------------------------------------


def tokens(text: str) -> list[tuple[str, int]]:
    """Shell words (quotes removed) and operators, each with the offset where it starts."""
    return [(word, start) for word, start, _ in token_spans(text)]


def token_spans(text: str) -> list[tuple[str, int, int]]:
    """Shell words (quotes removed) and operators, each with its start and end offsets."""
    out: list[tuple[str, int, int]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t":
            i += 1
            continue
        op = next((o for o in OPERATORS if text.startswith(o, i)), None)
        if op:
            out.append((op, i, i + len(op)))
            i += len(op)
            continue
        if ch == "#":
            break  # a shell comment runs to the end of the (joined) line
        start, word = i, []
        while i < n and text[i] not in " \t" and not any(text.startswith(o, i) for o in OPERATORS):
            c = text[i]
            if c in "'\"":
                end = text.find(c, i + 1)
                end = n if end < 0 else end
                word.append(text[i + 1 : end])
                i = end + 1
            elif c == "\\" and i + 1 < n:
                word.append(text[i + 1])
                i += 2
            else:
                word.append(c)
                i += 1
        out.append(("".join(word), start, i))
    return out


def commands(words: list[tuple[str, int]]) -> list[list[tuple[str, int]]]:
    """The simple commands of a list of words, split at operators."""
    out: list[list[tuple[str, int]]] = [[]]
    for token in words:
        if token[0] in OPERATORS:
            out.append([])
        else:
            out[-1].append(token)
    return [c for c in out if c]


def substitute(value: str, env: dict[str, str | None]) -> str | None:
    """`value` with `$VAR`/`${VAR}` replaced from `env`; None when one of them is unknown."""
    unresolved = False

    def one(m: re.Match[str]) -> str:
        nonlocal unresolved
        got = env.get(m.group(1) or m.group(2))
        if got is None:
            unresolved = True
            return ""
        return got

    out = _VAR.sub(one, value)
    return None if unresolved else out


# --- the reader -------------------------------------------------------------------------------


@dataclass
class _Line:
    text: str
    #: offset in `text` -> (line, 1-based column)
    positions: list[tuple[int, int]]


def _logical_lines(text: str) -> list[_Line]:
    """Lines joined at trailing backslashes, without comment-only lines and heredoc bodies."""
    out: list[_Line] = []
    chars: list[str] = []
    positions: list[tuple[int, int]] = []
    heredoc: str | None = None
    for number, raw in enumerate(split_lines(text), start=1):
        if heredoc is not None:
            if raw.strip() == heredoc:
                heredoc = None
            continue
        if not chars and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        body = raw.rstrip()
        continued = body.endswith("\\") and not body.endswith("\\\\")
        if continued:
            body = body[:-1]
        for col, ch in enumerate(body, start=1):
            chars.append(ch)
            positions.append((number, col))
        if continued:
            chars.append(" ")
            positions.append((number, len(body) + 1))
            continue
        joined = "".join(chars)
        out.append(_Line(joined, positions))
        found = _HEREDOC.search(joined.split("#", 1)[0])
        if found:
            heredoc = found.group(2)
        chars, positions = [], []
    if chars:
        out.append(_Line("".join(chars), positions))
    return out


def parse_shell_script(text: str) -> ShellScript:
    """The settings and Python launches of a shell script, in order."""
    reader = _Reader()
    for line in _logical_lines(text):
        spans = token_spans(line.text)
        function = _FUNCTION.match(line.text)
        if function is not None:
            reader.blocks.append("function")
            spans = [w for w in spans if w[1] >= function.end()]
        after_condition = False
        command: list[tuple[str, int, int]] = []
        for span in [*spans, (";", len(line.text), len(line.text))]:
            if span[0] not in OPERATORS:
                command.append(span)
                continue
            if command:
                reader.command(command, line, after_condition)
            command = []
            after_condition = span[0] in ("&&", "||") or (after_condition and span[0] == "|")
    return reader.script


class _Reader:
    """The state of a script read top to bottom: open blocks, variables, `set -a`."""

    def __init__(self) -> None:
        self.script = ShellScript()
        #: What the script assigned so far outside any condition ($VAR resolves from it).
        self.known: dict[str, str | None] = {}
        #: Shell variables not exported (yet): `NAME=value` alone on a command.
        self.shell_vars: dict[str, EnvSetting] = {}
        self.blocks: list[str] = []
        self.export_all = False

    def command(self, words: list[tuple[str, int, int]], line: _Line, after: bool) -> None:
        words = list(words)
        while words and words[0][0] in _LEADING and len(words) > 1:
            words.pop(0)
        if not words or words[0][0] in _LEADING:
            return
        first = words[0][0]
        if first in _OPENERS:
            self.blocks.append("loop" if first not in ("if", "case") else first)
            return
        if first == "elif":
            return
        if first in _CLOSERS:
            if self.blocks:
                self.blocks.pop()
            return
        if first == "}":
            if self.blocks and self.blocks[-1] == "function":
                self.blocks.pop()
            return
        guarded = bool(self.blocks) or after
        if first == "set" and any(w in ("-a", "allexport") for w, _, _ in words[1:]):
            self.export_all = True
            return
        if first in ("export", "declare", "typeset") and (
            first == "export" or any(w.startswith("-") and "x" in w for w, _, _ in words[1:])
        ):
            for word in words[1:]:
                if word[0].startswith("-"):
                    continue
                if _ASSIGNMENT.match(word[0]):
                    self._set(self._setting(word, line, guarded), exported=True)
                elif _NAME.match(word[0]) and word[0] in self.shell_vars:
                    was = self.shell_vars[word[0]]
                    self.script.settings.append(replace(was, guarded=was.guarded or guarded))
            return
        prefix: list[EnvSetting] = []
        while words and _ASSIGNMENT.match(words[0][0]):
            prefix.append(self._setting(words.pop(0), line, guarded))
        if not words:  # `NAME=value` alone: a shell variable (exported under `set -a`)
            for setting in prefix:
                self._set(setting, exported=self.export_all)
            return
        while words and posixpath.basename(words[0][0]) in _WRAPPERS:
            words.pop(0)
            while words and (words[0][0].startswith("-") or _ASSIGNMENT.match(words[0][0])):
                word = words.pop(0)
                if _ASSIGNMENT.match(word[0]):
                    prefix.append(self._setting(word, line, guarded))
        program = _python_program([w for w, _, _ in words])
        if program is not None and words:
            row = _position(line, words[0][1])[0]
            self.script.launches.append(Launch(program, row, guarded))
            self.script.settings.extend(prefix)  # the environment of that program

    def _setting(self, word: tuple[str, int, int], line: _Line, guarded: bool) -> EnvSetting:
        text, start, end = word
        found = _ASSIGNMENT.match(text)
        assert found is not None
        row, col = _position(line, start)
        end_row, end_col = _position(line, max(start, end - 1))
        width = end_col - col + 1 if end_row == row else len(text)
        value = substitute(found.group(2), self.known)
        return EnvSetting(found.group(1), value, row, col, width, guarded)

    def _set(self, setting: EnvSetting, exported: bool) -> None:
        if not setting.guarded:
            self.known[setting.name] = setting.value
        if exported:
            self.script.settings.append(setting)
            self.shell_vars.pop(setting.name, None)
        else:
            self.shell_vars[setting.name] = setting


def _position(line: _Line, offset: int) -> tuple[int, int]:
    if 0 <= offset < len(line.positions):
        return line.positions[offset]
    return line.positions[-1] if line.positions else (0, 1)


def _python_program(words: list[str]) -> str | None:
    """The script or module a command runs with Python (directly or through a launcher such as
    `mpirun`, `horovodrun` or `launch.py`); None for any other command."""
    if not words:
        return None
    program = posixpath.basename(words[0])
    if re.fullmatch(r"python[0-9.]*", program):
        for j, word in enumerate(words[1:], start=1):
            if word == "-m" and j + 1 < len(words):
                return words[j + 1]
            if word == "-c":
                return None
            if not word.startswith("-"):
                return word
        return None
    if program.endswith(".py"):
        return words[0]
    for word in words[1:]:
        if word.endswith(".py"):
            return word
    return None
