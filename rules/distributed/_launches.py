"""What a project launches for a parameter-server job, read from its launch scripts, Dockerfiles
and Python files: each *process* with its role and `DMLC_*` settings, and each *launcher*
(MXNet's `tools/launch.py`) with the counts it starts.

A shell script is read with `mxlint.shell` (every command with the variables it runs with); a
command is a process of a job when it runs a program (`python train.py`, `./train`, `$COMMAND`,
`bash worker.sh`, `docker run ... image`) with `DMLC_ROLE` in its environment. A Dockerfile
stage that sets `ENV DMLC_ROLE` is a process (the image's command); a Python file that writes
`os.environ["DMLC_ROLE"]` is one too. A script's processes form *phases*: what runs together,
until a `wait` or a process run in the foreground.
"""

from __future__ import annotations

import ast
import posixpath
import re
from dataclasses import dataclass, field

from mxlint.rules.distributed._dmlc import ROLE, ROLES, SETTINGS, URI
from mxlint.shell import Assignment, Command, Word, parse_shell

_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)*)?$")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
#: MXNet's launcher (`tools/launch.py`) and dmlc-core's (`dmlc-submit`).
_LAUNCHERS = frozenset({"launch.py", "dmlc-submit"})
#: Programs that start processes elsewhere: what they start cannot be counted here.
_REMOTE = frozenset(
    {"ssh", "pdsh", "srun", "mpirun", "mpiexec", "horovodrun", "kubectl", "parallel", "xargs"}
)
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


@dataclass(frozen=True)
class Setting:
    """Where a process gets one `DMLC_*` value (None: a value only known at run time)."""

    name: str
    value: str | None
    path: str
    line: int
    column: int
    #: Given to this command only (`DMLC_ROLE=worker python ...`, `docker run -e`), not
    #: exported for the commands after it.
    inline: bool = False
    #: Characters a finding underlines (None: the `NAME=value` text).
    length: int | None = None

    def span(self) -> int:
        return self.length or len(self.name) + 1 + len(self.value or "")

    def normalized(self) -> str | None:
        """The value as MXNet compares it: one spelling for the loopback host, numbers as
        numbers."""
        if self.value is None:
            return None
        value = self.value.strip()
        if self.name == URI:
            return "loopback" if value.lower() in _LOOPBACK else value.lower()
        if value.isdigit():
            return str(int(value))
        return value


@dataclass
class Process:
    """One process (or a command starting `count` identical ones) of a job."""

    path: str
    line: int
    column: int
    #: "scheduler", "server", "worker"; None when DMLC_ROLE is not set by what launches it.
    role: str | None
    #: The DMLC_* settings the launch gives it, by name (an absent name is not set by the
    #: launch: the process inherits the caller's environment, if any).
    settings: dict[str, Setting] = field(default_factory=dict)
    #: The program it runs, as far as it identifies the job ("python train.py").
    program: str | None = None
    source: str = "shell"  # "shell" | "docker" | "dockerfile" | "python"
    count: int | None = 1
    #: It may not run (a branch), or runs as often as a function is called.
    certain: bool = True
    background: bool = True
    #: Variables the launch does not set may come from anywhere (after `source`, `env -i`).
    opaque: bool = False
    phase: int = 0
    #: The process the launching script starts with DMLC_ROLE unset (`role` None) is
    #: recorded only when the same program is also launched with a role.
    role_setting: Setting | None = None

    def value(self, name: str) -> str | None:
        setting = self.settings.get(name)
        return setting.normalized() if setting is not None else None


@dataclass
class Launcher:
    """`launch.py -n 2 -s 1 ...`: the launcher sets DMLC_* itself for every process."""

    path: str
    line: int
    workers: int | None
    servers: int | None
    #: DMLC_* settings exported by the script where the launcher runs.
    exported: dict[str, Setting] = field(default_factory=dict)


@dataclass
class ScriptCall:
    """`python train.py --opt v` in a distributed launch: the script and the words after it."""

    path: str
    script: Word
    args: list[Word]
    #: What makes it a distributed launch: "role", "launch.py", "kvstore", "mpirun"...
    how: str


@dataclass
class LaunchFile:
    """What one file launches."""

    path: str
    processes: list[Process] = field(default_factory=list)
    launchers: list[Launcher] = field(default_factory=list)
    scripts: list[ScriptCall] = field(default_factory=list)
    #: Phases of a script in which something is started that cannot be counted (a remote
    #: command, a program the script cannot name that gets DMLC settings).
    uncounted_phases: set[int] = field(default_factory=set)


