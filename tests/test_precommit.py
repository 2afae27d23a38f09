"""The real pre-commit, in throwaway git repositories: the README's `.pre-commit-config.yaml`
exactly as a user copies it (local hooks running the installed `mxlint`), and `pre-commit
try-repo` against this repository's hook manifest.

try-repo installs mxlint from a snapshot of this checkout into its own virtualenv (with pip,
from the package index), stages a bad file, and must fail with the MXL finding; once the file is
fixed the hook passes. `mxlint-fix` rewrites the file (pre-commit then reports the change),
`mxlint-requirements` reads requirements files and `mxlint-launch` shell launch scripts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from rule_cases import invalid_examples

from mxlint import registry
from mxlint.rules.distributed.launch_checker import LaunchFilesChecker
from mxlint.rules.versions._files import file_kind

ROOT = Path(__file__).resolve().parent.parent
HOOKS = ROOT / ".pre-commit-hooks.yaml"
README = ROOT / "README.md"
PACKAGE_PARTS = (
    "pyproject.toml",
    ".pre-commit-hooks.yaml",
    "mxlint",
    "rules",
    "README.md",
    "LICENSE",
)

pytestmark = pytest.mark.slow


def _git(*args: str, cwd: Path, env: dict[str, str]) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=120)


def _env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GIT_", "PRE_COMMIT", "MXLINT_", "VIRTUAL_ENV"))
    }
    env.update(
        {
            "HOME": str(home),
            "PRE_COMMIT_HOME": str(home / "pre-commit"),
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
    )
    return env


def _snapshot(dest: Path, env: dict[str, str]) -> Path:
    """This checkout's package files, as a git repository pre-commit can clone."""
    dest.mkdir()
    for part in PACKAGE_PARTS:
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif src.is_file():
            shutil.copy2(src, dest / part)
    if not (dest / "README.md").exists():
        (dest / "README.md").write_text("mxlint\n")  # pyproject's `readme`
    _git("init", "-q", cwd=dest, env=env)
    _git("add", "-A", cwd=dest, env=env)
    _git("commit", "-q", "-m", "snapshot", cwd=dest, env=env)
    return dest


def _try_repo(
    repo: Path, hook: str, cwd: Path, env: dict[str, str], *files: str
) -> subprocess.CompletedProcess:
    args = ["pre-commit", "try-repo", str(repo), hook, "--verbose"]
    if files:
        args += ["--files", *files]
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    if shutil.which("pre-commit") is None:
        pytest.fail("pre-commit is a test dependency (pip install -e .[test])")
    base = tmp_path_factory.mktemp("precommit")
    env = _env(base / "home")
    (base / "home").mkdir()
    repo = _snapshot(base / "mxlint-repo", env)
    project = base / "project"
    project.mkdir()
    _git("init", "-q", cwd=project, env=env)
    return repo, project, env


def test_hook_manifest_declares_the_four_hooks():
    hooks = {h["id"]: h for h in yaml.safe_load(HOOKS.read_text())}
    assert set(hooks) == {"mxlint", "mxlint-fix", "mxlint-requirements", "mxlint-launch"}
    launch = re.compile(hooks["mxlint-launch"]["files"])
    for name in ("run_dist.sh", "scripts/launch.BASH"):
        assert launch.search(name) and LaunchFilesChecker.matches(name), name
    for name in ("train.py", "Dockerfile", "run.sh.txt", "README.md"):
        assert not launch.search(name), name
    assert "--fix" in hooks["mxlint-fix"]["entry"]
    pattern = re.compile(hooks["mxlint-requirements"]["files"])
    read = (
        "requirements.txt",
        "requirements-dev.txt",
        "ci/gpu_requirements.txt",
        "constraints.txt",
        "constraints-py38.txt",
        "requirements/base.txt",
        "requirements/base.in",
        "requirements/gpu.pip",
        "src/requirements/Dev.TXT",
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "environment.yml",
        "Dockerfile",
        "docker/Dockerfile.gpu",
        "conda-env.yaml",
    )
    skipped = (
        "train.py",
        "docs/setup.rst",
        "requirements.md",
        "Dockerfile/x.py",
        "requirements/README.md",
        "requirements/ci/base.txt",
        "docs/base.txt",
    )
    for name in read:
        assert pattern.search(name), name
    for name in skipped:
        assert not pattern.search(name), name
    # The hook hands mxlint exactly the files a directory run reads.
    for name in (*read, *skipped):
        assert (file_kind(name) is not None) == bool(pattern.search(name)), name


