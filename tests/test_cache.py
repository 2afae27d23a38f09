"""The results cache and worker processes: same findings as a fresh serial run, always."""

from __future__ import annotations

import os
import pickle
import shutil
import sys
from pathlib import Path

import pytest

from mxlint.cache import DIRNAME, ENV_VAR, FORMAT, Cache, clean
from mxlint.cli import main
from mxlint.config import Settings
from mxlint.runner import run

BASE_HYBRID = "from mxnet.gluon import nn\n\n\nclass Base(nn.HybridBlock):\n    pass\n"
BASE_PLAIN = "from mxnet.gluon import nn\n\n\nclass Base(nn.Block):\n    pass\n"
MODEL = (
    "from .base import Base\n"
    "from .utils import peak\n"
    "\n"
    "\n"
    "class Net(Base):\n"
    "    def hybrid_forward(self, F, x):\n"
    "        if x.sum() > 0:\n"
    "            x = x * 2\n"
    "        return x / peak(x)\n"
)
UTILS_BAD = "import mxnet as mx\n\n\ndef peak(t):\n    return t.max().asscalar()\n"
UTILS_GOOD = "import mxnet as mx\n\n\ndef peak(t):\n    return t.max()\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(ENV_VAR, raising=False)  # the default place: the project root
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(BASE_HYBRID)
    (pkg / "model.py").write_text(MODEL)
    (pkg / "utils.py").write_text(UTILS_BAD)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(
    root: Path, settings: Settings | None = None, jobs: int = 1
) -> tuple[list[tuple[str, int, str]], Cache]:
    settings = settings or Settings(root=root)
    cache = Cache.load(root / DIRNAME, settings)
    result = run([Path("pkg")], settings, jobs=jobs, cache=cache)
    cache.save()
    rows = [(Path(f.filename).name, f.location.row, f.code) for f in result.findings]
    return rows, cache


def _touch(path: Path, text: str) -> None:
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_warm_run_reads_every_file_from_the_cache(project: Path):
    cold, cache = _run(project)
    assert cold == [("model.py", 7, "MXL101"), ("model.py", 9, "MXL102")]
    assert (cache.hits, cache.misses) == (0, 4)
    warm, cache = _run(project)
    assert warm == cold
    assert (cache.hits, cache.misses) == (4, 0)


def test_changing_one_file_relints_only_that_file(project: Path):
    _run(project)
    _touch(
        project / "pkg" / "model.py",
        MODEL.replace("        if x.sum() > 0:\n            x = x * 2\n", ""),
    )
    rows, cache = _run(project)
    assert rows == [("model.py", 7, "MXL102")]
    assert (cache.hits, cache.misses) == (3, 1)


def test_a_base_class_change_reaches_the_unchanged_subclass(project: Path):
    _run(project)
    _touch(project / "pkg" / "base.py", BASE_PLAIN)
    rows, cache = _run(project)
    assert rows == []  # Net is a plain Block now: hybrid_forward is never hybridized
    assert (cache.hits, cache.misses) == (3, 1)
    _touch(project / "pkg" / "base.py", BASE_HYBRID)
    rows, _ = _run(project)
    assert rows == [("model.py", 7, "MXL101"), ("model.py", 9, "MXL102")]


def test_a_helper_fixed_in_another_file_clears_the_cached_callers_finding(project: Path):
    _run(project)
    _touch(project / "pkg" / "utils.py", UTILS_GOOD)
    rows, cache = _run(project)
    assert rows == [("model.py", 7, "MXL101")]
    assert (cache.hits, cache.misses) == (3, 1)


def test_other_settings_do_not_share_results(project: Path):
    _run(project)
    rows, cache = _run(project, Settings(root=project, ignore=("MXL101",)))
    assert rows == [("model.py", 9, "MXL102")]
    assert cache.hits == 0


def test_moving_a_file_out_of_its_package_is_a_new_entry(project: Path):
    _run(project)
    (project / "pkg" / "__init__.py").unlink()
    _, cache = _run(project)
    # Module names changed (`pkg.model` -> `model`): nothing reused.
    assert cache.hits == 0


def test_a_damaged_cache_is_an_empty_cache(project: Path):
    _, cache = _run(project)
    cache.file.write_bytes(b"\x80\x04not a pickle")
    rows, cache = _run(project)
    assert rows == [("model.py", 7, "MXL101"), ("model.py", 9, "MXL102")]
    assert cache.hits == 0
    with cache.file.open("rb") as fh:  # and it was rewritten whole
        assert pickle.load(fh)["format"] == FORMAT


def test_internal_errors_are_not_remembered(project: Path, monkeypatch: pytest.MonkeyPatch):
    from mxlint.rules.hybridization.checker import HybridizationChecker

    def boom(self: object) -> None:
        raise RuntimeError("rule bug")

    monkeypatch.setattr(HybridizationChecker, "end", boom)
    _, cache = _run(project)
    assert cache.hits == 0
    monkeypatch.undo()
    os.chdir(project)
    rows, cache = _run(project)
    assert rows == [("model.py", 7, "MXL101"), ("model.py", 9, "MXL102")]
    assert cache.misses >= 1  # the files that failed were linted again


