"""Lint many files: from the cache where possible, the rest across worker processes.

Each file is linted on its own (cross-file facts are resolved afterwards, in the parent), so
files spread over processes with no shared state; results come back in input order. Workers
cost a process start each, so a run with few files to lint stays in this process.
"""

from __future__ import annotations

import functools
import gc
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mxlint import node_init
from mxlint.engine import FileResult, lint_file
from mxlint.sources import display, module_name_for, read_regular

if TYPE_CHECKING:
    import multiprocessing.context
    from concurrent.futures import Executor

    from mxlint.cache import Cache
    from mxlint.settings import Settings

#: Below this many files to lint, starting workers costs more than it saves.
MIN_FILES_PER_WORKER = 8

_settings: Settings | None = None


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def worker_count(jobs: int, files: int) -> int:
    """Workers for `files` files at most `jobs` wide; 1 means this process does the work."""
    return max(1, min(jobs, files // MIN_FILES_PER_WORKER))


def _init(settings: Settings) -> None:
    global _settings
    _settings = settings
    node_init.install()  # a worker parses many files (inherited where forked after it ran)
    # What the worker starts with (mxlint, libcst, the rules) lives as long as it does: frozen,
    # the collections that linting triggers do not walk it again and again (a forked worker
    # inherits its parent's freeze; one from the fork server or spawned does not).
    gc.freeze()


#: Files at least this large leave the native parser's scratch memory behind (see `_trim`).
TRIM_AFTER_BYTES = 64 * 1024
#: After a smaller file (from this size), the worker trims only once it has grown this much
#: since its last trim. What glibc keeps after a mid-size file is mostly what the next parse
#: takes again: trimming after each one made those parses fault their pages back in (gluon-cv,
#: two workers: 240k page faults; trimming only after the largest files: 46k, 7 % less time,
#: but 5-8 MB more peak memory; with this bound: 66-69k, and the peak of trimming after each).
CHECK_GROWTH_BYTES = 16 * 1024
TRIM_GROWTH_BYTES = 16 * 1024 * 1024
_malloc_trim: Callable[[int], int] | None | bool = None
#: The worker's resident size after its last trim (0: not trimmed yet).
_trimmed_at = 0


#: Module names of the folders a worker has seen (`module_name_for`'s memo, for cache keys).
_packages: dict[Path, list[str]] = {}


def _lint(path: Path, keyed: bool = False, facts_only: bool = False) -> FileResult:
    """`keyed`: with the results cache's key of the bytes linted (`FileResult.key`), hashed
    here beside the other workers instead of read and hashed again by the parent after them.
    `facts_only`: see `engine.lint_source`."""
    global _trimmed_at
    assert _settings is not None
    try:
        data: bytes | None = read_regular(path)
    except OSError:
        data = None  # lint_file reports why it cannot be read
    result = lint_file(path, _settings, data, facts_only=facts_only)
    if keyed and data is not None:
        result.key = _cache_key(path, data, _packages)
    size = 0 if data is None else len(data)
    if size >= TRIM_AFTER_BYTES or (
        size >= CHECK_GROWTH_BYTES and _resident() - _trimmed_at > TRIM_GROWTH_BYTES
    ):
        _trim()
        _trimmed_at = _resident()
    return result


def _resident() -> int:
    """This process's resident bytes (0 where /proc cannot tell: then only large files trim)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            pages = int(fh.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0


def _trim() -> None:
    """Return freed heap memory to the system. libcst's native parser allocates tens of
    megabytes of scratch memory on a large file; glibc keeps it after it is freed, so every
    worker would stay at the size of the largest file it has seen (peak memory is the sum over
    the workers)."""
    global _malloc_trim
    if _malloc_trim is None:
        _malloc_trim = False
        if sys.platform == "linux":
            import ctypes
            import ctypes.util

            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                _malloc_trim = libc.malloc_trim
            except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
                pass
    if _malloc_trim:
        _malloc_trim(0)  # type: ignore[operator]


def _context(threaded: bool = False) -> multiprocessing.context.BaseContext:
    """fork starts a worker in milliseconds with mxlint already imported; elsewhere, spawn. A
    process with threads of its own (the language server) must not fork: a forked child inherits
    the locks other threads held at the fork, and can wait on them forever. It forks from the
    single-threaded fork server instead, started the first time it is needed (its first workers
    wait for its imports; later ones fork from it ready)."""
    import multiprocessing

    if sys.platform == "linux" and not threaded:
        return multiprocessing.get_context("fork")
    start_forkserver()
    if _forkserver_warm:
        return multiprocessing.get_context("forkserver")
    return multiprocessing.get_context("spawn")


_forkserver_warm = False


def start_forkserver() -> None:
    """Start the fork server now, importing mxlint and every rule module in it, so that the
    workers of a threaded process (the language server) fork ready from it instead of each
    importing mxlint again. It is started as a new program (fork and exec), which a process
    with threads may do; its imports run beside the caller's work."""
    global _forkserver_warm
    if sys.platform != "linux" or _forkserver_warm:
        return
    import multiprocessing
    import multiprocessing.forkserver

    from mxlint.registry import rule_module_names

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["mxlint.workers", *rule_module_names()])
    try:
        multiprocessing.forkserver.ensure_running()
    except OSError:  # no processes here: spawn stays the way
        return
    _forkserver_warm = True


def fork_pool(settings: Settings, jobs: int) -> Executor | None:
    """Workers forked now, with `settings`, for `lint_all(pool=...)` to use later: a process
    that is about to start threads (the language server) forks them while it has none, so
    they start in milliseconds with mxlint imported instead of importing it again each.
    None where processes cannot be forked (then `lint_all` starts its own, or none)."""
    if sys.platform != "linux" or jobs < 2:
        return None
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    thaw = gc.get_freeze_count() == 0
    gc.freeze()  # shared with the workers, left alone by their collections (see `lint_many`)
    try:
        pool = ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_init,
            initargs=(settings,),
        )
        pool.submit(os.getpid)  # the first task forks every worker, before any thread starts
    except OSError:  # no processes here
        return None
    finally:
        if thaw:
            gc.unfreeze()
    return pool


