"""Command line: `mxlint check`, `mxlint rule`. Exit codes: 0 clean, 1 findings, 2 error.

`mxlint PATH` is short for `mxlint check PATH`. Machine formats (json, sarif, github) put only
their document on stdout; summaries and warnings go to stderr. A clean run's text report is
`All checks passed!` (on stdout, as Ruff's); `--quiet` leaves the findings alone.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mxlint import __version__, registry
from mxlint.config import (
    ConfigError,
    Settings,
    find_config,
    load_settings,
    parse_mxnet_version,
    validate_codes,
)
from mxlint.output import ENV_VAR, FORMATS, MACHINE_FORMATS, render, render_statistics
from mxlint.rule import Finding, applicable, rule_url
from mxlint.style import COLOR_MODES, PLAIN, Style, color_enabled

if TYPE_CHECKING:
    from mxlint.cache import Cache
    from mxlint.progress import FileProgress

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
#: The text report of a run with nothing to report (and nothing fixed).
ALL_PASSED = "All checks passed!"
#: Said (on stderr) when the paths given hold no file mxlint reads.
NOTHING_TO_CHECK = (
    "no files to check under the given path(s): mxlint reads Python files, notebooks, "
    "dependency files (requirements, pyproject.toml, setup.py, conda environments), "
    "Dockerfiles and launch scripts"
)


def _codes(value: str) -> list[str]:
    return [c.strip().upper() for c in value.split(",") if c.strip()]


def _globs(value: str) -> list[str]:
    return [c.strip() for c in value.split(",") if c.strip()]


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("rule selection (override the configuration)")
    group.add_argument(
        "--select",
        type=_codes,
        default=None,
        help="comma-separated codes or prefixes to enable (replaces config)",
    )
    group.add_argument(
        "--extend-select", type=_codes, default=None, help="codes or prefixes to enable in addition"
    )
    group.add_argument("--ignore", type=_codes, default=None, help="codes or prefixes to disable")
    group.add_argument(
        "--exclude",
        type=_globs,
        default=None,
        help="glob patterns to skip (replaces config and defaults)",
    )
    group.add_argument(
        "--extend-exclude", type=_globs, default=None, help="glob patterns to skip in addition"
    )
    group.add_argument(
        "--respect-gitignore",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="leave out the files git ignores under a directory (default: yes)",
    )
    group.add_argument(
        "--force-exclude",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="apply the excludes (and .gitignore) to paths named on the command line too, "
        "as pre-commit hooks need (default: no, a named path is always checked)",
    )
    group.add_argument("--mxnet-version", default=None, help="target MXNet line: 1.9 or 2.0")
    group.add_argument(
        "--entry-point",
        action="append",
        default=None,
        dest="entry_points",
        help="script treated as a program by reproducibility rules (repeatable)",
    )
    group.add_argument(
        "--config", type=Path, default=None, help="explicit mxlint.toml or pyproject.toml"
    )
    group.add_argument("--isolated", action="store_true", help="ignore all configuration files")


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("output")
    group.add_argument(
        "--output-format", choices=FORMATS, default=None, help=f"default: concise, or ${ENV_VAR}"
    )
    group.add_argument(
        "-o",
        "--output-file",
        type=Path,
        default=None,
        help="write the report to this file instead of stdout",
    )
    group.add_argument(
        "--statistics",
        action="store_true",
        help="print the number of findings per rule instead of the findings",
    )
    group.add_argument("--exit-zero", action="store_true", help="exit 0 even if there are findings")
    group.add_argument(
        "--color",
        choices=COLOR_MODES,
        default="auto",
        help="colour the text formats (default auto: when stdout is a terminal, "
        "unless $NO_COLOR is set, or $FORCE_COLOR is)",
    )
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print the findings only: no summary, no `All checks passed!`",
    )


def add_fix_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("fixes")
    group.add_argument("--fix", action="store_true", help="apply safe fixes")
    group.add_argument(
        "--unsafe-fixes", action="store_true", help="with --fix or --diff, also apply unsafe fixes"
    )
    group.add_argument(
        "--diff", action="store_true", help="print the diff the fixes would make and write nothing"
    )
    group.add_argument(
        "--add-noqa",
        action="store_true",
        help="add a `# noqa: CODE` directive for every finding, as each kind of file reads it",
    )
    group.add_argument("--pre-commit", action="store_true", help=argparse.SUPPRESS)


def _jobs(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes, got `{value}`") from None
    if n < 0:
        raise argparse.ArgumentTypeError("expected 0 (one per core) or more")
    return n


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("run")
    group.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        default=0,
        help="worker processes (default 0: one per core; 1: no workers)",
    )
    group.add_argument(
        "--no-cache",
        action="store_true",
        help="read and write no cache (default: .mxlint_cache/ at the project root)",
    )
    group.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="cache directory (default: .mxlint_cache, or $MXLINT_CACHE_DIR)",
    )
    group.add_argument(
        "--show-settings",
        action="store_true",
        help="print the configuration file used and the settings in effect, then exit",
    )
    group.add_argument(
        "--show-files",
        action="store_true",
        help="print the files that would be checked, then exit",
    )


def terminal_columns() -> int:
    """The terminal's width as `shutil.get_terminal_size()` gives it ($COLUMNS, else the
    terminal of stdout, else 80), without loading shutil (and bz2, lzma and zlib with it)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, which asks shutil for the terminal's width on every
    `add_argument`: the same width, asked of `terminal_columns`."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        width = terminal_columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)