def test_cli_writes_the_cache_and_no_cache_writes_nothing(project: Path, capsys):
    assert main(["check", "pkg", "--no-cache"]) == 1
    assert not (project / DIRNAME).exists()
    uncached = capsys.readouterr().out
    assert main(["check", "pkg"]) == 1
    cold = capsys.readouterr().out
    tag = project / DIRNAME / "CACHEDIR.TAG"
    assert tag.is_file() and (project / DIRNAME / ".gitignore").read_text().endswith("*\n")
    assert main(["check", "pkg"]) == 1
    assert capsys.readouterr().out == cold == uncached
    custom = project / "elsewhere"
    assert main(["check", "pkg", "--cache-dir", str(custom)]) == 1
    assert any(custom.glob("*.pickle"))


def test_clean_removes_the_cache_and_refuses_other_directories(project: Path, capsys):
    main(["check", "pkg"])
    assert (project / DIRNAME).is_dir()
    assert main(["clean"]) == 0
    assert not (project / DIRNAME).exists()
    assert main(["clean"]) == 0  # nothing to remove is not an error
    assert "No cache" in capsys.readouterr().err
    precious = project / "pkg"
    with pytest.raises(ValueError):
        clean(precious)
    assert main(["clean", "--cache-dir", str(precious)]) == 2
    assert (precious / "model.py").is_file()


