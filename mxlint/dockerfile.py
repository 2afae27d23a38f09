"""A Dockerfile reader for the versions, environment and distributed rules: stages, their CUDA
image (version, flavour, cuDNN), what pip installs in them, and the environment they set.

Only what the rules need: `ARG`/`ENV` defaults (to resolve `FROM nvidia/cuda:${CUDA}-...` and
`mxnet-cu112==${MXNET_VERSION}`), `FROM ... AS name` stages (a stage built FROM another stage
inherits its CUDA image, its `ENV` and what its `RUN`s installed), `COPY` (to find the file `pip install -r /app/requirements.txt` reads), and
`RUN pip install` / `python -m pip install` / `conda install` commands, in shell or exec form,
chained with `&&` and continued with backslashes. Unresolvable values are left unknown.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field

from mxlint.parsing import split_lines
from mxlint.requirements_parsing import Include, Requirement, _conda_requirement, parse_requirement

_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-+][^}]*)?\}|([A-Za-z_][A-Za-z0-9_]*))")
#: nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04, nvcr.io/nvidia/cuda:10.1-devel, nvidia/cudagl
_CUDA_REPO = re.compile(r"(?:^|/)cuda(?:gl)?$")
_CUDA_TAG = re.compile(r"^(\d+)\.(\d+)")
#: pytorch/pytorch:1.9.0-cuda11.1-cudnn8-runtime, *:...-cuda10.2-...
_CUDA_IN_TAG = re.compile(r"cuda-?(\d+)\.(\d+)")
_PIP_VALUE_OPTS = {
    "-r",
    "--requirement",
    "-c",
    "--constraint",
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "-t",
    "--target",
    "--prefix",
    "--root",
    "--trusted-host",
    "--progress-bar",
    "--cache-dir",
    "--timeout",
    "--retries",
    "--platform",
    "--python-version",
    "--implementation",
    "--abi",
    "--src",
    "--upgrade-strategy",
    "-e",
    "--editable",
    "--proxy",
    "--log",
    "--cert",
    "--client-cert",
    "--exists-action",
    "--no-binary",
    "--only-binary",
    "--global-option",
    "--install-option",
    "--config-settings",
    "-C",
    "--root-user-action",
    "--report",
    "--python",
}
_CONDA_VALUE_OPTS = {"-c", "--channel", "-n", "--name", "-p", "--prefix", "--file"}
_OPERATORS = ("&&", "||", ";", "|", "&", "(", ")", "\n")


@dataclass(frozen=True)
class EnvVar:
    """An `ENV` setting of a stage, where its name is written (1-based)."""

    name: str
    value: str | None  # None when it holds an unresolved variable
    line: int
    column: int


@dataclass
class Stage:
    image: str | None  # resolved image reference, None when it has unresolved variables
    line: int
    name: str | None = None
    cuda: str | None = None  # "11.2"
    requirements: list[Requirement] = field(default_factory=list)
    includes: list[Include] = field(default_factory=list)
    custom_index: bool = False
    #: destination path in the image -> source path in the build context
    copies: dict[str, str] = field(default_factory=dict)
    workdir: str = "/"
    #: `ENV` settings in effect at the end of the stage (a stage built FROM another inherits
    #: them).
    env: dict[str, EnvVar] = field(default_factory=dict)
    #: (flavor, cuDNN major) of an `nvidia/cuda` image: ("runtime", "8"), ("base", None).
    cuda_kind: tuple[str, str | None] | None = None
    #: The text of its `RUN` instructions (and of the stage it is built FROM).
    runs: list[str] = field(default_factory=list)


def cuda_of_image(image: str) -> str | None:
    """ "11.2" for an NVIDIA CUDA image or a tag that names the CUDA version, else None."""
    ref = image.split("@", 1)[0]
    repo, _, tag = ref.rpartition(":") if ":" in ref.rsplit("/", 1)[-1] else (ref, "", "")
    if not tag:
        return None
    if _CUDA_REPO.search(repo):
        m = _CUDA_TAG.match(tag)
        return f"{int(m.group(1))}.{int(m.group(2))}" if m else None
    m = _CUDA_IN_TAG.search(tag)
    return f"{int(m.group(1))}.{int(m.group(2))}" if m else None


#: 11.2.2-cudnn8-runtime-ubuntu20.04: the flavor (base, runtime, devel) and cuDNN of a CUDA tag.
_CUDA_FLAVOR = re.compile(r"^\d+(?:\.\d+)*(?:-cudnn(\d+))?-(base|runtime|devel)(?:-|$)")


def cuda_image_kind(image: str) -> tuple[str, str | None] | None:
    """(flavor, cuDNN major) of an `nvidia/cuda` image: ("base", None) for
    `nvidia/cuda:11.2.2-base-ubuntu20.04`, ("runtime", "8") for `...-cudnn8-runtime-...`; None
    for any other image or a tag that does not say."""
    ref = image.split("@", 1)[0]
    repo, _, tag = ref.rpartition(":") if ":" in ref.rsplit("/", 1)[-1] else (ref, "", "")
    if not tag or not re.search(r"(?:^|/)nvidia/cuda$", repo):
        return None
    m = _CUDA_FLAVOR.match(tag)
    return (m.group(2), m.group(1)) if m else None


# --- lines -----------------------------------------------------------------------------------


@dataclass
class _Instruction:
    keyword: str
    args: str
    #: offset in `args` -> (line, 1-based column), one entry per character
    positions: list[tuple[int, int]]
    line: int


def _instructions(text: str) -> list[_Instruction]:
    out: list[_Instruction] = []
    chars: list[str] = []
    positions: list[tuple[int, int]] = []
    start = 0
    for number, raw in enumerate(split_lines(text), start=1):
        if not chars:
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            start = number
        elif raw.lstrip().startswith("#"):
            continue  # comment lines inside a continued instruction are dropped
        body = raw.rstrip()
        continued = body.endswith("\\")
        if continued:
            body = body[:-1]
        for col, ch in enumerate(body, start=1):
            chars.append(ch)
            positions.append((number, col))
        if continued:
            chars.append(" ")
            positions.append((number, len(body) + 1))
            continue
        text_line = "".join(chars)
        stripped = text_line.lstrip()
        lead = len(text_line) - len(stripped)
        keyword, _, _ = stripped.partition(" ")
        args_at = lead + len(keyword)
        while args_at < len(text_line) and text_line[args_at] in " \t":
            args_at += 1
        out.append(_Instruction(keyword.upper(), text_line[args_at:], positions[args_at:], start))
        chars, positions = [], []
    return out


def _tokens(text: str) -> list[tuple[str, int]]:
    """Shell words (quotes removed) and operators, each with the offset where it starts."""
    tokens: list[tuple[str, int]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t":
            i += 1
            continue
        op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
        if op:
            tokens.append((op, i))
            i += len(op)
            continue
        if ch == "#":
            break  # a shell comment runs to the end of the (joined) line
        start, word = i, []
        while i < n and text[i] not in " \t" and not any(text.startswith(o, i) for o in _OPERATORS):
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
        tokens.append(("".join(word), start))
    return tokens


def _commands(tokens: list[tuple[str, int]]) -> list[list[tuple[str, int]]]:
    commands: list[list[tuple[str, int]]] = [[]]
    for token in tokens:
        if token[0] in _OPERATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


# --- the reader ------------------------------------------------------------------------------


def parse_dockerfile(text: str) -> list[Stage]:
    """The build stages with the CUDA version of their image and their pip installs."""
    stages: list[Stage] = []
    global_args: dict[str, str | None] = {}
    env: dict[str, str | None] = {}
    for ins in _instructions(text):
        if ins.keyword == "ARG":
            for name, value in _assignments(ins.args, env if stages else global_args, arg=True):
                if stages and value is None and name in global_args:
                    value = global_args[name]
                (env if stages else global_args)[name] = value
        elif ins.keyword == "FROM":
            env = {}
            stages.append(_from(ins, global_args, stages))
        elif not stages:
            continue
        elif ins.keyword == "ENV":
            assigned = _assignments(ins.args, env, arg=False)
            env.update(assigned)
            _record_env(ins, assigned, stages[-1])
        elif ins.keyword in ("COPY", "ADD"):
            _copy(ins.args, stages[-1])
        elif ins.keyword == "WORKDIR":
            stages[-1].workdir = posixpath.join(stages[-1].workdir, ins.args.strip())
        elif ins.keyword == "RUN":
            stages[-1].runs.append(ins.args)
            _run(ins, stages[-1], env)
    return stages


def _substitute(value: str, env: dict[str, str | None]) -> str | None:
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


def _assignments(args: str, env: dict[str, str | None], arg: bool) -> list[tuple[str, str | None]]:
    words = [w for w, _ in _tokens(args)]
    out: list[tuple[str, str | None]] = []
    if not arg and len(words) >= 2 and "=" not in words[0]:  # legacy `ENV NAME value`
        return [(words[0], _substitute(" ".join(words[1:]), env))]
    for word in words:
        name, sep, value = word.partition("=")
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            continue
        out.append((name, _substitute(value, env) if sep else None))
    return out


def _record_env(ins: _Instruction, assigned: list[tuple[str, str | None]], stage: Stage) -> None:
    """Keep each `ENV` name's value with the position of the name."""
    offsets = [offset for _, offset in _tokens(ins.args)]
    for (name, value), offset in zip(assigned, offsets):
        line, col = ins.positions[offset] if offset < len(ins.positions) else (ins.line, 1)
        stage.env[name] = EnvVar(name, value, line, col)