# --- shell scripts --------------------------------------------------------------------------


def _basename(word: Word) -> str | None:
    return posixpath.basename(word.value) if word.value is not None else None


def _program(words: list[Word]) -> tuple[str, str | None] | None:
    """(kind, identity) of what a command runs: "job" for a program that may be a process of
    the job, "launcher", "docker", "remote"; None for a utility (`echo`, `sleep`, `cd`...)."""
    if not words:
        return None
    head = words[0]
    name = _basename(head)
    if head.value is None:
        return "job", None  # `$COMMAND`: some program, which the script does not name
    if name in _LAUNCHERS:
        return "launcher", name
    if name in _REMOTE:
        return "remote", name
    if name == "docker" and len(words) > 1 and words[1].value == "run":
        return "docker", None
    if name is not None and _PYTHON.match(name):
        rest = [w.value for w in words[1:]]
        for i, arg in enumerate(rest):
            if arg is None:
                return "job", None
            if arg == "-m" and i + 1 < len(rest):
                module = rest[i + 1]
                return "job", f"python -m {module}" if module else None
            if arg == "-c":
                return "job", "python -c"
            if arg.startswith("-"):
                continue
            if posixpath.basename(arg) in _LAUNCHERS:
                return "launcher", posixpath.basename(arg)
            return "job", f"python {posixpath.normpath(arg)}"
        return None  # an interactive interpreter
    if name in _SHELLS:
        rest = [w.value for w in words[1:]]
        if "-c" in rest:
            return "job", None
        script = next((a for a in rest if a is None or not a.startswith("-")), None)
        return ("job", f"{name} {script}") if script else None
    if head.value.endswith(".py") or "/" in head.value:
        return "job", posixpath.normpath(head.value)
    return None


#: launch.py's own options that take a value (the launched command follows them).
_LAUNCH_VALUES = frozenset(
    {
        "-n",
        "--num-workers",
        "-s",
        "--num-servers",
        "-H",
        "--hostfile",
        "--sync-dst-dir",
        "--launcher",
        "--env-server",
        "--env-worker",
        "--env",
    }
)
#: Interpreter options that take a value (`python -W ignore train.py`).
_PYTHON_VALUES = frozenset({"-W", "-X", "-Q"})
_DIST_VALUE = re.compile(r"^dist_")


def _python_script(words: list[Word]) -> tuple[Word, list[Word]] | None:
    """(script, its arguments) of `python [options] script.py args...`."""
    if not words or not _PYTHON.match(_basename(words[0]) or ""):
        return None
    i = 1
    while i < len(words):
        value = words[i].value
        if value is None:
            return None
        if value in _PYTHON_VALUES:
            i += 2
            continue
        if value.startswith("-"):
            if value in ("-m", "-c"):
                return None
            i += 1
            continue
        return (words[i], words[i + 1 :]) if value.endswith(".py") else None
    return None


def _launched_command(words: list[Word]) -> list[Word]:
    """The command after `launch.py` and its own options."""
    start = next((i for i, w in enumerate(words) if _basename(w) in _LAUNCHERS), len(words))
    i = start + 1
    while i < len(words):
        value = words[i].value or ""
        if value in _LAUNCH_VALUES:
            i += 2
        elif value.startswith("-"):
            i += 1
        else:
            break
    return words[i:]


def _after_remote(words: list[Word]) -> list[Word]:
    """The command `mpirun -np 4 ... python train.py` (or horovodrun, srun) runs."""
    for i, w in enumerate(words[1:], start=1):
        if _PYTHON.match(_basename(w) or ""):
            return words[i:]
    return []


def _dist_kvstore_option(args: list[Word]) -> bool:
    """`--kvstore dist_sync`, `--kv-store=dist_async`: the script is asked for a job."""
    for i, w in enumerate(args):
        value = w.value or ""
        name, _, inline = value.partition("=")
        if name.lstrip("-").replace("-", "_") in ("kvstore", "kv_store"):
            given = inline or (args[i + 1].value if i + 1 < len(args) else None) or ""
            if _DIST_VALUE.match(given):
                return True
    return False


def _script_call(found: LaunchFile, command: Command, what: str, role: bool) -> None:
    words = command.words
    if what == "launcher":
        words, how = _launched_command(words), "launch.py"
    elif what == "remote":
        words, how = _after_remote(words), _basename(words[0]) or "remote"
    else:
        how = "role" if role else "kvstore"
    called = _python_script(words)
    if called is None:
        return
    script, args = called
    if how == "kvstore" and not _dist_kvstore_option(args):
        return
    found.scripts.append(ScriptCall(found.path, script, args, how))


