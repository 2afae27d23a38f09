"""The sandbox of --verify jobs, on real MXNet in real sandboxes: a flagged module that writes
outside its scratch directory and opens a socket at import gets its verdict, both attempts are
blocked, and the user is told; the environment is scrubbed; the resource limits suit CPU and
GPU jobs; and the sandbox's parts (backends, re-exposed paths, device nodes) on their own.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mxlint.verify import environment, escapes
from mxlint.verify.isolation import (
    HIDDEN,
    Sandbox,
    SandboxUnavailable,
    detect,
    gpu_device_nodes,
    reexposed,
)

ROOT = Path(__file__).resolve().parent.parent

ESCAPING = """\
import os
import socket

from mxnet.gluon import nn

# Telemetry-like side effects at import that fail quietly: the verdict must not depend on them.
try:
    with open({target!r}, "w") as fh:
        fh.write("written by the verify job\\n")
except OSError:
    pass
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
except OSError:
    pass
if "MXLINT_TEST_TOKEN" in os.environ or os.environ.get("MXLINT_TEST_DATA") != "/data/set":
    raise RuntimeError("the job sees the parent's credentials, or not what it was given")


class Net(nn.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = nn.Dense(4)

    def hybrid_forward(self, F, x):
        y = self.dense(x)
        return y.asnumpy()
"""
#: The line of `y.asnumpy()` (MXL102).
FLAGGED_ROW = 27


class Listener:
    """A TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


def _project(tmp_path: Path, port: int) -> tuple[Path, Path]:
    project = tmp_path / "project"
    project.mkdir()
    target = project / "escaped.txt"
    source = ESCAPING.format(target=str(target), port=port)
    (project / "net.py").write_text(source, encoding="utf-8")
    (project / "pyproject.toml").write_text(
        '[tool.mxlint.verify]\npass-env = ["MXLINT_TEST_DATA"]\n', encoding="utf-8"
    )
    assert source.splitlines()[FLAGGED_ROW - 1].strip() == "return y.asnumpy()"
    return project, target


def _verify(project: Path, sandbox: str, fmt: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MXLINT_TEST_TOKEN="not-for-user-code", MXLINT_TEST_DATA="/data/set")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mxlint",
            "check",
            "--verify",
            "--no-benchmark",
            "--verify-sandbox",
            sandbox,
            "--select",
            "MXL102",
            "--output-format",
            fmt,
            "net.py",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _available(name: str) -> bool:
    try:
        return detect(name).name == name
    except SandboxUnavailable:
        return False


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["bubblewrap", "unshare"])
def test_writes_and_connections_are_blocked_and_the_verdict_given(
    backend: str, tmp_path: Path
) -> None:
    if not _available(backend):
        pytest.skip(f"{backend} does not work on this host")
    listener = Listener()
    try:
        project, target = _project(tmp_path, listener.port)
        proc = _verify(project, backend, "json")
    finally:
        listener.close()
    assert proc.returncode == 1, proc.stderr
    assert not target.exists()
    assert listener.accepted == 0
    (item,) = json.loads(proc.stdout)
    assert (item["code"], item["location"]["row"]) == ("MXL102", FLAGGED_ROW)
    assert item["verify"]["verdict"] == "confirmed", item["verify"]
    assert item["verify"]["sandbox"] == [
        f"blocked: write to {target}",
        f"blocked: connect to 127.0.0.1:{listener.port}",
    ]
    first = proc.stderr.splitlines()
    if backend == "bubblewrap":
        assert first[0].startswith("mxlint: --verify executes the project's code"), first
        assert first[1].startswith("mxlint: sandbox: bubblewrap "), first
    else:  # a partial sandbox is announced first, as a warning
        assert first[0].startswith("mxlint: warning: no bubblewrap sandbox"), first
        assert first[1].startswith("mxlint: --verify executes the project's code"), first


@pytest.mark.slow
def test_without_a_sandbox_the_run_warns_and_reports_what_the_code_did(tmp_path: Path) -> None:
    """The control: the same module really writes and connects when nothing stops it."""
    listener = Listener()
    try:
        project, target = _project(tmp_path, listener.port)
        proc = _verify(project, "none", "concise")
    finally:
        listener.close()
    assert proc.returncode == 1, proc.stderr
    assert target.read_text(encoding="utf-8") == "written by the verify job\n"
    assert listener.accepted == 1
    assert proc.stderr.splitlines()[0] == (
        "mxlint: warning: no sandbox, as configured: the project's code runs with your "
        "network and files"
    )
    assert (
        f"net.py:{FLAGGED_ROW}:16: MXL102 CONFIRMED\n"
        "      hybridize() raised NotImplementedForSymbol: Function asnumpy is not implemented "
        "for Symbol and only available in NDArray. at line 27 (inputs [[2, 8]]); raised by MXNet\n"
        f"      sandbox not blocked: write to {target}\n"
        f"      sandbox not blocked: connect to 127.0.0.1:{listener.port}\n"
    ) in proc.stdout
    assert "Verify (ran the project's code; sandbox WARNING: none:" in proc.stdout


def test_an_unknown_or_missing_sandbox_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "mxlint", "check", "--verify-sandbox", "none", "a.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr == "mxlint: error: --verify-sandbox needs --verify\n"
    with pytest.raises(SandboxUnavailable, match="unknown sandbox 'chroot'"):
        detect("chroot")


def test_help_says_verify_executes_the_projects_code() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mxlint", "check", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=dict(os.environ, COLUMNS="200"),
    )
    assert "--verify EXECUTES THE PROJECT'S CODE" in proc.stdout
    assert "running the project's code on MXNet, in a sandboxed subprocess" in proc.stdout