class RawDescriptionHelpFormatter(argparse.RawDescriptionHelpFormatter, HelpFormatter):
    pass


class SubcommandParser(argparse.ArgumentParser):
    """A subcommand's parser: `HelpFormatter` unless another is given."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(**kwargs)


def build_parser() -> argparse.ArgumentParser:
    with _translated_once():
        return _build_parser()


@contextmanager
def _translated_once() -> Iterator[None]:
    """argparse translates the same three headings for each of the six parsers, and `gettext`
    looks for message catalogues on disk on every call (a millisecond of every start): within
    the block each message is translated once, by the function argparse would call."""
    translate = vars(argparse).get("_")
    if not callable(translate):
        yield
        return
    argparse._ = functools.cache(translate)  # type: ignore[attr-defined]
    try:
        yield
    finally:
        argparse._ = translate  # type: ignore[attr-defined]


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mxlint", description=__doc__, formatter_class=RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"mxlint {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=SubcommandParser)

    check = sub.add_parser("check", help="lint files and directories (default: .)")
    check.add_argument(
        "paths", nargs="*", type=Path, help="files or directories; `-` reads one from stdin"
    )
    check.add_argument(
        "--stdin-filename",
        type=Path,
        default=None,
        help="the name of the file read from stdin (`-`): for the report and its settings",
    )
    add_selection_arguments(check)
    add_output_arguments(check)
    add_fix_arguments(check)
    add_run_arguments(check)
    from mxlint.verify.cli import add_doctor_parser, add_verify_arguments

    add_verify_arguments(check)

    clean = sub.add_parser("clean", help="remove the cache (.mxlint_cache) of a project")
    clean.add_argument(
        "paths", nargs="*", type=Path, help="project directories (default: the current one)"
    )
    clean.add_argument("--cache-dir", type=Path, default=None, help="the cache directory to remove")

    rule = sub.add_parser("rule", help="show a rule's documentation")
    rule.add_argument("code", nargs="?")
    rule.add_argument("--all", action="store_true", help="list every rule")
    rule.add_argument("--output-format", choices=("text", "json"), default="text")
    add_doctor_parser(sub)
    sub.add_parser(
        "server",
        help="run the language server (LSP over stdio) for editors",
        description="Language server on stdin/stdout: diagnostics as `mxlint check` at the "
        "workspace root reports them (cross-file ones too), quick fixes, `# noqa` actions and "
        "fix-all. Started by the editor, not by hand.",
    )
    return parser


def load_cli_settings(args: argparse.Namespace) -> Settings:
    """Configuration found from the first path (or --config), then CLI overrides."""
    paths = getattr(args, "paths", None) or []
    if args.isolated:
        settings = load_settings(None)
    else:
        start = paths[0] if paths else Path.cwd()
        if _reads_stdin(paths):
            stdin_name = getattr(args, "stdin_filename", None)
            start = stdin_name.resolve().parent if stdin_name is not None else Path.cwd()
        if args.config is not None and not args.config.is_file():
            raise ConfigError(f"--config: {args.config}: no such file")
        settings = load_settings(args.config or find_config(start))
    for attr in ("select", "extend_select", "ignore"):
        value = getattr(args, attr)
        if value is None:
            continue
        validate_codes(value, f"--{attr.replace('_', '-')}")
        if attr == "ignore":
            settings.ignore = settings.ignore + tuple(value)
        elif attr == "extend_select":
            settings.extend_select = settings.extend_select + tuple(value)
        else:
            settings.select = tuple(value)
    if args.exclude is not None:
        settings.exclude = tuple(args.exclude)
    if args.extend_exclude:
        settings.extend_exclude = settings.extend_exclude + tuple(args.extend_exclude)
    if args.respect_gitignore is not None:
        settings.respect_gitignore = args.respect_gitignore
    if args.force_exclude is not None:
        settings.force_exclude = args.force_exclude
    if args.entry_points:
        settings.entry_points = settings.entry_points + tuple(args.entry_points)
    if args.mxnet_version:
        settings.mxnet_version = parse_mxnet_version(args.mxnet_version)
    return settings


def _output_format(args: argparse.Namespace) -> str:
    if args.output_format:
        return str(args.output_format)
    env = os.environ.get(ENV_VAR, "").strip().lower()
    if env:
        if env not in FORMATS:
            raise ConfigError(
                f"${ENV_VAR}: unknown output format `{env}` (expected one of: {', '.join(FORMATS)})"
            )
        return env
    return "concise"


def _emit(text: str, args: argparse.Namespace) -> None:
    if args.output_file is not None:
        args.output_file.parent.mkdir(parents=True, exist_ok=True)
        args.output_file.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def _note(message: str) -> None:
    print(message, file=sys.stderr)


def _report_style(args: argparse.Namespace, fmt: str) -> Style:
    """Colour for the report on stdout: text formats only, never into `-o FILE`."""
    if fmt in MACHINE_FORMATS or args.output_file is not None:
        return PLAIN
    return Style(color_enabled(args.color, sys.stdout))


def _stderr_style(args: argparse.Namespace) -> Style:
    return Style(color_enabled(getattr(args, "color", "never"), sys.stderr))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def cmd_check(args: argparse.Namespace) -> int:

    try:
        settings = load_cli_settings(args)
        fmt = _output_format(args)
    except ConfigError as exc:
        _note(f"mxlint: error: {exc}")
        return EXIT_ERROR
    from mxlint.verify.cli import usage_error

    problem = usage_error(args)
    if problem:
        _note(f"mxlint: error: {problem}")
        return EXIT_ERROR
    if args.pre_commit and not args.paths:
        return EXIT_CLEAN  # a hook run with no matching files has nothing to check
    if getattr(args, "show_settings", False):
        _emit(_settings_text(settings), args)
        return EXIT_CLEAN
    if _reads_stdin(args.paths):
        return _check_stdin(args, settings, fmt)
    if any(str(p) == "-" for p in args.paths):
        _note("mxlint: error: `-` (stdin) cannot be combined with other paths")
        return EXIT_ERROR
    paths = args.paths or [Path(".")]
    missing = [p for p in paths if not p.exists() and not p.is_symlink()]
    if missing:
        for p in missing:
            _note(f"mxlint: error: {p}: no such file or directory")
        return EXIT_ERROR
    if getattr(args, "show_files", False):
        from mxlint import sources

        python, text = sources.discover(paths, settings)
        _emit("".join(f"{sources.display(p)}\n" for p in sorted({*python, *text})), args)
        return EXIT_CLEAN

    if args.add_noqa:
        from mxlint.add_noqa import add_noqa_paths

        noqa = add_noqa_paths(paths, settings, jobs=args.jobs)
        for name, why in noqa.skipped:
            _note(f"mxlint: warning: {name}: not modified ({why})")
        for finding, why in noqa.refused:
            _note(f"mxlint: warning: {_where(finding)}: {finding.code} not suppressed: {why}")
        if not args.quiet:
            _note(f"Added {_plural(noqa.added, 'noqa directive')}.")
        return EXIT_FINDINGS if noqa.refused and not args.exit_zero else EXIT_CLEAN

    from mxlint.progress import progress_for

    progress = progress_for(sys.stderr, args.quiet)
    try:
        return _check_paths(args, settings, fmt, paths, progress)
    finally:
        if progress is not None:
            progress.close()


def _check_paths(
    args: argparse.Namespace,
    settings: Settings,
    fmt: str,
    paths: list[Path],
    progress: FileProgress | None,
) -> int:
    """Lint, fix or diff `paths` and report; `progress` is closed before anything is printed."""
    from mxlint.runner import run

    def done() -> None:
        if progress is not None:
            progress.close()

    if args.diff:
        from mxlint import fix_run  # the fix machinery loads only for --fix and --diff

        cache = _cache_for(args, settings)
        report = fix_run.fix_paths(
            paths,
            settings,
            unsafe=args.unsafe_fixes,
            write=False,
            jobs=args.jobs,
            cache=cache,
            progress=progress,
        )
        done()
        if cache is not None:
            cache.save()
        _emit("".join(fix_run.unified_diff(f) for f in report.fixed), args)
        line = diff_summary(report.count, report.remaining, args.unsafe_fixes)
        if line is not None and not args.quiet:
            _note(line)
        if report.error:
            return EXIT_ERROR
        if args.exit_zero:
            return EXIT_CLEAN
        return EXIT_FINDINGS if (report.fixed or report.remaining) else EXIT_CLEAN

    fixed = 0
    cache = _cache_for(args, settings)
    if args.fix:
        from mxlint import fix_run

        report = fix_run.fix_paths(
            paths,
            settings,
            unsafe=args.unsafe_fixes,
            write=True,
            jobs=args.jobs,
            cache=cache,
            progress=progress,
        )
        done()
        for name, why in report.skipped:
            _note(f"mxlint: warning: {name}: not fixed ({why})")
        findings, error, fixed = report.remaining, report.error, report.count
    else:
        result = run(paths, settings, jobs=args.jobs, cache=cache, progress=progress)
        done()
        findings, error = result.findings, result.error
        if result.files_checked == 0 and not args.quiet:
            # As Ruff says it: a path that holds nothing mxlint reads is likely a mistake.
            _note(f"mxlint: warning: {NOTHING_TO_CHECK}")
    if cache is not None:
        cache.save()

    verify_table = ""
    if getattr(args, "verify", False):
        from mxlint.verify.cli import run_verify
        from mxlint.verify.isolation import SandboxUnavailable

        try:
            verify_table = run_verify(args, findings, paths, settings)
        except SandboxUnavailable as exc:
            _note(f"mxlint: error: the sandbox asked for does not work here: {exc}")
            return EXIT_ERROR
    return _report(args, fmt, findings, fixed=fixed, error=error, verify_table=verify_table)


def _report(
    args: argparse.Namespace,
    fmt: str,
    findings: Sequence[Finding],
    *,
    fixed: int = 0,
    error: bool = False,
    verify_table: str = "",
) -> int:
    """Print a run's findings (or statistics) and summary; the exit code."""
    human = fmt not in MACHINE_FORMATS
    style = _report_style(args, fmt)
    if args.statistics:
        _emit(render_statistics(findings, fmt, unsafe=args.unsafe_fixes, style=style), args)
    else:
        report_text = render(fmt, findings, unsafe=args.unsafe_fixes, style=style)
        if human:
            report_text += verify_table
            if not (findings or fixed or error or args.quiet):
                # Part of the report, as Ruff prints it.
                report_text += f"{style.passed(ALL_PASSED)}\n"
        _emit(report_text, args)
    if (human or args.output_file is not None) and not args.quiet:
        _summary(findings, fixed, args)
    if error:
        return EXIT_ERROR
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if findings else EXIT_CLEAN