def _setting(a: Assignment | None, name: str, path: str, inline: bool) -> Setting:
    if a is None:  # exported with a value only known at run time
        return Setting(name, None, path, 0, 0, inline)
    return Setting(name, a.value, path, a.line, a.column, inline)


def _dmlc(command: Command, path: str) -> dict[str, Setting]:
    inline = {a.name for a in command.inline}
    out: dict[str, Setting] = {}
    for name, a in command.env.items():
        if name.startswith("DMLC_"):
            out[name] = _setting(a, name, path, name in inline)
    return out


def _launcher(command: Command, path: str) -> Launcher:
    values = [w.value for w in command.words]

    def option(*names: str) -> int | None:
        for i, v in enumerate(values):
            if v is None:
                continue
            for n in names:
                if v == n and i + 1 < len(values):
                    nxt = values[i + 1]
                    return int(nxt) if nxt is not None and nxt.isdigit() else None
                if n.startswith("--") and v.startswith(n + "="):
                    rest = v[len(n) + 1 :]
                    return int(rest) if rest.isdigit() else None
        return None

    launched = next(
        (i for i, w in enumerate(command.words) if _basename(w) in _LAUNCHERS), len(values)
    )
    values = values[launched:]
    workers = option("-n", "--num-workers")
    servers = option("-s", "--num-servers")
    if servers is None and _basename(command.words[launched]) == "launch.py":
        has_servers = any(
            v in ("-s", "--num-servers") or (v or "").startswith("--num-servers=") for v in values
        )
        servers = None if has_servers else workers  # launch.py: servers default to workers
    exported = {
        name: _setting(a, name, path, False)
        for name, a in command.env.items()
        if name.startswith("DMLC_") and name not in {x.name for x in command.inline}
    }
    return Launcher(path, command.line, workers, servers, exported)


def _detached(command: Command) -> bool:
    """`docker run -d`/`--detach`: the container runs on while the script goes on."""
    for w in command.words[2:]:
        value = w.value or ""
        if value in ("-d", "--detach") or re.fullmatch(r"-[a-zA-Z]*d[a-zA-Z]*", value):
            return True
        if value and not value.startswith("-") and "=" not in value:
            return False  # the image: what follows is its command
    return False


def _docker_env(command: Command, path: str) -> tuple[dict[str, Setting], bool]:
    """The DMLC_* settings a `docker run` passes with `-e NAME=value`/`--env`; whether it passes
    an env file (then any setting may come from it)."""
    out: dict[str, Setting] = {}
    opaque = False
    words = command.words
    i = 2
    while i < len(words):
        value = words[i].value
        if value in ("-e", "--env") and i + 1 < len(words):
            target = words[i + 1]
            i += 2
        elif value is not None and value.startswith("--env="):
            target = Word(words[i].raw, value[len("--env=") :], words[i].line, words[i].column)
            i += 1
        elif value is not None and value.startswith("--env-file"):
            opaque = True
            i += 1 if "=" in value else 2
            continue
        elif value is not None and value.startswith("-"):
            i += 1
            continue
        else:
            break  # the image: what follows is its command
        text = target.value
        if text is None:
            opaque = True
            continue
        name, sep, val = text.partition("=")
        if not name.startswith("DMLC_"):
            continue
        if not sep:  # `-e NAME`: the value of the script's own variable
            exported = command.env.get(name)
            out[name] = (
                _setting(exported, name, path, True)
                if name in command.env
                else Setting(name, None, path, target.line, target.column, True)
            )
        else:
            out[name] = Setting(name, val, path, target.line, target.column, True)
    return out, opaque