#: Files this large take tens of megabytes each while they are parsed (libcst builds the whole
#: tree at once). Two of them at the same time in two workers make the run's peak memory.
LARGE_FILE_BYTES = 64 * 1024


def plan_lanes(sizes: Sequence[int], jobs: int) -> tuple[list[int], list[int]]:
    """Split file indices into one lane of large files, linted one after another by a single
    worker, and the rest, spread over all workers.

    Peak memory is the sum over the workers, so it is set by the large files that happen to be
    parsed at the same time; in one lane, at most one is. The lane takes the largest files first
    and stops at half of one worker's share of the bytes, so it never becomes the run's long
    pole: the other workers share everything else meanwhile."""
    budget = sum(sizes) // (2 * jobs)
    lane: list[int] = []
    used = 0
    for index in sorted(range(len(sizes)), key=sizes.__getitem__, reverse=True):
        size = sizes[index]
        if size < LARGE_FILE_BYTES or used + size > budget:
            break
        lane.append(index)
        used += size
    taken = set(lane)
    return lane, [i for i in range(len(sizes)) if i not in taken]


def _lint_lane(
    paths: Sequence[Path], keyed: bool = False, facts_only: bool = False
) -> list[FileResult]:
    return [_lint(p, keyed, facts_only) for p in paths]


def _sizes(paths: Sequence[Path]) -> list[int]:
    sizes = []
    for path in paths:
        try:
            sizes.append(os.stat(path).st_size)
        except OSError:
            sizes.append(0)  # lint_file reports why it cannot be read
    return sizes


#: Told how many more files are done (a progress indicator's `advance`).
OnDone = Callable[[int], None]


def _ignore(_n: int) -> None:
    pass


def _nothing() -> None:
    pass