def _from(ins: _Instruction, global_args: dict[str, str | None], stages: list[Stage]) -> Stage:
    words = [w for w, _ in _tokens(ins.args) if not w.startswith("--")]
    image = _substitute(words[0], global_args) if words else None
    stage = Stage(image=image, line=ins.line)
    if len(words) >= 3 and words[1].lower() == "as":
        stage.name = words[2]
    if image is None:
        return stage
    parent = next((s for s in reversed(stages) if s.name and s.name == image), None)
    if parent is not None:
        stage.cuda = parent.cuda
        stage.cuda_kind = parent.cuda_kind
        stage.runs = list(parent.runs)
        stage.requirements = list(parent.requirements)
        stage.includes = list(parent.includes)
        stage.copies = dict(parent.copies)
        stage.workdir = parent.workdir
        stage.custom_index = parent.custom_index
        stage.env = dict(parent.env)
    else:
        stage.cuda = cuda_of_image(image)
        stage.cuda_kind = cuda_image_kind(image)
    return stage


def _copy(args: str, stage: Stage) -> None:
    words = [w for w, _ in _tokens(args) if not w.startswith("--")]
    if args.lstrip().startswith("["):
        try:
            words = [str(w) for w in json.loads(args)]
        except (ValueError, TypeError):
            return
    if len(words) < 2:
        return
    *sources, dest = words
    dest_abs = posixpath.join(stage.workdir, dest)
    for src in sources:
        if dest.endswith("/") or len(sources) > 1 or src in (".", "./"):
            if src in (".", "./"):
                stage.copies[dest_abs.rstrip("/") + "/"] = ""
            else:
                stage.copies[posixpath.join(dest_abs, posixpath.basename(src))] = src
        else:
            stage.copies[posixpath.normpath(dest_abs)] = src