def _where(f: Finding) -> str:
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    return f"{f.filename}:{cell}{f.location.row}:{f.location.column}"


def _settings_text(settings: Settings) -> str:
    """What `--show-settings` prints: where the configuration came from and what is in effect."""
    enabled = [code for code, rule in registry.all_rules().items() if settings.code_enabled(rule)]
    lines = [
        f"config file: {settings.source if settings.source is not None else '(none: defaults)'}",
        f"root: {settings.root}",
        f"select: {list(settings.select) if settings.select is not None else '(defaults)'}",
        f"extend-select: {list(settings.extend_select)}",
        f"ignore: {list(settings.ignore)}",
        f"per-file-ignores: {dict(settings.per_file_ignores)}",
        f"exclude: {list(settings.exclude)}",
        f"extend-exclude: {list(settings.extend_exclude)}",
        f"respect-gitignore: {str(settings.respect_gitignore).lower()}",
        f"force-exclude: {str(settings.force_exclude).lower()}",
        f"mxnet-version: {settings.mxnet_version or '(inferred per file)'}",
        f"entry-points: {list(settings.entry_points)}",
        f"enabled rules ({len(enabled)}): {' '.join(enabled)}",
    ]
    return "\n".join(lines) + "\n"


def _reads_stdin(paths: Sequence[Path] | None) -> bool:
    return paths is not None and len(paths) == 1 and str(paths[0]) == "-"


