"""A reader of shell launch scripts: which commands a script runs, with which environment.

The distributed rules need what a launch script (`run_dist.sh`) starts and the `DMLC_*` settings
each process gets: `export DMLC_PS_ROOT_PORT=9000`, `DMLC_ROLE=worker python train.py &`,
`env DMLC_ROLE=server python train.py`, `docker run -e DMLC_ROLE=worker image`. This reads a
script the way `sh` splits it — words, quotes, `$VAR`/`${VAR:-default}` expansion, line
continuations, comments, here-documents, redirections, `&`, `;`, `&&`, `|`, `wait` — and keeps,
for every simple command, its words and the variables it runs with.

Whatever a shell would only know at run time is *unknown* (None), never guessed: command
substitutions, positional parameters, variables the script does not assign (the caller's),
values assigned inside `if`/`case`/loops once the construct is left, and every variable after
`source`/`eval`. A command inside a loop, a function or a branch says so (`repeat`,
`conditional`), so that counts of launched processes are only taken where they are certain.
Nothing here knows about MXNet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
#: Operators, longest first.
_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "(", ")", "\n")
#: Characters a word reads as themselves, up to a blank, a quote, an expansion, an escape,
#: an operator (`&|;()` each start one) or a redirection (`<`, `>`).
_LITERAL_RUN = re.compile(r"[^ \t\n\\'\"$`&|;()<>]+")
_REDIRECT = re.compile(r"\d*(?:&>>|&>|>>|>&|<&|<<<|<<-|<<|<>|>\||>|<)")
_RESERVED = frozenset(
    {"if", "then", "elif", "else", "fi", "for", "while", "until", "do", "done", "case", "esac"}
)
#: Words that run the rest of the command line as the program (`nohup python train.py`).
_WRAPPERS = frozenset({"nohup", "exec", "time", "command", "builtin", "setsid", "stdbuf"})
#: Commands whose argument assignments define variables (`export A=1 B=2`).
_DECLARATIONS = frozenset({"export", "declare", "typeset", "local", "readonly"})
#: Commands after which any variable may hold anything.
_OPAQUE = frozenset({"source", ".", "eval", "set"})


@dataclass(frozen=True)
class Word:
    """One shell word: its text as written, its expanded value (None when it depends on
    something only known at run time), and where it starts (1-based)."""

    raw: str
    value: str | None
    line: int
    column: int
    #: Written without any quote or expansion (a reserved word can only be such a word).
    plain: bool = False


@dataclass(frozen=True)
class Assignment:
    """`NAME=value` (in `export`, before a command, or alone), where its name starts."""

    name: str
    value: str | None
    line: int
    column: int
    exported: bool


@dataclass
class Command:
    """One simple command: the program and its arguments, and what it runs with."""

    words: list[Word]
    #: `NAME=value` words before the program (and `env NAME=value`): this command's only.
    inline: list[Assignment]
    #: Exported variables in effect (a value of None is unknown), inline ones included.
    env: dict[str, Assignment | None]
    line: int
    #: The list the command is in ends with `&`: the script goes on while it runs.
    background: bool = False
    #: How many times the command runs: 1, the length of a literal `for` list, None unknown
    #: (a `while` loop, a function body, a loop over a computed list).
    repeat: int | None = 1
    #: Inside `if`/`case`, or after `||`: it may not run at all.
    conditional: bool = False
    #: Inside a function definition: it runs when (and as often as) the function is called.
    in_function: bool = False
    #: Variables the script never assigned may be set by the caller (always), or by a file
    #: it sourced (`opaque`: then even assigned ones may have changed).
    opaque: bool = False

    @property
    def program(self) -> str | None:
        return self.words[0].value if self.words else None

    def setting(self, name: str) -> tuple[bool, Assignment | None]:
        """(set, assignment): whether the command's environment holds `name` as far as the
        script shows, and the assignment giving its value (None: set to an unknown value)."""
        if name in self.env:
            return True, self.env[name]
        return False, None


@dataclass
class Script:
    commands: list[Command] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)


# --- tokens ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Token:
    kind: str  # "word" | "op"
    text: str
    line: int
    column: int
    #: For words: the parts, each ("lit", text) or ("var", name, default, has_default) or
    #: ("unknown",).
    parts: tuple[tuple[object, ...], ...] = ()
    plain: bool = False


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text.replace("\r\n", "\n").replace("\r", "\n")
        self.i = 0
        self.line = 1
        self.col = 1
        self.heredocs: list[tuple[str, bool]] = []

    def _advance(self, n: int = 1) -> None:
        for _ in range(n):
            if self.i >= len(self.text):
                return
            if self.text[self.i] == "\n":
                self.line += 1
                self.col = 1
            else:
                self.col += 1
            self.i += 1

    def _skip_in_line(self, n: int) -> None:
        """`_advance(n)` over characters that are not line breaks."""
        self.i += n
        self.col += n

    def _peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.text[j] if j < len(self.text) else ""

    def tokens(self) -> list[_Token]:
        out: list[_Token] = []
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            if ch in " \t":
                self._advance()
                continue
            if ch == "\\" and self._peek(1) == "\n":
                self._advance(2)
                continue
            if ch == "#":
                end = text.find("\n", self.i)
                self._skip_in_line((len(text) if end < 0 else end) - self.i)
                continue
            if ch == "\n":
                out.append(_Token("op", "\n", self.line, self.col))
                self._advance()
                self._skip_heredocs()
                continue
            redirect = _REDIRECT.match(text, self.i)
            if redirect is not None:
                op = redirect.group(0)
                self._advance(len(op))
                while self._peek() in (" ", "\t"):
                    self._advance()
                if op.endswith("&") and (self._peek().isdigit() or self._peek() == "-"):
                    self._advance()  # `2>&1`, `>&-`: a descriptor, not a word
                    continue
                target = self._word()
                if op.lstrip("0123456789") in ("<<", "<<-") and target is not None:
                    delimiter = "".join(str(p[1]) for p in target.parts if p[0] == "lit")
                    self.heredocs.append((delimiter, op.endswith("-")))
                continue
            operator = next((o for o in _OPERATORS if text.startswith(o, self.i)), None)
            if operator is not None:
                out.append(_Token("op", operator, self.line, self.col))
                self._advance(len(operator))
                continue
            word = self._word()
            if word is not None:
                out.append(word)
        return out

    def _skip_heredocs(self) -> None:
        text = self.text
        while self.heredocs:
            delimiter, strip_tabs = self.heredocs.pop(0)
            while self.i < len(text):
                end = text.find("\n", self.i)
                end = len(text) if end < 0 else end
                body = text[self.i : end]
                self._advance(end - self.i + 1)
                if (body.lstrip("\t") if strip_tabs else body) == delimiter:
                    break

    def _word(self) -> _Token | None:
        text = self.text
        line, col, start = self.line, self.col, self.i
        parts: list[tuple[object, ...]] = []
        plain = True
        while self.i < len(text):
            ch = text[self.i]
            if ch in " \t\n" or any(text.startswith(o, self.i) for o in _OPERATORS if o != "\n"):
                break
            if ch in "<>" and _REDIRECT.match(text, self.i):
                break
            if ch == "\\":
                if self._peek(1) == "\n":
                    self._advance(2)
                    continue
                parts.append(("lit", self._peek(1)))
                self._advance(2)
                plain = False
            elif ch == "'":
                self._advance()
                end = text.find("'", self.i)
                end = len(text) if end < 0 else end
                parts.append(("lit", text[self.i : end]))
                self._advance(end - self.i + 1)
                plain = False
            elif ch == '"':
                self._advance()
                self._double_quoted(parts)
                plain = False
            elif ch == "$" or ch == "`":
                self._expansion(parts)
                plain = False
            else:
                # A run of characters that start nothing (no quote, expansion, operator,
                # redirection or blank), read at once: one literal part.
                run = _LITERAL_RUN.match(text, self.i)
                n = run.end() - self.i if run is not None else 1
                parts.append(("lit", text[self.i : self.i + n]))
                self._skip_in_line(n)
        if self.i == start:
            self._advance()  # a character no rule consumes: never loop on it
            return None
        return _Token("word", text[start : self.i], line, col, tuple(parts), plain)

    def _double_quoted(self, parts: list[tuple[object, ...]]) -> None:
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            if ch == '"':
                self._advance()
                return
            if ch == "\\" and self._peek(1) in ('"', "\\", "$", "`", "\n"):
                if self._peek(1) != "\n":
                    parts.append(("lit", self._peek(1)))
                self._advance(2)
            elif ch in "$`":
                self._expansion(parts)
            else:
                parts.append(("lit", ch))
                self._advance()

    def _expansion(self, parts: list[tuple[object, ...]]) -> None:
        text = self.text
        if text[self.i] == "`":
            self._advance()
            while self.i < len(text) and text[self.i] != "`":
                self._advance(2 if text[self.i] == "\\" else 1)
            self._advance()
            parts.append(("unknown",))
            return
        nxt = self._peek(1)
        if nxt == "(":
            self._advance(1)
            self._balanced("(", ")")
            parts.append(("unknown",))
        elif nxt == "{":
            self._advance(2)
            end = self._matching_brace()
            body = text[self.i : end]
            self._advance(end - self.i + 1)
            parts.append(_braced(body))
        else:
            m = _NAME.match(text, self.i + 1)
            if m is not None:
                parts.append(("var", m.group(0), None, False))
                self._advance(1 + len(m.group(0)))
            elif nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
                parts.append(("unknown",))
                self._advance(2)
            else:
                parts.append(("lit", "$"))
                self._advance()

    def _balanced(self, opening: str, closing: str) -> None:
        depth = 0
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            if ch == "\\":
                self._advance(2)
                continue
            if ch in "'\"":
                end = text.find(ch, self.i + 1)
                self._advance((len(text) if end < 0 else end) - self.i + 1)
                continue
            if ch == opening:
                depth += 1
            elif ch == closing:
                depth -= 1
                if depth == 0:
                    self._advance()
                    return
            self._advance()

    def _matching_brace(self) -> int:
        depth, j, text = 1, self.i, self.text
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    return j
            j += 1
        return len(text) - 1


def _braced(body: str) -> tuple[object, ...]:
    """`${NAME}`, `${NAME:-default}`, `${NAME-default}`; anything else is unknown."""
    m = _NAME.match(body)
    if m is None:
        return ("unknown",)
    rest = body[m.end() :]
    if not rest:
        return ("var", m.group(0), None, False)
    for op in (":-", "-", ":=", "="):
        if rest.startswith(op):
            default = rest[len(op) :]
            if "$" in default or "`" in default:
                return ("unknown",)
            return ("var", m.group(0), default.strip("'\""), True)
    return ("unknown",)


# --- commands -------------------------------------------------------------------------------


@dataclass
class _Var:
    value: str | None
    exported: bool
    assignment: Assignment | None


@dataclass
class _Frame:
    kind: str  # "if" | "case" | "for" | "while" | "function" | "subshell" | "group"
    repeat: int | None = 1
    #: Variables as they were when the construct was entered (restored or made unknown).
    saved: dict[str, _Var] | None = None
    assigned: set[str] = field(default_factory=set)
    #: A `case` waiting for its next pattern (`worker)`).
    pattern: bool = False


class _Reader:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.vars: dict[str, _Var] = {}
        self.opaque = False
        self.stack: list[_Frame] = []
        self.script = Script()
        #: Commands of the list being read (a `&` sends all of them to the background).
        self.current: list[Command] = []
        self.after_or = False

    # -- values --------------------------------------------------------------------------

    def expand(self, token: _Token) -> str | None:
        out: list[str] = []
        for part in token.parts:
            if part[0] == "lit":
                out.append(str(part[1]))
            elif part[0] == "var":
                name, default, has_default = str(part[1]), part[2], bool(part[3])
                var = self.vars.get(name)
                if var is not None:
                    if var.value is None:
                        return None
                    out.append(var.value)
                elif has_default and not self.opaque:
                    out.append(str(default))  # the script's default when the caller sets none
                else:
                    return None
            else:
                return None
        return "".join(out)

    def word(self, token: _Token) -> Word:
        return Word(token.text, self.expand(token), token.line, token.column, token.plain)

    def assign(self, name: str, value: str | None, where: _Token, exported: bool) -> Assignment:
        previous = self.vars.get(name)
        exported = exported or (previous is not None and previous.exported)
        assignment = Assignment(name, value, where.line, where.column, exported)
        self.vars[name] = _Var(value, exported, assignment)
        for frame in self.stack:
            frame.assigned.add(name)
        self.script.assignments.append(assignment)
        return assignment

    def _assignment_token(self, token: _Token) -> tuple[str, str | None] | None:
        m = _ASSIGNMENT.match(token.text)
        if m is None or token.kind != "word":
            return None
        name = m.group(1)
        value_text = token.text[m.end() :]
        sub = _Lexer(value_text)
        value_token = sub._word() if value_text else None
        if value_token is None:
            value: str | None = ""
        else:
            value = self.expand(value_token)
            if sub.i < len(value_text):
                value = None
        if m.group(2) and value is not None:  # NAME+=value
            var = self.vars.get(name)
            value = None if var is None or var.value is None else var.value + value
        return name, value

    # -- structure -----------------------------------------------------------------------

    def _enter(self, kind: str, repeat: int | None = 1) -> None:
        saved = {k: _Var(v.value, v.exported, v.assignment) for k, v in self.vars.items()}
        self.stack.append(_Frame(kind, repeat, saved))

    def _leave(self, kinds: tuple[str, ...]) -> None:
        while self.stack:
            frame = self.stack.pop()
            saved = frame.saved or {}
            if frame.kind == "subshell":
                self.vars = saved  # a subshell's variables end with it
            else:
                for name in frame.assigned:
                    # Assigned on some paths (or runs, or calls) only: unknown after it.
                    var = self.vars.get(name) or saved.get(name)
                    exported = var.exported if var is not None else False
                    self.vars[name] = _Var(None, exported, var.assignment if var else None)
            if frame.kind in kinds:
                return

    def _next_branch(self, kind: str) -> None:
        """`else`, `elif`, the next `case` arm: variables as they were before the first
        branch (what the earlier branches assigned is unknown after the construct)."""
        frame = next((f for f in reversed(self.stack) if f.kind == kind), None)
        if frame is None:
            return
        saved = frame.saved or {}
        for name in frame.assigned:
            before = saved.get(name)
            if before is None:
                self.vars.pop(name, None)
            else:
                self.vars[name] = _Var(before.value, before.exported, before.assignment)

    def _repeat(self) -> int | None:
        count: int | None = 1
        for frame in self.stack:
            if frame.repeat is None or count is None:
                return None
            count *= frame.repeat
        return count

    def _conditional(self) -> bool:
        return self.after_or or any(f.kind in ("if", "case") for f in self.stack)

    def _in_function(self) -> bool:
        return any(f.kind == "function" for f in self.stack)

    # -- reading -------------------------------------------------------------------------

    def read(self) -> Script:
        tokens = self.tokens
        while self.pos < len(tokens):
            token = tokens[self.pos]
            if token.kind == "op":
                self._operator(token)
                self.pos += 1
                continue
            case = self.stack[-1] if self.stack and self.stack[-1].kind == "case" else None
            if case is not None and case.pattern:
                self._case_pattern()
                continue
            if self._structure(token):
                continue
            self._simple_command()
        self._end_list(background=False)
        return self.script

    def _operator(self, token: _Token) -> None:
        op = token.text
        if op == "&":
            self._end_list(background=True)
        elif op in (";", "\n"):
            self._end_list(background=False)
        elif op == ";;":
            self._end_list(background=False)
            if self.stack and self.stack[-1].kind == "case":
                self._next_branch("case")
                self.stack[-1].pattern = True
        elif op == "||":
            self.after_or = True
        elif op == "(":
            self._enter("subshell")
        elif op == ")":
            self._end_list(background=False)
            if any(f.kind == "subshell" for f in self.stack):
                self._leave(("subshell",))

    def _end_list(self, background: bool) -> None:
        if background:
            for command in self.current:
                command.background = True
        self.current = []
        self.after_or = False

    def _case_pattern(self) -> None:
        """Skip a `case` pattern up to its `)`, or the `esac` that ends the case."""
        tokens = self.tokens
        while self.pos < len(tokens):
            token = tokens[self.pos]
            self.pos += 1
            if token.kind == "word" and token.plain and token.text == "esac":
                self._leave(("case",))
                return
            if token.kind == "op" and token.text == ")":
                self.stack[-1].pattern = False
                return

    def _structure(self, token: _Token) -> bool:
        """Reserved words, function definitions and `{ }` groups at the start of a command."""
        text = token.text if token.plain else ""
        tokens = self.tokens
        nxt = tokens[self.pos + 1] if self.pos + 1 < len(tokens) else None
        if text in ("if", "while", "until"):
            self._enter("if" if text == "if" else "while", 1 if text == "if" else None)
            self.pos += 1
            return True
        if text in ("then", "do", "!"):
            self.pos += 1
            return True
        if text in ("else", "elif"):
            self._next_branch("if")
            self.pos += 1
            return True
        if text in ("fi", "done", "esac"):
            kinds = {"fi": ("if",), "done": ("for", "while"), "esac": ("case",)}[text]
            if any(f.kind in kinds for f in self.stack):
                self._leave(kinds)
            self.pos += 1
            return True
        if text == "for":
            self._for()
            return True
        if text == "case":
            self.pos += 1
            while self.pos < len(tokens) and not (
                tokens[self.pos].kind == "word" and tokens[self.pos].text == "in"
            ):
                self.pos += 1
            self.pos += 1
            self._enter("case")
            self.stack[-1].pattern = True
            return True
        if text == "function" and nxt is not None and nxt.kind == "word":
            self.pos += 2
            self._function_body()
            return True
        if (
            token.kind == "word"
            and _NAME.fullmatch(token.text)
            and nxt is not None
            and nxt.kind == "op"
            and nxt.text == "("
            and self.pos + 2 < len(tokens)
            and tokens[self.pos + 2].text == ")"
        ):
            self.pos += 3
            self._function_body()
            return True
        if text == "{":
            self._enter("group")
            self.pos += 1
            return True
        if text == "}":
            if any(f.kind in ("group", "function") for f in self.stack):
                self._leave(("group", "function"))
            self.pos += 1
            return True
        return False

    def _function_body(self) -> None:
        tokens = self.tokens
        while self.pos < len(tokens) and tokens[self.pos].kind == "op":
            if tokens[self.pos].text not in ("\n", "(", ")"):
                break
            self.pos += 1
        if self.pos < len(tokens) and tokens[self.pos].text in ("{", "("):
            self.pos += 1
        self._enter("function", None)

    def _for(self) -> None:
        """`for NAME in WORDS; do`: a literal list runs the body once per word."""
        tokens = self.tokens
        self.pos += 1
        name = tokens[self.pos].text if self.pos < len(tokens) else ""
        self.pos += 1
        words: list[_Token] = []
        literal = False
        if (
            self.pos < len(tokens)
            and tokens[self.pos].kind == "word"
            and tokens[self.pos].text == "in"
        ):
            literal = True
            self.pos += 1
            while self.pos < len(tokens) and tokens[self.pos].kind == "word":
                words.append(tokens[self.pos])
                self.pos += 1
        repeat = (
            len(words)
            if literal and all(w.plain and not any(c in w.text for c in "*?[{") for w in words)
            else None
        )
        self._enter("for", repeat)
        if _NAME.fullmatch(name):
            self.vars[name] = _Var(None, False, None)
            self.stack[-1].assigned.add(name)

    def _simple_command(self) -> None:
        tokens = self.tokens
        start = self.pos
        words: list[_Token] = []
        while self.pos < len(tokens) and tokens[self.pos].kind == "word":
            words.append(tokens[self.pos])
            self.pos += 1
        if not words:
            self.pos = max(self.pos, start + 1)
            return
        inline: list[Assignment] = []
        i = 0
        while i < len(words):
            found = self._assignment_token(words[i])
            if found is None:
                break
            name, value = found
            inline.append(Assignment(name, value, words[i].line, words[i].column, True))
            i += 1
        rest = words[i:]
        if not rest:  # `A=1 B=2`: shell variables
            for a in inline:
                self.assign(a.name, a.value, _at(a), exported=False)
            return
        head = rest[0].text if rest[0].plain else None
        if head in _DECLARATIONS:
            self._declaration(rest, exported=head == "export")
            return
        if head == "unset":
            for w in rest[1:]:
                self.vars.pop(w.text, None)
            return
        if head in _OPAQUE:
            if head != "set" or any(w.text.startswith("-") and "a" in w.text for w in rest[1:]):
                self._make_opaque()
            return
        rest, more = self._unwrap(rest)
        inline.extend(more)
        env: dict[str, Assignment | None] = {}
        for name, var in self.vars.items():
            if var.exported:
                env[name] = var.assignment if var.value is not None else None
        for a in inline:
            env[a.name] = a if a.value is not None else None
        command = Command(
            words=[self.word(t) for t in rest],
            inline=inline,
            env=env,
            line=rest[0].line if rest else words[0].line,
            repeat=self._repeat(),
            conditional=self._conditional(),
            in_function=self._in_function(),
            opaque=self.opaque,
        )
        self.script.commands.append(command)
        self.current.append(command)

    def _unwrap(self, words: list[_Token]) -> tuple[list[_Token], list[Assignment]]:
        """`nohup`, `exec`, `time`, `env A=1 ...`: the program they run, and `env`'s
        assignments."""
        inline: list[Assignment] = []
        while words:
            head = words[0].text if words[0].plain else None
            if head in _WRAPPERS:
                words = words[1:]
                continue
            if head == "env":
                j = 1
                while j < len(words) and words[j].text.startswith("-"):
                    if words[j].text in ("-i", "--ignore-environment", "-"):
                        self._make_opaque()
                    j += 1
                while j < len(words):
                    found = self._assignment_token(words[j])
                    if found is None:
                        break
                    inline.append(
                        Assignment(found[0], found[1], words[j].line, words[j].column, True)
                    )
                    j += 1
                words = words[j:]
                continue
            break
        return words, inline

    def _declaration(self, words: list[_Token], exported: bool) -> None:
        for w in words[1:]:
            if w.text.startswith("-"):
                exported = exported or "x" in w.text
                continue
            found = self._assignment_token(w)
            if found is not None:
                self.assign(found[0], found[1], w, exported)
            elif exported and _NAME.fullmatch(w.text):
                var = self.vars.get(w.text)
                if var is not None:
                    var.exported = True

    def _make_opaque(self) -> None:
        self.opaque = True
        for name, var in list(self.vars.items()):
            self.vars[name] = _Var(None, var.exported, var.assignment)


def _at(a: Assignment) -> _Token:
    return _Token("word", a.name, a.line, a.column)


def parse_shell(text: str) -> Script:
    """The commands of a shell script, each with its words and environment."""
    return _Reader(_Lexer(text).tokens()).read()


def parse_command_line(text: str, line: int = 1) -> list[Word]:
    """The words of one command line (a Dockerfile `CMD`, a string passed to a shell), with
    the rows they start on counted from `line`."""
    script = parse_shell(text)
    words: list[Word] = []
    for command in script.commands:
        words.extend(
            Word(w.raw, w.value, w.line + line - 1, w.column, w.plain) for w in command.words
        )
    return words