def read_shell(path: str, text: str) -> LaunchFile:
    """The processes and launchers of a shell script, in phases."""
    script = parse_shell(text)
    found = LaunchFile(path)
    phase = 0
    roleless: list[tuple[Command, str | None]] = []
    for command in script.commands:
        if command.program == "wait" and not command.conditional:
            phase += 1
            continue
        kind = _program(command.words)
        if kind is None:
            continue
        what, identity = kind
        _script_call(found, command, what, ROLE in command.env)
        if what == "launcher":
            found.launchers.append(_launcher(command, path))
            if not command.background:
                phase += 1
            continue
        if what == "remote":
            found.uncounted_phases.add(phase)
            continue
        opaque = command.opaque
        if what == "docker":
            settings, env_file = _docker_env(command, path)
            opaque = True  # the image's own ENV may set what `-e` does not
            del env_file
        else:
            settings = _dmlc(command, path)
        role_setting = settings.pop(ROLE, None)
        if role_setting is None and what != "docker":
            if settings:
                roleless.append((command, identity))
            continue
        if role_setting is None:
            continue
        role = role_setting.value if role_setting.value in ROLES else None
        if role is None:
            found.uncounted_phases.add(phase)
            if role_setting.value is not None:
                continue  # a value MXNet does not know: not a process of the job
        first = command.words[0]
        background = command.background or (what == "docker" and _detached(command))
        found.processes.append(
            Process(
                path=path,
                line=first.line,
                column=first.column,
                role=role,
                settings=settings,
                program=identity,
                source="docker" if what == "docker" else "shell",
                count=command.repeat if not command.in_function else None,
                certain=not command.conditional and not command.in_function,
                background=background,
                opaque=opaque,
                phase=phase,
                role_setting=role_setting,
            )
        )
        if identity is None and what != "docker":
            found.uncounted_phases.add(phase)
        if not background and not command.in_function:
            phase += 1
    # A command that gets DMLC settings but no role: a process of the job that forgot its
    # role when the script launches the same program with one.
    with_role = {p.program for p in found.processes if p.program is not None}
    for command, identity in roleless:
        if identity is None or identity not in with_role or command.opaque:
            continue
        first = command.words[0]
        found.processes.append(
            Process(
                path=path,
                line=first.line,
                column=first.column,
                role=None,
                settings=_dmlc(command, path),
                program=identity,
                count=command.repeat if not command.in_function else None,
                certain=not command.conditional and not command.in_function,
                background=command.background,
                phase=_phase_of(found, command.line),
            )
        )
    return found


def _phase_of(found: LaunchFile, line: int) -> int:
    """The phase of the last process launched before `line` (0 before any)."""
    before = [p.phase for p in found.processes if p.line <= line and p.role is not None]
    return before[-1] if before else 0


# --- Dockerfiles ----------------------------------------------------------------------------


def read_dockerfile(path: str, text: str) -> LaunchFile:
    """A stage that sets `ENV DMLC_ROLE` is a process of the job: the image's command."""
    from mxlint.dockerfile import parse_dockerfile  # only runs that have a Dockerfile

    found = LaunchFile(path)
    stages = parse_dockerfile(text)
    for stage in stages[-1:]:  # the stage the image is built from
        role = stage.env.get(ROLE)
        if role is None:
            continue
        settings = {
            name: Setting(name, var.value, path, var.line, var.column)
            for name, var in stage.env.items()
            if name in SETTINGS
        }
        found.processes.append(
            Process(
                path=path,
                line=role.line,
                column=role.column,
                role=role.value if role.value in ROLES else None,
                settings=settings,
                source="dockerfile",
                count=None,
                opaque=True,  # `docker run -e` may set what the image does not
                role_setting=Setting(ROLE, role.value, path, role.line, role.column),
            )
        )
    return found


# --- Python files ---------------------------------------------------------------------------

#: `subprocess` functions that start a program; the first three return at once.
_STARTS = {"Popen": True, "run": False, "call": False, "check_call": False, "check_output": False}
_MXNET_CREATE = ("kv.create", "kvstore.create")


def _environ(node: ast.expr) -> bool:
    """`os.environ` (or `environ` imported from os)."""
    if isinstance(node, ast.Attribute) and node.attr == "environ":
        return isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and node.id == "environ"


def _literal(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int)):
        return str(node.value)
    return None