def _check_stdin(args: argparse.Namespace, settings: Settings, fmt: str) -> int:
    """`mxlint check -`: lint (or fix, or diff) the source piped in, under `--stdin-filename`."""
    from mxlint import fix_run, stdin
    from mxlint.sources import is_force_excluded

    name = stdin.name_of(args.stdin_filename)
    if (args.fix or args.diff) and name.endswith(".ipynb"):
        _note("mxlint: error: --fix and --diff read a notebook from a file, not from stdin")
        return EXIT_ERROR
    if args.add_noqa or getattr(args, "verify", False):
        _note("mxlint: error: --add-noqa and --verify need files, not stdin")
        return EXIT_ERROR
    data = stdin.read()
    if (
        settings.force_exclude
        and args.stdin_filename is not None
        and is_force_excluded(args.stdin_filename, settings)
    ):
        # As Ruff: an excluded file is not checked; --fix hands its source back unchanged.
        if args.fix and not args.diff:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        return EXIT_CLEAN
    result = stdin.lint_stdin(data, name, settings)
    if args.fix or args.diff:
        fixed = stdin.fix_stdin(result, name, settings, args.unsafe_fixes)
        if args.diff:
            change = stdin.diff(result, fixed, name)
            _emit(fix_run.unified_diff(change) if change is not None else "", args)
            line = diff_summary(fixed.fixed, fixed.findings, args.unsafe_fixes)
            if line is not None and not args.quiet:
                _note(line)
            if result.error:
                return EXIT_ERROR
            if args.exit_zero:
                return EXIT_CLEAN
            return EXIT_FINDINGS if (change is not None or fixed.findings) else EXIT_CLEAN
        # As Ruff: the fixed source on stdout, what remains reported on stderr.
        sys.stdout.write(
            fixed.fixed_text if fixed.fixed_text is not None else (result.source or "")
        )
        sys.stdout.flush()
        style = _stderr_style(args) if fmt not in MACHINE_FORMATS else PLAIN
        remaining = render(fmt, fixed.findings, unsafe=args.unsafe_fixes, style=style)
        if remaining:
            sys.stderr.write(remaining)
        if not args.quiet:
            _summary(fixed.findings, fixed.fixed, args)
        if fixed.error:
            return EXIT_ERROR
        return EXIT_CLEAN if args.exit_zero or not fixed.findings else EXIT_FINDINGS
    return _report(args, fmt, result.findings, error=result.error)