def readme_config() -> str:
    """The `.pre-commit-config.yaml` the README shows, character for character."""
    text = README.read_text(encoding="utf-8")
    found = re.search(r"\*\*pre-commit\*\*.*?```yaml\n(.*?)```", text, re.S)
    assert found, "README.md has no pre-commit snippet"
    return found.group(1)


HYBRID = (
    "from mxnet import nd\n"
    "from mxnet.gluon import nn\n\n\n"
    "class Net(nn.HybridBlock):\n"
    "    def hybrid_forward(self, F, x):\n"
    "        return nd.relu(x)\n"
)


def test_readme_snippet_works_as_copied(tmp_path: Path):
    """The README's configuration, in a new repository: `git commit` runs it (pre-commit's own
    hook), fails on a bad file and a bad requirements file, leaves out what the project
    excludes, and passes once both are fixed."""
    config = readme_config()
    hooks = {h["id"]: h for h in yaml.safe_load(config)["repos"][0]["hooks"]}
    manifest = {h["id"]: h for h in yaml.safe_load(HOOKS.read_text())}
    # The same files as the published hooks, with --force-exclude.
    assert hooks["mxlint"]["types_or"] == manifest["mxlint"]["types_or"]
    assert hooks["mxlint-requirements"]["files"] == manifest["mxlint-requirements"]["files"]
    assert all("--force-exclude" in h["entry"] for h in (*hooks.values(), *manifest.values()))

    home = tmp_path / "home"
    home.mkdir()
    env = _env(home)
    # `language: system` runs the mxlint installed beside this Python, as a user's venv would.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    project = tmp_path / "project"
    (project / "vendor").mkdir(parents=True)
    _git("init", "-q", cwd=project, env=env)
    (project / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    (project / "pyproject.toml").write_text(
        '[tool.mxlint]\nmxnet-version = "1.9"\nextend-exclude = ["vendor"]\n'
    )
    (project / "net.py").write_text(HYBRID)
    (project / "vendor" / "net.py").write_text(HYBRID)  # excluded, though pre-commit names it
    (project / "requirements.txt").write_text("mxnet=1.9.1\n")
    _git("add", "-A", cwd=project, env=env)
    install = subprocess.run(
        ["pre-commit", "install"], cwd=project, env=env, capture_output=True, text=True
    )
    assert install.returncode == 0, install.stdout + install.stderr

    def commit() -> subprocess.CompletedProcess:
        return subprocess.run(
            ["git", "commit", "-q", "-m", "change"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    proc = commit()
    output = proc.stdout + proc.stderr  # git shows the hooks' output on stderr
    assert proc.returncode == 1, output
    reported = sorted(line.split(" ", 2)[:2] for line in output.splitlines() if ": MXL" in line)
    assert reported == [["net.py:7:16:", "MXL105"], ["requirements.txt:1:6:", "MXL507"]]
    assert "vendor" not in output
    (project / "net.py").write_text(HYBRID.replace("nd.relu", "F.relu"))
    (project / "requirements.txt").write_text("mxnet==1.9.1\nnumpy<1.24\n")
    _git("add", "-A", cwd=project, env=env)
    proc = commit()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    log = subprocess.run(
        ["git", "log", "--oneline"], cwd=project, env=env, capture_output=True, text=True
    )
    assert len(log.stdout.splitlines()) == 1


def test_mxlint_hook_fails_on_a_staged_bad_file_then_passes(setup):
    repo, project, env = setup
    rule, ex, _ = next(c for c in invalid_examples(cli=True) if c[0].code[3] != "0")
    (project / "pyproject.toml").write_text(f'[tool.mxlint]\nmxnet-version = "{ex.mxnet}.0"\n')
    bad = project / ex.filename
    bad.write_text(ex.code)
    _git("add", "-A", cwd=project, env=env)
    proc = _try_repo(repo, "mxlint", project, env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{ex.filename}:{ex.line}:" in proc.stdout and rule.code in proc.stdout
    bad.write_text("import mxnet as mx\n\nx = 1\n")
    _git("add", "-A", cwd=project, env=env)
    proc = _try_repo(repo, "mxlint", project, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _git("rm", "-q", "-f", ex.filename, cwd=project, env=env)


def test_mxlint_fix_hook_rewrites_then_passes(setup):
    repo, project, env = setup
    path = project / "noqa_user.py"
    path.write_text("import mxnet as mx\nx = mx.nd.zeros((1,))  # noqa: MXL999\n")
    _git("add", "-A", cwd=project, env=env)
    proc = _try_repo(repo, "mxlint-fix", project, env, "noqa_user.py")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "files were modified by this hook" in proc.stdout
    assert path.read_text() == "import mxnet as mx\nx = mx.nd.zeros((1,))\n"
    _git("add", "-A", cwd=project, env=env)
    proc = _try_repo(repo, "mxlint-fix", project, env, "noqa_user.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_requirements_hook(setup):
    repo, project, env = setup
    cases = [
        (r, ex)
        for r in registry.all_rules().values()
        if r.kind != "python"
        for ex in r.invalid
        if getattr(ex, "filename", "") == "requirements.txt"
    ]
    if not cases:
        pytest.skip("no requirements rule yet")
    rule, ex = cases[0]
    req = project / "requirements.txt"
    req.write_text(ex.code)
    _git("add", "-A", cwd=project, env=env)
    proc = _try_repo(repo, "mxlint-requirements", project, env, "requirements.txt")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert rule.code in proc.stdout
    # A Python file alone does not trigger the requirements hook at all.
    proc = _try_repo(repo, "mxlint-requirements", project, env, "pyproject.toml")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_requirements_hook_reads_a_requirements_directory(setup):
    repo, project, env = setup
    (project / "requirements").mkdir(exist_ok=True)
    base = project / "requirements" / "base.in"
    base.write_text("gluoncv==0.10.5\nmxnet==1.9.1numpy<1.24\n")
    _git("add", "-A", cwd=project, env=env)
    proc = _try_repo(repo, "mxlint-requirements", project, env, "requirements/base.in")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "requirements/base.in:2:13: MXL507" in proc.stdout, proc.stdout
    base.write_text("gluoncv==0.10.5\nmxnet==1.9.1\nnumpy<1.24\n")
    _git("add", "-A", cwd=project, env=env)
    proc = _try_repo(repo, "mxlint-requirements", project, env, "requirements/base.in")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _git("rm", "-q", "-f", "requirements/base.in", cwd=project, env=env)


def test_launch_hook_reads_shell_launch_scripts(setup):
    repo, project, env = setup
    rule = registry.all_rules()["MXL801"]
    ex = next(e for e in rule.invalid if not e.project and e.filename.endswith(".sh"))
    script = project / ex.filename
    script.write_text(ex.code)
    _git("add", "-A", cwd=project, env=env)
    proc = _try_repo(repo, "mxlint-launch", project, env, ex.filename)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{ex.filename}:{ex.line}:" in proc.stdout and "MXL801" in proc.stdout
    script.write_text(ex.code.replace("DMLC_PS_ROOT_PORT=9092 ", ""))
    _git("add", "-A", cwd=project, env=env)
    proc = _try_repo(repo, "mxlint-launch", project, env, ex.filename)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _git("rm", "-q", "-f", ex.filename, cwd=project, env=env)