def _literals(node: ast.expr) -> list[str] | None:
    """The values of a list or tuple of string or number literals."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    values = [_literal(el) for el in node.elts]
    return None if any(v is None for v in values) else [str(v) for v in values]


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


Env = dict[str, Setting]


class _PythonLaunches:
    """Follows a Python file in order — module statements, the `__main__` block, and the
    bodies of its functions where the module calls them — keeping what `os.environ` and the
    environment dicts it builds hold, and starting a process at each `subprocess.Popen(...)`
    (with `env=` or the current `os.environ`) and for the file itself when it creates a
    kvstore (or ends) with `DMLC_ROLE` set."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.environ: Env = {}
        self.dicts: dict[str, Env] = {}
        self.functions: dict[str, ast.FunctionDef] = {}
        self.found = LaunchFile(path)
        self.phase = 0
        self.own: Process | None = None
        self._entered: set[str] = set()
        #: Loop variables of a loop over literals, while its body is followed for one of them.
        self.consts: dict[str, str] = {}

    def setting(self, name: str, value: ast.expr | None, at: ast.AST) -> Setting:
        literal = _literal(value)
        if literal is None and isinstance(value, ast.Name):
            literal = self.consts.get(value.id)
        line, column = getattr(at, "lineno", 0), getattr(at, "col_offset", -1) + 1
        end = getattr(value if isinstance(at, ast.keyword) else at, "end_col_offset", None)
        length = (
            end - column + 1
            if end is not None and getattr(at, "end_lineno", line) == line
            else None
        )
        return Setting(name, literal, self.path, line, column, length=length)

    # -- environment dicts ---------------------------------------------------------------

    def env_of(self, node: ast.expr | None) -> Env | None:
        """The DMLC_* entries of an environment expression: `os.environ`, `os.environ.copy()`,
        `dict(os.environ, K=v)`, `{**os.environ, "K": v}`, a name bound to one of those."""
        if node is None:
            return None
        if _environ(node):
            return dict(self.environ)
        if isinstance(node, ast.Name):
            found = self.dicts.get(node.id)
            return dict(found) if found is not None else None
        if not isinstance(node, ast.Call):
            return self._dict_literal(node)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "copy" and not node.args:
            return self.env_of(func.value)
        if isinstance(func, ast.Name) and func.id == "dict":
            base: Env | None = self.env_of(node.args[0]) if node.args else {}
            if base is None:
                return None
            for kw in node.keywords:
                if kw.arg is None:
                    return None
                if kw.arg.startswith("DMLC_"):
                    base[kw.arg] = self.setting(kw.arg, kw.value, kw)
            return base
        return None

    def _dict_literal(self, node: ast.expr) -> Env | None:
        if isinstance(node, ast.Dict):
            out: Env = {}
            for key, value in zip(node.keys, node.values):
                if key is None:  # **mapping
                    inner = self.env_of(value)
                    if inner is None:
                        return None
                    out.update(inner)
                    continue
                name = _literal(key)
                if name is None:
                    return None
                if name.startswith("DMLC_"):
                    out[name] = self.setting(name, value, key)
            return out
        return None

    def write(self, target: Env, name: str | None, value: ast.expr | None, at: ast.AST) -> None:
        if name is not None and name.startswith("DMLC_"):
            target[name] = self.setting(name, value, at)

    # -- statements ----------------------------------------------------------------------

    def run(self, body: list[ast.stmt], repeat: int | None, certain: bool) -> None:
        for stmt in body:
            self.statement(stmt, repeat, certain)

    def statement(self, stmt: ast.stmt, repeat: int | None, certain: bool) -> None:
        if isinstance(stmt, ast.FunctionDef):
            self.functions[stmt.name] = stmt
            return
        if isinstance(stmt, (ast.AsyncFunctionDef, ast.ClassDef)):
            return
        if isinstance(stmt, ast.If):
            main = "__main__" in ast.unparse(stmt.test)
            self.run(stmt.body, repeat, certain and main)
            self.run(stmt.orelse, repeat, False)
            return
        if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name):
            values = _literals(stmt.iter)
            if values is not None:  # `for role in ("scheduler", "server"):` once per value
                for value in values:
                    self.consts[stmt.target.id] = value
                    self.run(stmt.body, repeat, certain)
                self.consts.pop(stmt.target.id, None)
                self.run(stmt.orelse, repeat, certain)
                return
        if isinstance(stmt, (ast.For, ast.While, ast.AsyncFor)):
            self.run(stmt.body, None, certain)
            self.run(stmt.orelse, repeat, certain)
            return
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            self.run(stmt.body, repeat, certain)
            return
        if isinstance(stmt, ast.Try):
            self.run(stmt.body, repeat, certain)
            for handler in stmt.handlers:
                self.run(handler.body, repeat, False)
            self.run(stmt.orelse, repeat, certain)
            self.run(stmt.finalbody, repeat, certain)
            return
        if isinstance(stmt, ast.Assign):
            self.assign(stmt)
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                self.call(node, repeat, certain)

    def assign(self, stmt: ast.Assign) -> None:
        for target in stmt.targets:
            if isinstance(target, ast.Subscript):
                name = _literal(target.slice)
                if _environ(target.value):
                    self.write(self.environ, name, stmt.value, target.slice)
                elif isinstance(target.value, ast.Name) and target.value.id in self.dicts:
                    self.write(self.dicts[target.value.id], name, stmt.value, target.slice)
            elif isinstance(target, ast.Name):
                env = self.env_of(stmt.value)
                if env is not None and not _environ(stmt.value):
                    self.dicts[target.id] = env
                else:
                    self.dicts.pop(target.id, None)

    def call(self, node: ast.Call, repeat: int | None, certain: bool) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            owner = func.value
            target = self.environ if _environ(owner) else None
            if target is None and isinstance(owner, ast.Name) and owner.id in self.dicts:
                target = self.dicts[owner.id]
            if func.attr == "putenv" and isinstance(owner, ast.Name) and owner.id == "os":
                target = self.environ
            if target is not None and func.attr in ("update", "setdefault", "putenv"):
                if func.attr == "update":
                    for arg in node.args:
                        entries = self.env_of(arg)
                        if entries is not None:
                            target.update(entries)
                    for kw in node.keywords:
                        self.write(target, kw.arg, kw.value, kw)
                elif len(node.args) == 2:
                    self.write(target, _literal(node.args[0]), node.args[1], node.args[0])
                return
            name = _dotted(func)
            if name.startswith("subprocess.") and func.attr in _STARTS:
                self.start(node, func.attr, repeat, certain)
            elif name.endswith(_MXNET_CREATE):
                self.own_process(node)
        elif isinstance(func, ast.Name):
            if func.id in _STARTS and func.id == "Popen":
                self.start(node, func.id, repeat, certain)
            elif func.id in self.functions and func.id not in self._entered:
                self._entered.add(func.id)
                self.run(self.functions[func.id].body, repeat, certain)

    def start(self, node: ast.Call, how: str, repeat: int | None, certain: bool) -> None:
        env_kw = next((kw.value for kw in node.keywords if kw.arg == "env"), None)
        env = self.env_of(env_kw) if env_kw is not None else dict(self.environ)
        if env is None:
            self.found.uncounted_phases.add(self.phase)
            return
        role_setting = env.pop(ROLE, None)
        if role_setting is None:
            return
        role = role_setting.value if role_setting.value in ROLES else None
        self.found.processes.append(
            Process(
                path=self.path,
                line=node.lineno,
                column=node.col_offset + 1,
                role=role,
                settings={k: v for k, v in env.items() if k in SETTINGS},
                program=_command(node),
                source="python",
                count=repeat,
                certain=certain,
                background=_STARTS[how],
                phase=self.phase,
                role_setting=role_setting,
            )
        )
        if role is None:
            self.found.uncounted_phases.add(self.phase)
        if not _STARTS[how]:
            self.phase += 1

    def own_process(self, at: ast.AST | None) -> None:
        """The file itself, as a process of the job, once it has a DMLC_ROLE."""
        role_setting = self.environ.get(ROLE)
        if role_setting is None or self.own is not None:
            return
        role = role_setting.value if role_setting.value in ROLES else None
        self.own = Process(
            path=self.path,
            line=role_setting.line,
            column=role_setting.column,
            role=role,
            settings={k: v for k, v in self.environ.items() if k in SETTINGS},
            source="python",
            count=None,  # the file may run once per host
            opaque=True,
            phase=self.phase,
            role_setting=role_setting,
        )
        self.found.processes.append(self.own)


def _command(node: ast.Call) -> str | None:
    """`python train.py` for `Popen([sys.executable, "train.py"])`, `python -c`..."""
    if not node.args:
        return None
    first = node.args[0]
    words: list[str] = []
    if isinstance(first, (ast.List, ast.Tuple)):
        for el in first.elts:
            literal = _literal(el)
            words.append(
                literal
                if literal is not None
                else ("python" if "executable" in ast.unparse(el) else "?")
            )
    elif isinstance(first, ast.Constant) and isinstance(first.value, str):
        words = first.value.split()
    if len(words) >= 2 and _PYTHON.match(posixpath.basename(words[0])):
        return "python -c" if words[1] == "-c" else f"python {posixpath.normpath(words[1])}"
    return " ".join(words[:2]) or None


def read_python(path: str, text: str) -> LaunchFile:
    """The processes a Python file starts (with `subprocess`) and the one it is itself when it
    sets `DMLC_ROLE` in `os.environ`, with the DMLC_* values they get."""
    if "DMLC_ROLE" not in text:
        return LaunchFile(path)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return LaunchFile(path)
    reader = _PythonLaunches(path)
    reader.run(tree.body, 1, True)
    reader.own_process(None)
    return reader.found