def test_the_environment_keeps_what_mxnet_needs_and_no_credentials() -> None:
    parent = {
        "PATH": "/usr/bin",
        "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
        "CUDA_VISIBLE_DEVICES": "1",
        "MXNET_CUDNN_AUTOTUNE_DEFAULT": "0",
        "OMP_NUM_THREADS": "4",
        "LANG": "C.UTF-8",
        "HOME": "/home/someone",
        "AWS_SECRET_ACCESS_KEY": "s",
        "AWS_ACCESS_KEY_ID": "a",
        "GITHUB_TOKEN": "t",
        "SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1",
        "MXNET_API_KEY": "k",
        "CUDA_AUTH_TOKEN": "k",
        "DATA_DIR": "/data",
    }
    env = environment.scrubbed(parent, "/s/home", "/s/tmp", passed=["DATA_DIR"])
    assert env == {
        "PATH": "/usr/bin",
        "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
        "CUDA_VISIBLE_DEVICES": "1",
        "MXNET_CUDNN_AUTOTUNE_DEFAULT": "0",
        "OMP_NUM_THREADS": "4",
        "LANG": "C.UTF-8",
        "DATA_DIR": "/data",
        "HOME": "/s/home",
        "TMPDIR": "/s/tmp",
        "XDG_CACHE_HOME": "/s/home/.cache",
        "MPLCONFIGDIR": "/s/home/.config/matplotlib",
        "MXNET_HOME": "/home/someone/.mxnet",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def test_paths_inside_hidden_directories_are_reexposed_outermost_first(tmp_path: Path) -> None:
    inner = tmp_path / "project" / "pkg"
    inner.mkdir(parents=True)
    outside = "/usr"  # not hidden: visible through the read-only root already
    got = reexposed([str(inner), str(tmp_path / "project"), str(outside), "/no/such"], HIDDEN)
    assert got == [os.path.realpath(tmp_path / "project")]


def test_bubblewrap_command_hides_home_and_tmp_and_binds_only_scratch_writable(
    tmp_path: Path,
) -> None:
    scratch, project = tmp_path / "scratch", tmp_path / "project"
    scratch.mkdir()
    project.mkdir()
    box = Sandbox("bubblewrap", "/usr/bin/bwrap", "0.11.0")
    cmd = box.command(
        ["python", "-m", "x"],
        scratch=str(scratch),
        cwd=str(scratch),
        readable=[str(project)],
        project=[str(project)],
        gpu=False,
    )
    pairs = list(zip(cmd, cmd[1:]))
    assert cmd[:4] == ["/usr/bin/bwrap", "--ro-bind", "/", "/"]
    assert ("--tmpfs", "/tmp") in pairs
    home = os.path.realpath(os.path.expanduser("~"))
    if home != "/" and os.path.isdir(home):
        assert ("--tmpfs", home) in pairs
    assert cmd[cmd.index(str(project)) - 1] == "--ro-bind"
    writable = [cmd[i + 1] for i, a in enumerate(cmd) if a in ("--bind", "--dev-bind")]
    assert writable == [str(scratch)]
    assert {"--unshare-all", "--die-with-parent", "--new-session"} <= set(cmd)
    assert ("--cap-drop", "ALL") in pairs
    assert cmd[-4:] == ["--", "python", "-m", "x"]


def test_gpu_jobs_get_the_nvidia_device_nodes_only(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    (dev / "nvidia-caps").mkdir(parents=True)
    for name in (
        "nvidia0",
        "nvidia1",
        "nvidiactl",
        "nvidia-uvm",
        "nvidia-uvm-tools",
        "nvidia-modeset",
        "nvme0n1",
        "nvram",
        "nvidia-fs-ctl",
        "null",
    ):
        (dev / name).touch()
    assert [Path(p).name for p in gpu_device_nodes(str(dev))] == [
        "nvidia-modeset",
        "nvidia-uvm",
        "nvidia-uvm-tools",
        "nvidia0",
        "nvidia1",
        "nvidiactl",
        "nvidia-caps",
    ]


def test_the_escape_monitor_tells_blocked_from_private_writes(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    facts = json.loads(
        escapes.sandbox_env(
            "bubblewrap", str(scratch), [str(scratch), "/tmp"], [str(tmp_path / "p")], False
        )[escapes.SANDBOX_ENV]
    )
    monitor = escapes.Monitor(facts)
    monitor.hook("open", (str(scratch / "ok.txt"), "w", 0))
    monitor.hook("open", ("/tmp/private.txt", "w", 0))  # the sandbox's own /tmp: discarded
    monitor.hook("open", (str(tmp_path / "p" / "model.py"), "r", 0))
    monitor.hook("open", (str(tmp_path / "p" / "out.params"), "wb", 0))
    monitor.hook("open", ("/etc/passwd", None, os.O_WRONLY | os.O_APPEND))
    monitor.hook("os.rename", ("a", "/usr/lib/x", -1, -1))
    unix = socket.socket(socket.AF_UNIX)
    inet = socket.socket()
    try:
        monitor.hook("socket.connect", (unix, str(scratch / "sock")))
        monitor.hook("socket.connect", (inet, ("10.0.0.1", 80)))
        monitor.hook("socket.connect", (inet, ("10.0.0.1", 80)))
    finally:
        unix.close()
        inet.close()
    assert [escapes.describe(r) for r in monitor.records] == [
        f"blocked: write to {tmp_path / 'p' / 'out.params'}",
        "blocked: write to /etc/passwd",
        "blocked: move a file to /usr/lib/x",
        "blocked: connect to 10.0.0.1:80",
    ]