def context_path(stage: Stage, path: str) -> str | None:
    """The build-context path a file at `path` in the image came from, if COPY says so."""
    full = posixpath.normpath(posixpath.join(stage.workdir, path))
    if full in stage.copies:
        return stage.copies[full]
    for dest, src in stage.copies.items():
        if dest.endswith("/") and full.startswith(dest):
            return posixpath.join(src, full[len(dest) :]) if src else full[len(dest) :]
    return None


def _run(ins: _Instruction, stage: Stage, env: dict[str, str | None]) -> None:
    args = ins.args
    if args.lstrip().startswith("["):
        try:
            words = json.loads(args)
        except ValueError:
            return
        if not isinstance(words, list):
            return
        offsets, cursor = [], 0
        for w in words:
            pos = args.find(json.dumps(str(w)), cursor)
            offsets.append(pos + 1 if pos >= 0 else 0)
            cursor = max(cursor, pos + 1)
        tokens = [(str(w), o) for w, o in zip(words, offsets)]
        if (
            len(tokens) >= 3
            and tokens[0][0] in ("sh", "bash", "/bin/sh", "/bin/bash")
            and tokens[1][0] == "-c"
        ):
            return
        commands = [tokens]
    else:
        commands = _commands(_tokens(args))
    for command in commands:
        _install(command, ins, stage, env)


