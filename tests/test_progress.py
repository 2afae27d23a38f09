"""The progress indicator: on a real pseudo-terminal (stderr) it counts the files checked and
erases itself; in pipes, under `--quiet`, or in a run quicker than its delay it never shows."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from mxlint.progress import DELAY_ENV, delay_from_env

FILES = 16  # enough for two workers (mxlint.workers.MIN_FILES_PER_WORKER)
BAD = "import mxnet as mx\n\nx = mx.nd.zeros((1,))  # noqa: MXL999\n"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("progress")
    for i in range(FILES):
        (root / f"mod{i:02d}.py").write_text(BAD)
    return root


def _env(delay: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "MXLINT_OUTPUT_FORMAT")}
    env[DELAY_ENV] = delay
    return env


def _on_a_terminal(project: Path, delay: str, *args: str) -> tuple[int, str, str]:
    """Run `mxlint check` with stderr on a pseudo-terminal (100 columns) and stdout on a pipe;
    (exit code, stdout, everything the terminal received)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "mxlint", "check", "--no-cache", *args, "."],
        cwd=project,
        env=_env(delay),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    received = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            received += chunk
        stdout = proc.stdout.read() if proc.stdout else b""
        code = proc.wait(timeout=120)
    finally:
        os.close(master)
        if proc.stdout:
            proc.stdout.close()
    return code, stdout.decode(), received.decode("utf-8", errors="replace")


def test_a_terminal_sees_files_counted_then_erased(project: Path):
    code, stdout, terminal = _on_a_terminal(project, "0", "-j", "1")
    assert code == 1
    text = ANSI.sub("", terminal)
    assert "Checking " in text and f" 0/{FILES} files " in text
    assert f" {FILES}/{FILES} files " in text
    # Erased (transient) before the summary, which follows on the terminal as usual.
    summary = (
        f"Found {FILES} errors.\r\n[\x1b[36m*\x1b[0m] {FILES} fixable with the `--fix` option."
    )
    assert terminal.endswith(f"\x1b[2K{summary}\r\n")
    assert "\x1b[2K" in terminal and "\x1b[?25h" in terminal  # line cleared, cursor shown
    # stdout, a pipe, carries the report alone.
    assert "Checking" not in stdout and "\x1b" not in stdout
    assert len(stdout.splitlines()) == FILES


def test_workers_report_progress_too(project: Path):
    code, _, terminal = _on_a_terminal(project, "0", "-j", "2")
    assert code == 1
    assert f" {FILES}/{FILES} files " in ANSI.sub("", terminal)


def test_quiet_or_quick_runs_show_nothing(project: Path):
    for delay, args in (("0", ("-q",)), ("60", ())):
        code, stdout, terminal = _on_a_terminal(project, delay, *args)
        assert code == 1 and len(stdout.splitlines()) == FILES
        assert "Checking" not in terminal, (delay, args)


def test_pipes_never_get_progress(project: Path):
    for fmt in ("concise", "json"):
        proc = subprocess.run(
            [sys.executable, "-m", "mxlint", "check", "--no-cache", "--output-format", fmt, "."],
            cwd=project,
            env=_env("0"),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 1
        assert "Checking" not in proc.stdout + proc.stderr and "\x1b" not in proc.stderr
    assert proc.stderr == ""  # json: nothing but the document, on stdout


def test_delay_from_the_environment(monkeypatch):
    monkeypatch.setenv(DELAY_ENV, "0.25")
    assert delay_from_env() == 0.25
    for text in ("", "soon", "-3"):
        monkeypatch.setenv(DELAY_ENV, text)
        assert delay_from_env() == (0.0 if text == "-3" else 1.0)
    monkeypatch.delenv(DELAY_ENV)
    assert delay_from_env() == 1.0