def _cache_for(args: argparse.Namespace, settings: Settings) -> Cache | None:
    if args.no_cache:
        return None
    from mxlint.cache import Cache, default_dir

    return Cache.load(args.cache_dir or default_dir(settings), settings)


def cmd_clean(args: argparse.Namespace) -> int:
    from mxlint.cache import DIRNAME, ENV_VAR, clean

    if args.cache_dir is not None:
        targets = [args.cache_dir]
    elif os.environ.get(ENV_VAR, "").strip():
        targets = [Path(os.environ[ENV_VAR].strip())]
    else:
        targets = [p / DIRNAME for p in (args.paths or [Path(".")])]
    for target in targets:
        try:
            removed = clean(target)
        except (OSError, ValueError) as exc:
            _note(f"mxlint: error: {exc}")
            return EXIT_ERROR
        _note(f"Removed {target}" if removed else f"No cache at {target}")
    return EXIT_CLEAN


def _fix_counts(findings: Sequence[Finding], unsafe: bool) -> tuple[int, int]:
    """(findings `--fix` fixes with these flags, findings only `--unsafe-fixes` would fix)."""
    fixable = sum(1 for f in findings if applicable(f, unsafe))
    hidden = 0 if unsafe else sum(1 for f in findings if applicable(f, True)) - fixable
    return fixable, hidden


def _fixes(n: int) -> str:
    return "1 hidden fix" if n == 1 else f"{n} hidden fixes"


def fix_hint(findings: Sequence[Finding], unsafe: bool, marker: str = "[*]") -> str | None:
    """Ruff's line on what `--fix` would do with `findings`, or None when nothing is fixable;
    `marker`: the `[*]`, coloured or not."""
    fixable, hidden = _fix_counts(findings, unsafe)
    option = "the `--fix --unsafe-fixes` options" if unsafe else "the `--fix` option"
    if fixable and hidden:
        return (
            f"{marker} {fixable} fixable with {option} ({_fixes(hidden)} can be enabled with the "
            "`--unsafe-fixes` option)."
        )
    if fixable:
        return f"{marker} {fixable} fixable with {option}."
    if hidden:
        return f"No fixes available ({_fixes(hidden)} can be enabled with the `--unsafe-fixes` option)."
    return None