def _install(
    command: list[tuple[str, int]], ins: _Instruction, stage: Stage, env: dict[str, str | None]
) -> None:
    words = [w for w, _ in command]
    i = 0
    while i < len(words) and (
        re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[i])
        or words[i] in ("sudo", "env", "time", "exec", "-H", "-E")
    ):
        i += 1
    if i >= len(words):
        return
    program = posixpath.basename(words[i])
    conda = False
    if re.fullmatch(r"pip[0-9.]*", program) and words[i + 1 : i + 2] == ["install"]:
        i += 2
    elif re.fullmatch(r"python[0-9.]*", program):
        rest = words[i + 1 :]
        if "-m" not in rest[:3]:
            return
        j = i + 1 + rest.index("-m")
        if words[j + 1 : j + 3] != ["pip", "install"]:
            return
        i = j + 3
    elif program in ("conda", "mamba", "micromamba") and words[i + 1 : i + 2] == ["install"]:
        i, conda = i + 2, True
    else:
        return
    value_opts = _CONDA_VALUE_OPTS if conda else _PIP_VALUE_OPTS
    while i < len(words):
        word, offset = command[i]
        i += 1
        if word.startswith("-"):
            name, sep, inline = word.partition("=")
            value = inline if sep else None
            if not sep and name in value_opts and i < len(words):
                value = words[i]
                i += 1
            if (
                value is None
                and not conda
                and len(name) > 2
                and name[:2] in ("-r", "-c")
                and not name.startswith("--")
            ):
                name, value = name[:2], name[2:]
            _option(stage, name, value, ins.line, env, conda)
            continue
        resolved = _substitute(word, env) if "$" in word else word
        if resolved is None:
            continue
        if ins.args[offset : offset + 1] in ("'", '"'):
            offset += 1  # point at the name, not at its quote
        line, col = ins.positions[offset] if offset < len(ins.positions) else (ins.line, 1)
        if conda:
            req = _conda_requirement(resolved, line, col)
        elif resolved.startswith((".", "/")) or (resolved.endswith("/") and "://" not in resolved):
            req = None  # a local project directory or file
        else:
            req = parse_requirement(resolved, line, col)
        if req is not None:
            stage.requirements.append(req)


def _option(
    stage: Stage, name: str, value: str | None, line: int, env: dict[str, str | None], conda: bool
) -> None:
    if value is None:
        return
    value = _substitute(value, env) or ""
    if conda:
        if name in ("-c", "--channel"):
            stage.custom_index = stage.custom_index or value not in ("defaults",)
        return
    if name in ("-r", "--requirement", "-c", "--constraint") and value:
        stage.includes.append(Include("r" if name in ("-r", "--requirement") else "c", value, line))
    elif name in ("-i", "--index-url", "--extra-index-url", "-f", "--find-links") and not any(
        host in value for host in ("pypi.org", "pypi.python.org")
    ):
        stage.custom_index = True
