"""The command's end: without the interpreter's teardown only when nothing is left for it to
do, with the output flushed and the exit code kept."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def _run(script: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_nothing_left_to_do_ends_at_once_with_the_output_flushed():
    proc = _run("""\
        import sys
        from mxlint.launch import exit_without_teardown
        sys.stdout.write("report without a newline")
        sys.stderr.write("summary")
        exit_without_teardown(3)
        print("not reached")
        """)
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "report without a newline", "summary")


def test_an_atexit_handler_runs_before_the_end():
    """Handlers registered at exit run as at the usual exit, in reverse order, and what one
    raises is printed without changing the exit code; the environment's own handlers (a `.pth`
    file that imports `certifi` registers one) do not keep the teardown."""
    proc = _run("""\
        import atexit
        from mxlint.launch import exit_without_teardown
        atexit.register(print, "registered first")
        atexit.register(lambda: 1 / 0)
        atexit.register(print, "registered last")
        exit_without_teardown(3)
        print("not reached")
        """)
    assert (proc.returncode, proc.stdout) == (3, "registered last\nregistered first\n")
    assert "ZeroDivisionError" in proc.stderr


def test_a_running_thread_means_the_usual_exit():
    proc = _run("""\
        import threading
        from mxlint.launch import exit_without_teardown
        release = threading.Event()
        worker = threading.Thread(target=lambda: (release.wait(), print("thread ended")))
        worker.start()
        exit_without_teardown(3)
        print("returned")
        release.set()
        """)
    assert (proc.returncode, proc.stdout) == (0, "returned\nthread ended\n")


def test_the_command_reports_in_full_and_keeps_its_exit_codes(tmp_path: Path):
    (tmp_path / "net.py").write_text(
        "from mxnet.gluon import nn\n\n\nclass Net(nn.HybridBlock):\n"
        "    def hybrid_forward(self, F, x):\n        return x * x.asscalar()\n"
    )
    (tmp_path / "clean.py").write_text("import mxnet as mx\n")
    command = [sys.executable, "-m", "mxlint", "check", "--isolated", "--no-cache"]
    found = subprocess.run([*command, "net.py"], cwd=tmp_path, capture_output=True, text=True)
    assert found.returncode == 1
    assert found.stdout.startswith("net.py:6:20: MXL102 ")
    assert found.stderr == "Found 1 error.\n"
    written = subprocess.run(
        [*command, "--output-format", "json", "-o", "report.json", "net.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert written.returncode == 1
    assert '"code": "MXL102"' in (tmp_path / "report.json").read_text()
    clean = subprocess.run([*command, "clean.py"], cwd=tmp_path, capture_output=True, text=True)
    assert (clean.returncode, clean.stdout) == (0, "All checks passed!\n")