def diff_summary(fixed: int, remaining: Sequence[Finding], unsafe: bool) -> str | None:
    """Ruff's line after `--diff`: how many findings `--fix` would fix (the same count the
    report's `[*] N fixable` line gives), and those only `--unsafe-fixes` would."""
    _, hidden = _fix_counts(remaining, unsafe)
    more = f"{hidden} additional fix{'' if hidden == 1 else 'es'} available with `--unsafe-fixes`"
    if fixed:
        return f"Would fix {_plural(fixed, 'error')}" + (f" ({more})." if hidden else ".")
    if hidden:
        return f"No errors would be fixed ({hidden} fix{'' if hidden == 1 else 'es'} available with `--unsafe-fixes`)."
    return None


def _summary(findings: Sequence[Finding], fixed: int, args: argparse.Namespace) -> None:
    n = len(findings)
    if fixed:
        _note(f"Found {_plural(n + fixed, 'error')} ({fixed} fixed, {n} remaining).")
    elif n:
        _note(f"Found {_plural(n, 'error')}.")
    hint = fix_hint(findings, args.unsafe_fixes, _stderr_style(args).fix_marker)
    if hint is not None:
        _note(hint)


def cmd_rule(args: argparse.Namespace) -> int:
    import json

    rules = registry.all_rules()
    if args.all or not args.code:
        if args.output_format == "json":
            data = [
                {
                    "code": c,
                    "name": r.name,
                    "summary": r.summary(),
                    "family": r.family(),
                    "default_enabled": r.default_enabled,
                    "fixable": r.fixable,
                    "mxnet": r.mxnet,
                    "kind": r.kind,
                    "url": rule_url(c),
                }
                for c, r in rules.items()
            ]
            sys.stdout.write(json.dumps(data, indent=2) + "\n")
            return EXIT_CLEAN
        for code, rule in rules.items():
            state = "" if rule.default_enabled else " (off by default)"
            fix = " [*]" if rule.fixable else ""
            print(f"{code}  {rule.name:<34} {rule.summary()}{fix}{state}")
        return EXIT_CLEAN
    found = rules.get(args.code.upper())
    if found is None:
        _note(f"mxlint: error: unknown rule code `{args.code}`")
        return EXIT_ERROR
    if args.output_format == "json":
        sys.stdout.write(
            json.dumps(
                {"code": found.code, "name": found.name, "documentation": found.documentation()},
                indent=2,
            )
            + "\n"
        )
    else:
        sys.stdout.write(found.documentation())
    return EXIT_CLEAN


def cmd_doctor(args: argparse.Namespace) -> int:
    from mxlint.verify.doctor import run_doctor

    return run_doctor(args.output_format)


def cmd_server(args: argparse.Namespace) -> int:
    from mxlint.server_boot import boot

    started = boot()  # the early index runs while the protocol library imports
    from mxlint.codegen_cache import attrs_code_cache

    with attrs_code_cache():  # the protocol's classes, built with attrs
        from mxlint.server import main as serve
    gc.freeze()  # what the server has imported lives as long as it does (see `_tune_gc`)
    return serve(started)


#: Subcommand name -> handler. Other subcommands register here and in `build_parser`.
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "check": cmd_check,
    "rule": cmd_rule,
    "doctor": cmd_doctor,
    "clean": cmd_clean,
    "server": cmd_server,
}


def _tune_gc() -> None:
    """Fewer cyclic collections: a lint builds and drops a tree of tens of thousands of
    (acyclic, refcount-freed) nodes per file, and the default thresholds collect every 700
    allocations, scanning the young trees again and again (about a tenth of a run). What is
    loaded by now stays for the run and is left out of the scans. Only for a process of its
    own: `main` also runs inside other programs (tests, tools that call it). The collector is
    turned on here if start-up turned it off (`mxlint.launch`) while loading."""
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    gc.enable()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version"):
        argv.insert(0, "check")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_ERROR
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_ERROR


def entry() -> int:
    """`main` in a process of its own (the `mxlint` command, through `mxlint.launch`)."""
    _tune_gc()
    return main()


if __name__ == "__main__":
    raise SystemExit(entry())