def test_worker_processes_report_exactly_what_one_process_reports(
    fixtures_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    root = tmp_path / "fixtures"
    shutil.copytree(fixtures_dir, root)
    monkeypatch.chdir(tmp_path)
    settings = Settings(select=("ALL",), root=tmp_path)
    serial = run([Path("fixtures")], settings, jobs=1)
    parallel = run([Path("fixtures")], settings, jobs=2)
    assert serial.findings and parallel.findings == serial.findings
    assert parallel.error == serial.error
    # Workers that hand freed memory back after every file (forked: they see the patch).
    from mxlint import workers

    monkeypatch.setattr(workers, "TRIM_AFTER_BYTES", 0)
    trimmed = run([Path("fixtures")], settings, jobs=2)
    assert trimmed.findings == serial.findings
    # ... and that do so because they have grown, not because the file was large.
    monkeypatch.setattr(workers, "TRIM_AFTER_BYTES", 1 << 40)
    monkeypatch.setattr(workers, "CHECK_GROWTH_BYTES", 0)
    monkeypatch.setattr(workers, "TRIM_GROWTH_BYTES", -1)
    grown = run([Path("fixtures")], settings, jobs=2)
    assert grown.findings == serial.findings
    # Every fixture counts as large: the largest go to one lane, results still in input order.
    monkeypatch.setattr(workers, "LARGE_FILE_BYTES", 1)
    laned = run([Path("fixtures")], settings, jobs=2)
    assert laned.findings == serial.findings
    # The pool freezes what is alive for the forked workers, and thaws only what it froze.
    import gc

    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        assert run([Path("fixtures")], settings, jobs=2).findings == serial.findings
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_work_is_handed_out_before_files_without_a_cache_entry_are_hashed(
    fixtures_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`on_start` is told once, when the workers have their files and before any result; a file
    the cache holds nothing for is hashed after its lint (by the worker that linted it, of the
    bytes it read, where there are workers: this process then hashes nothing), and is a hit
    next time."""
    from mxlint import cache as cache_module
    from mxlint.workers import lint_all

    root = tmp_path / "fixtures"
    shutil.copytree(fixtures_dir / "hybridization", root)
    monkeypatch.chdir(tmp_path)
    paths = sorted(root.rglob("*.py"))
    settings = Settings(root=tmp_path)
    events: list[str] = []
    hashed = cache_module.file_key

    def file_key(data: bytes, extra: str) -> str:
        events.append("hash")
        return hashed(data, extra)

    monkeypatch.setattr(cache_module, "file_key", file_key)
    for jobs in (1, 2):
        events.clear()
        cache = Cache(tmp_path / f"cache{jobs}", "fingerprint")
        results = lint_all(
            paths,
            settings,
            jobs=jobs,
            cache=cache,
            on_start=lambda: events.append("start"),
            on_done=lambda n: events.extend(["done"] * n),
        )
        assert len(results) == len(paths)
        assert events.count("start") == 1
        if jobs == 1:
            assert events.index("start") < events.index("done") < events.index("hash")
        else:
            assert events.index("start") < events.index("done") and "hash" not in events
        assert len(cache.entries) == len(paths)
        assert all(result.key is None for _, result in cache.entries.values())
        again = lint_all(paths, settings, jobs=jobs, cache=cache)
        assert [r.findings for r in again] == [r.findings for r in results]
        assert cache.hits == len(paths)


def test_a_worker_keys_the_bytes_it_linted(
    fixtures_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key a worker sends is the hash of the bytes its lint read: a file that changes
    after it was linted is not kept under its new bytes with the old findings."""
    from mxlint import workers

    path = tmp_path / "pkg" / "train.py"
    path.parent.mkdir()
    (path.parent / "__init__.py").write_text("")
    path.write_bytes((fixtures_dir / "hybridization" / "bad" / "branch_sum.py").read_bytes())
    linted = path.read_bytes()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(workers, "_settings", Settings(select=("ALL",), root=tmp_path))
    monkeypatch.setattr(workers, "_packages", {})
    read = workers.read_regular

    def read_then_edit(p: Path) -> bytes:
        data = read(p)
        p.write_bytes(data + b"\nx = 1\n")  # edited while it is linted
        return data

    monkeypatch.setattr(workers, "read_regular", read_then_edit)
    result = workers._lint(path, keyed=True)
    assert [f.code for f, _ in result.conditional] == ["MXL107"]
    assert (
        result.key
        == workers._cache_key(path, linted, {})
        != workers._cache_key(path, path.read_bytes(), {})
    )
    assert workers._lint(path).key is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/statm")
def test_a_worker_knows_its_resident_size():
    """What the growth bound between trims reads: this process's resident bytes, which grow
    by what it touches."""
    from mxlint.workers import _resident

    before = _resident()
    held = b"\x01" * (32 * 1024 * 1024)  # written, so resident
    assert _resident() - before >= 30 * 1024 * 1024
    del held


def test_large_files_share_one_lane_within_half_a_workers_share():
    from mxlint.workers import LARGE_FILE_BYTES as big
    from mxlint.workers import plan_lanes

    small = big // 2
    sizes = [small] * 80 + [4 * big, big, 2 * big, big - 1, 3 * big]  # 51 units of `big`
    # 2 workers: the lane may hold a quarter of the bytes (12.75 units): the largest files,
    # in order of size, while they fit; a file under the threshold is never in it.
    lane, rest = plan_lanes(sizes, 2)
    assert lane == [80, 84, 82, 81]
    assert rest == [*range(80), 83]
    # 4 workers: an eighth (6.4 units); the largest file fits, the next would not.
    assert plan_lanes(sizes, 4)[0] == [80]
    # No file is large: no lane.
    assert plan_lanes([small] * 50, 2) == ([], list(range(50)))


def test_trimming_the_heap_is_harmless_where_it_is_unavailable():
    from mxlint import workers

    workers._trim()
    workers._trim()
    assert workers._malloc_trim is not None  # resolved once: glibc's function, or False


def test_jobs_option_is_checked(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check", "-j", "many", "."])
    assert exc.value.code == 2
    assert "expected a number of processes" in capsys.readouterr().err


TRAIN = (
    "from mxnet import autograd\n"
    "from .helpers import log_loss\n"
    "\n"
    "\n"
    "def train(net, loss_fn, trainer, train_data):\n"
    "    total = 0\n"
    "    for data, label in train_data:\n"
    "        with autograd.record():\n"
    "            loss = loss_fn(net(data), label)\n"
    "        loss.backward()\n"
    "        trainer.step(data.shape[0])\n"
    "        total += loss.mean()\n"
    "        log_loss(loss)\n"
    "    return total\n"
)
HELPERS = "import mxnet as mx\n\n\ndef log_loss(loss):\n    print(loss.mean().asscalar())\n"


def test_summaries_another_file_asked_for_are_cached_with_that_file(project: Path) -> None:
    (project / "pkg" / "train.py").write_text(TRAIN)
    (project / "pkg" / "helpers.py").write_text(HELPERS)
    first, cache = _run(project)
    # the helper in the other file reads the loss back: the loop synchronises, no MXL401
    assert not any(code == "MXL401" for _, _, code in first)
    summaries = cache.entries["pkg/helpers.py"][1].facts.effects  # type: ignore[union-attr]
    assert summaries["log_loss"] is not None and summaries["log_loss"].syncs
    with (project / DIRNAME / cache.file.name).open("rb") as fh:
        kept = pickle.load(fh)["entries"]["pkg/helpers.py"][1].facts.effects
    assert kept["log_loss"].syncs  # on disk, for the next run
    # A warm run answers from the cache and finds the same.
    second, warm = _run(project)
    assert second == first
    assert warm.hits == len(warm.entries)
    # A change to the helper is a new result for it: the summary is learned again.
    _touch(project / "pkg" / "helpers.py", HELPERS.replace(".mean().asscalar()", ""))
    third, changed = _run(project)
    assert ("train.py", 12, "MXL401") in third
    assert not changed.entries["pkg/helpers.py"][1].facts.effects["log_loss"].syncs  # type: ignore[union-attr]