def lint_many(
    paths: Sequence[Path],
    settings: Settings,
    jobs: int,
    contents: Sequence[bytes | None] | None = None,
    sizes: Sequence[int] | None = None,
    *,
    threaded: bool = False,
    on_done: OnDone = _ignore,
    pool: Executor | None = None,
    on_start: Callable[[], None] = _nothing,
    keyed: bool = False,
    facts_only: bool = False,
) -> list[FileResult]:
    """`contents`: the files' bytes where already read; used in this process (workers read
    their files themselves: cheaper than sending the bytes over a pipe). `sizes`: the files'
    sizes where known, to plan the workers' lanes. `on_done` is told of each file done.
    `pool`: workers started earlier (`fork_pool`, with the same settings) to use instead of
    starting new ones; the caller shuts it down. `on_start` is called once the work is handed
    out (to the workers, or about to start in this process), from this thread. `keyed`:
    workers set `FileResult.key` (files linted in this process are left to the caller).
    `facts_only`: files are read for their cross-file facts only (`engine.lint_source`)."""
    if len(paths) >= MIN_FILES_PER_WORKER:
        node_init.install()  # before workers fork: they have it too
    jobs = worker_count(jobs, len(paths))
    if jobs == 1:
        on_start()
        data_of = contents if contents is not None else [None] * len(paths)
        out = []
        for p, data in zip(paths, data_of):
            out.append(lint_file(p, settings, data, facts_only=facts_only))
            on_done(1)
        return out
    lane, rest = plan_lanes(_sizes(paths) if sizes is None else sizes, jobs)
    # Small chunks keep the workers busy to the end when file sizes vary a lot.
    chunksize = max(1, min(16, len(rest) // (jobs * 8)))
    results: dict[int, FileResult] = {}
    started: list[bool] = []

    def spread(workers: Executor) -> list[FileResult]:
        # Submitted first, so one worker starts on it while the others take the rest.
        large = workers.submit(_lint_lane, [paths[i] for i in lane], keyed, facts_only)
        lint = functools.partial(_lint, keyed=keyed, facts_only=facts_only)
        others = workers.map(lint, [paths[i] for i in rest], chunksize=chunksize)
        started.append(True)
        on_start()
        for index, result in zip(rest, others):
            results[index] = result
            on_done(1)
        results.update(zip(lane, large.result()))
        on_done(len(lane))
        return [results[i] for i in range(len(paths))]

    # Objects alive now (mxlint, libcst) are shared with the forked workers; frozen, the
    # workers' garbage collections leave them alone instead of copying the pages they are on.
    # A process that froze its own start-up (the mxlint command) stays frozen afterwards.
    thaw = pool is None and gc.get_freeze_count() == 0
    if pool is None:
        gc.freeze()
    try:
        if pool is not None:
            return spread(pool)
        from concurrent.futures import ProcessPoolExecutor  # not needed by one-file runs

        with ProcessPoolExecutor(
            max_workers=jobs, mp_context=_context(threaded), initializer=_init, initargs=(settings,)
        ) as workers:
            return spread(workers)
    except (OSError, RuntimeError):
        # No processes here (sandboxes, a broken pool): the same work, in this process,
        # told as done only past the files already told.
        if not started:
            on_start()
        told = len(results)
        out = []
        for p in paths:
            out.append(lint_file(p, settings, facts_only=facts_only))
            if told:
                told -= 1
            else:
                on_done(1)
        return out
    finally:
        if thaw:
            gc.unfreeze()


def lint_all(
    paths: Sequence[Path],
    settings: Settings,
    *,
    jobs: int | None = None,
    cache: Cache | None = None,
    threaded: bool = False,
    on_done: OnDone = _ignore,
    pool: Executor | None = None,
    on_start: Callable[[], None] = _nothing,
    facts_only: bool = False,
) -> list[FileResult]:
    """One result per path, in order; cached results for unchanged files. `threaded`: the
    calling process runs other threads (workers are then spawned, never forked). `on_done` is
    told of the files done, cached or linted, as they are. `pool`, `on_start`, `facts_only`:
    see `lint_many` (with `facts_only`, a whole result the cache holds serves as well)."""
    jobs = default_jobs() if jobs is None or jobs < 1 else jobs
    if cache is None:
        return lint_many(
            paths,
            settings,
            jobs,
            threaded=threaded,
            on_done=on_done,
            pool=pool,
            on_start=on_start,
            facts_only=facts_only,
        )
    results: list[FileResult | None] = [None] * len(paths)
    # (index, shown, key, bytes): a key of None is computed after the lint (see below).
    todo: list[tuple[int, str, str | None, bytes | None]] = []
    packages: dict[Path, list[str]] = {}
    for index, path in enumerate(paths):
        shown = display(path)
        if shown not in cache.entries:
            # Nothing kept for it: linted whatever it holds and hashed as it is linted (by
            # the worker, of the bytes it read), so that on an empty cache the workers start
            # at once instead of after every file is read here.
            cache.misses += 1
            todo.append((index, shown, None, None))
            continue
        try:
            data = read_regular(path)
        except OSError:
            todo.append((index, shown, "", None))  # lint_file reports why it cannot be read
            continue
        key = _cache_key(path, data, packages)
        found = cache.get(shown, key, facts_only=facts_only)
        if found is not None:
            results[index] = found
        else:
            todo.append((index, shown, key, data))
    on_done(len(paths) - len(todo))
    contents: list[bytes | None] | None = [data for _, _, _, data in todo]
    sizes = (
        None
        if any(key is None for _, _, key, _ in todo)
        else [0 if data is None else len(data) for _, _, _, data in todo]
    )
    if worker_count(jobs, len(todo)) > 1:
        # Workers read their files themselves: the bytes need not stay here meanwhile.
        todo = [(index, shown, key, None) for index, shown, key, _ in todo]
        contents = None
    fresh = lint_many(
        [paths[i] for i, _, _, _ in todo],
        settings,
        jobs,
        contents,
        sizes,
        threaded=threaded,
        on_done=on_done,
        pool=pool,
        on_start=on_start,
        keyed=True,
        facts_only=facts_only,
    )
    for (index, shown, known, _), result in zip(todo, fresh):
        results[index] = result
        linted_key, result.key = result.key, None
        if known is None:
            known = linted_key
        if known is None:  # linted in this process: read again
            try:
                data = read_regular(paths[index])
            except OSError:
                continue  # gone meanwhile: nothing to keep
            known = _cache_key(paths[index], data, packages)
        if known:
            cache.put(shown, known, result)
    return [r for r in results if r is not None]


def _cache_key(path: Path, data: bytes, packages: dict[Path, list[str]]) -> str:
    """The results cache's key of a file: its bytes and the module name it is read as."""
    from mxlint.cache import file_key

    module, is_package = module_name_for(path, packages)
    return file_key(data, f"{module}:{is_package}")
