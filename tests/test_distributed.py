"""MXL8xx: the shell launch-script reader, the launch rule's examples (as files of a scratch
project), targeted behaviour of each rule, and the bad/good fixtures."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from expectations import actual, expected

from mxlint import registry
from mxlint.api import check_paths, check_source
from mxlint.config import Settings
from mxlint.fixes import apply_edits
from mxlint.rule import Example, Finding, Location, Valid
from mxlint.shell import parse_shell
from mxlint.verify.cluster import Member, free_ports, run_cluster
from mxlint.verify.runner import VerifyOptions, verify

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "distributed"
LAUNCH_RULES = [r for r in registry.all_rules().values() if r.kind == "launch"]


# --- fixtures -------------------------------------------------------------------------------


def test_bad_fixtures_report_exactly_the_marked_findings() -> None:
    root = FIXTURES / "bad"
    assert expected(root)
    assert actual(root, prefix="MXL8") == expected(root)


def test_good_twins_are_silent() -> None:
    assert actual(FIXTURES / "good", prefix="MXL8") == set()


def test_bad_fixtures_trigger_no_other_family() -> None:
    found = actual(FIXTURES / "bad")
    assert {code for _, _, code in found} <= {f"MXL80{i}" for i in range(1, 8)}


# --- the launch rule's examples, as files -------------------------------------------------


def _run(tmp_path: Path, code: str, filename: str, project, rule) -> list:
    (tmp_path / filename).write_text(code, encoding="utf-8")
    for name, text in project:
        (tmp_path / name).write_text(text, encoding="utf-8")
    result = check_paths([tmp_path], Settings(select=(rule.code,), root=tmp_path))
    return [f for f in result.findings if f.code == rule.code]


def _cases(kind: str):
    for rule in LAUNCH_RULES:
        for i, ex in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, ex, id=f"{rule.code}-{kind}-{i}")


@pytest.mark.parametrize(("rule", "example"), list(_cases("invalid")))
def test_invalid_launch_example_is_reported(tmp_path: Path, rule, example) -> None:
    ex = example if isinstance(example, Example) else Example(example)
    hits = _run(tmp_path, ex.code, ex.filename, ex.project, rule)
    target = (tmp_path / ex.filename).resolve()
    assert ex.line in [f.location.row for f in hits if Path(f.filename).resolve() == target]


@pytest.mark.parametrize(("rule", "example"), list(_cases("valid")))
def test_valid_launch_example_is_silent(tmp_path: Path, rule, example) -> None:
    ex = example if isinstance(example, Valid) else Valid(example)
    assert _run(tmp_path, ex.code, ex.filename, ex.project, rule) == []


def test_every_launch_rule_has_examples() -> None:
    assert [r.code for r in LAUNCH_RULES] == ["MXL801", "MXL807"]
    for rule in LAUNCH_RULES:
        assert rule.invalid and rule.valid


# --- the shell reader -----------------------------------------------------------------------


def _commands(text: str) -> list[tuple[list[str | None], dict[str, str | None], bool, int | None]]:
    script = parse_shell(text)
    return [
        (
            [w.value for w in c.words],
            {k: (v.value if v else None) for k, v in c.env.items() if k.startswith("DMLC")},
            c.background,
            c.repeat,
        )
        for c in script.commands
    ]


def test_shell_exports_inline_assignments_and_background() -> None:
    text = (
        "export DMLC_PS_ROOT_PORT=9000 DMLC_NUM_WORKER=2\n"
        "DMLC_ROLE=worker python train.py --lr 0.1 2>&1 | tee log &\n"
        "env DMLC_ROLE=server nohup python train.py > server.log 2>&1 &\n"
        "python eval.py\n"
    )
    assert _commands(text) == [
        (
            ["python", "train.py", "--lr", "0.1"],
            {"DMLC_PS_ROOT_PORT": "9000", "DMLC_NUM_WORKER": "2", "DMLC_ROLE": "worker"},
            True,
            1,
        ),
        (["tee", "log"], {"DMLC_PS_ROOT_PORT": "9000", "DMLC_NUM_WORKER": "2"}, True, 1),
        (
            ["python", "train.py"],
            {"DMLC_PS_ROOT_PORT": "9000", "DMLC_NUM_WORKER": "2", "DMLC_ROLE": "server"},
            True,
            1,
        ),
        (["python", "eval.py"], {"DMLC_PS_ROOT_PORT": "9000", "DMLC_NUM_WORKER": "2"}, False, 1),
    ]


def test_shell_expansion_defaults_and_unknowns() -> None:
    text = (
        'PORT=${PORT:-9000}\nHOST="$(hostname -i)"\n'
        'export DMLC_PS_ROOT_PORT=$PORT DMLC_PS_ROOT_URI=$HOST DMLC_NUM_WORKER="$1"\n'
        "export DMLC_NUM_SERVER='2'\nrun_it\n"
    )
    [(words, env, _, _)] = _commands(text)
    assert words == ["run_it"]
    assert env == {
        "DMLC_PS_ROOT_PORT": "9000",
        "DMLC_PS_ROOT_URI": None,
        "DMLC_NUM_WORKER": None,
        "DMLC_NUM_SERVER": "2",
    }


def test_shell_loops_branches_functions_and_here_documents() -> None:
    text = (
        "for i in 0 1 2; do DMLC_ROLE=worker python train.py & done\n"
        "for i in $(seq 1 $N); do DMLC_ROLE=worker python train.py & done\n"
        'if [ -n "$A" ]; then export DMLC_NUM_WORKER=4; else export DMLC_NUM_WORKER=8; fi\n'
        "start() { DMLC_ROLE=server python train.py & }\n"
        "cat <<EOF > note.txt\nDMLC_ROLE=scheduler python fake.py &\nEOF\n"
        "python after.py\n"
    )
    script = parse_shell(text)
    rows = [(c.program, c.repeat, c.conditional, c.in_function) for c in script.commands]
    assert rows == [
        ("python", 3, False, False),
        ("python", None, False, False),
        ("[", 1, True, False),
        ("python", None, False, True),
        ("cat", 1, False, False),
        ("python", 1, False, False),
    ]
    # Assigned in both branches: unknown after `fi`.
    assert script.commands[-1].setting("DMLC_NUM_WORKER") == (True, None)


def test_shell_source_makes_everything_unknown() -> None:
    script = parse_shell("export DMLC_NUM_WORKER=2\nsource ./cluster.env\npython train.py\n")
    command = script.commands[-1]
    assert command.opaque
    assert command.setting("DMLC_NUM_WORKER") == (True, None)


def test_shell_reader_survives_unbalanced_input() -> None:
    for text in ("echo 'unterminated\n", 'x="$(a\n', "if then fi done esac }\n", "${\n", "<<\n"):
        parse_shell(text)


# --- MXL801 ---------------------------------------------------------------------------------


def _launch(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, int, str]]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    result = check_paths([tmp_path], Settings(select=("MXL801",), root=tmp_path))
    return [
        (
            Path(f.filename).resolve().relative_to(tmp_path.resolve()).as_posix(),
            f.location.row,
            f.message,
        )
        for f in result.findings
    ]


JOB = (
    "export DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=9091\n"
    "export DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=2\n"
    "DMLC_ROLE=scheduler python train.py &\n"
    "DMLC_ROLE=server python train.py &\n"
)


def test_mxl801_port_message(tmp_path: Path) -> None:
    found = _launch(
        tmp_path,
        {
            "run.sh": JOB
            + "DMLC_ROLE=worker python train.py &\n"
            + "DMLC_ROLE=worker DMLC_PS_ROOT_PORT=9092 python train.py &\nwait\n"
        },
    )
    assert found == [
        (
            "run.sh",
            6,
            "`DMLC_PS_ROOT_PORT=9092` for the worker started at line 6 disagrees with "
            "`DMLC_PS_ROOT_PORT=9091` for the scheduler at line 3: a process that looks for the "
            "scheduler on another port never joins, and the job waits for it forever",
        )
    ]


def test_mxl801_docker_run_env(tmp_path: Path) -> None:
    common = "-e DMLC_PS_ROOT_URI=sched -e DMLC_NUM_WORKER=2 -e DMLC_NUM_SERVER=1"
    text = (
        f"docker run -d -e DMLC_ROLE=scheduler {common} -e DMLC_PS_ROOT_PORT=9000 image\n"
        f"docker run -d -e DMLC_ROLE=server {common} -e DMLC_PS_ROOT_PORT=9000 image\n"
        "for i in 1 2; do\n"
        f"  docker run -d -e DMLC_ROLE=worker {common} -e DMLC_PS_ROOT_PORT=9001 image python t.py\n"
        "done\n"
    )
    found = _launch(tmp_path, {"up.sh": text})
    assert [(p, r) for p, r, _ in found] == [("up.sh", 4)]
    assert found[0][2].startswith("`DMLC_PS_ROOT_PORT=9001` for the worker started at line 4")


def test_mxl801_launcher_default_servers(tmp_path: Path) -> None:
    text = "export DMLC_NUM_SERVER=1\npython tools/launch.py -n 3 --launcher local python t.py\n"
    [(path, row, message)] = _launch(tmp_path, {"go.sh": text})
    assert (path, row) == ("go.sh", 1)
    assert "starts 3 servers and sets `DMLC_NUM_SERVER=3`" in message


def test_mxl801_independent_examples_and_two_schedulers_are_not_compared(tmp_path: Path) -> None:
    a = JOB + "DMLC_ROLE=worker python train.py &\nDMLC_ROLE=worker python train.py &\nwait\n"
    two = (
        "export DMLC_PS_ROOT_URI=127.0.0.1 DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=1\n"
        "DMLC_ROLE=scheduler DMLC_PS_ROOT_PORT=9000 python a.py &\n"
        "DMLC_ROLE=scheduler DMLC_PS_ROOT_PORT=9100 python b.py &\n"
        "DMLC_ROLE=server DMLC_PS_ROOT_PORT=9000 python a.py &\n"
        "DMLC_ROLE=server DMLC_PS_ROOT_PORT=9100 python b.py &\n"
        "wait\n"
    )
    assert (
        _launch(tmp_path, {"a/run.sh": a, "b/run.sh": a.replace("9091", "9300"), "c/two.sh": two})
        == []
    )


def test_mxl801_python_files_of_one_directory(tmp_path: Path) -> None:
    scheduler = (
        "import os\nos.environ['DMLC_ROLE'] = 'scheduler'\n"
        "os.environ['DMLC_PS_ROOT_PORT'] = '9500'\nimport mxnet\n"
    )
    worker = (
        "import os\nos.environ.update(DMLC_ROLE='worker', DMLC_PS_ROOT_PORT='9501')\n"
        "import mxnet as mx\nkv = mx.kv.create('dist_sync')\n"
    )
    found = _launch(tmp_path, {"job/sched.py": scheduler, "job/trainer.py": worker})
    assert [(p, r) for p, r, _ in found] == [("job/trainer.py", 2)]
    assert "for the scheduler at sched.py:2" in found[0][2]


def test_mxl801_reads_no_python_file_without_dmlc_role(tmp_path: Path) -> None:
    only_port = "import os\nos.environ['DMLC_PS_ROOT_PORT'] = '1'\n"
    assert _launch(tmp_path, {"a.py": only_port, "b.py": only_port.replace("'1'", "'2'")}) == []


# --- MXL802-MXL806 --------------------------------------------------------------------------


def _rows(source: str, select: tuple[str, ...] = ("MXL8",)) -> list[tuple[str, int]]:
    return [
        (f.code, f.location.row) for f in check_source(source, "train.py", Settings(select=select))
    ]


def test_mxl802_kvstore_through_a_conditional_and_its_fix() -> None:
    source = (
        "import mxnet as mx\nfrom mxnet import gluon\n\n"
        "def make(net, asynchronous):\n"
        "    kind = 'dist_async' if asynchronous else 'dist_sync'\n"
        "    return gluon.Trainer(net.collect_params(), 'sgd', kvstore=mx.kv.create(kind),\n"
        "                         update_on_kvstore=False)\n"
    )
    [finding] = [
        f for f in check_source(source, "t.py", Settings(select=("MXL802",))) if f.code == "MXL802"
    ]
    assert finding.location.row == 7
    assert "(one of the kvstores this Trainer can get)" in finding.message
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert apply_edits(source, list(finding.fix.edits)).endswith("update_on_kvstore=True)\n")


def test_mxl802_no_fix_when_the_trainer_updates_locally() -> None:
    source = (
        "from mxnet import gluon\n\n"
        "def step(net, n):\n"
        "    t = gluon.Trainer(net.collect_params(), 'sgd', kvstore='dist_async',\n"
        "                      update_on_kvstore=False)\n"
        "    t.allreduce_grads()\n    t.update(n)\n"
    )
    [finding] = check_source(source, "t.py", Settings(select=("MXL802",)))
    assert finding.fix is None


def test_mxl803_respects_mxnet_update_on_kvstore() -> None:
    source = (
        "import os\nfrom mxnet import gluon\n\n"
        "os.environ['MXNET_UPDATE_ON_KVSTORE'] = '0'\n\n"
        "def step(net, n):\n"
        "    t = gluon.Trainer(net.collect_params(), 'sgd', kvstore='dist_sync')\n"
        "    t.allreduce_grads()\n    t.update(n)\n"
    )
    assert _rows(source) == []
    assert _rows(source.replace("os.environ['MXNET_UPDATE_ON_KVSTORE'] = '0'\n", "")) == [
        ("MXL803", 7),
        ("MXL803", 8),
    ]


def test_mxl804_follows_parameters_and_stops_at_other_modules() -> None:
    source = (
        "import mxnet as mx\nfrom mxnet import gluon\n\n"
        "def loader(dataset, batch_size):\n"
        "    return gluon.data.DataLoader(dataset, batch_size=batch_size, shuffle=True)\n\n"
        "def main(args):\n"
        "    kv = mx.kv.create('dist_sync')\n"
        "    train_set = gluon.data.ArrayDataset(mx.nd.ones((8, 2)))\n"
        "    train_data = loader(train_set, args.batch_size)\n"
        "    return kv, train_data\n"
    )
    assert _rows(source) == [("MXL804", 5)]
    # The dataset of this worker's share: split.
    split = source.replace(
        "train_data = loader(train_set,", "train_data = loader(train_set.shard(2, kv.rank),"
    )
    assert _rows(split) == []
    # Built by a function of another module of the project: not judged.
    imported = source.replace(
        "    train_set = gluon.data.ArrayDataset(mx.nd.ones((8, 2)))\n",
        "    train_set = make_train_set(args)\n",
    ).replace(
        "from mxnet import gluon\n", "from mxnet import gluon\nfrom data import make_train_set\n"
    )
    assert _rows(imported) == []


def test_mxl804_a_gpu_picked_by_local_rank_is_no_split() -> None:
    source = (
        "import horovod.mxnet as hvd\nimport mxnet as mx\nfrom mxnet import gluon\n\n"
        "hvd.init()\nctx = mx.gpu(hvd.local_rank())\n"
        "train_set = gluon.data.ArrayDataset(mx.nd.ones((8, 2), ctx=ctx))\n"
        "train_data = gluon.data.DataLoader(train_set, batch_size=4)\n"
        "trainer = hvd.DistributedTrainer({}, 'sgd', {'learning_rate': 0.1 * hvd.size()})\n"
    )
    assert _rows(source) == [("MXL804", 8)]


def test_mxl805_is_off_by_default() -> None:
    source = (
        "import horovod.mxnet as hvd\n\nhvd.init()\n"
        "trainer = hvd.DistributedTrainer({}, 'sgd', {'learning_rate': 0.1})\n"
    )
    assert _rows(source, select=("MXL8",)) == [("MXL805", 4)]
    assert [f.code for f in check_source(source, "train.py", Settings())] == []


def test_mxl806_bigarray_only_where_no_kvstore_reads_it() -> None:
    source = (
        "import os\nfrom mxnet import gluon\n\n"
        "os.environ.setdefault('MXNET_KVSTORE_BIGARRAY_BOUND', '9000000')\n"
        "trainer = gluon.Trainer({}, 'sgd', kvstore='device')\n"
    )
    assert _rows(source) == [("MXL806", 4)]
    assert _rows(source.replace("'device'", "'local'")) == []
    assert _rows(source.replace("kvstore='device'", "kvstore=KV")) == []


# --- --verify on a real local parameter-server job -------------------------------------------

VERIFY_MARK = re.compile(r"#\s*(expect|refute)(?:-next-line)?:\s*((?:MXL\d{3}\s*,?\s*)+)(.*)$")


def _verify_markers(root: Path) -> dict[tuple[str, int, str], str]:
    """(real path, line, code) -> the verdict its marker asks for: `expect` is confirmed unless
    the line says `verify: inconclusive`, `refute` is refuted."""
    out: dict[tuple[str, int, str], str] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = VERIFY_MARK.search(line)
            if not m:
                continue
            target = row + 1 if "next-line" in line else row
            if m.group(1) == "refute":
                verdict = "refuted"
            else:
                verdict = "inconclusive" if "verify: inconclusive" in m.group(3) else "confirmed"
            for code in re.findall(r"MXL\d{3}", m.group(2)):
                out[(str(path.resolve()), target, code)] = verdict
    return out


@pytest.mark.slow
def test_verify_gives_each_bad_fixture_its_verdict() -> None:
    """Every seeded bug of fixtures/distributed/bad, run as a real job: confirmed (a worker
    raised, the job never joined, both workers read the same data...), or inconclusive where
    the runtime cannot show it (Horovod not installed, a launcher, an unobservable setting)."""
    root = FIXTURES / "bad"
    proc = subprocess.run(
        [sys.executable, "-m", "mxlint", "--verify", "--no-benchmark", "--output-format", "json"]
        + ["--select", "MXL8", "--verify-timeout", "90", str(root)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    got = {
        (str(Path(item["filename"]).resolve()), item["location"]["row"], item["code"]): item[
            "verify"
        ]
        for item in json.loads(proc.stdout)
    }
    wanted = _verify_markers(root)
    assert set(got) == set(wanted)
    wrong = {
        f"{Path(k[0]).relative_to(root)}:{k[1]} {k[2]}": (v, got[k]["verdict"], got[k]["evidence"])
        for k, v in wanted.items()
        if got[k]["verdict"] != v
    }
    assert not wrong
    assert all(v["evidence"] or v["reason"] for v in got.values())


@pytest.mark.slow
def test_verify_refutes_the_look_alikes_of_the_good_twins() -> None:
    root = FIXTURES / "good"
    wanted = _verify_markers(root)
    assert wanted and set(wanted.values()) == {"refuted"}
    findings = [
        Finding(code, code, path, Location(row, 1), Location(row, 2)) for path, row, code in wanted
    ]
    options = VerifyOptions(bench=False, timeout=90)
    result = verify(findings, sorted(root.rglob("*.py")), options)
    verdicts = {k: result.verdicts[f.key()] for k, f in zip(wanted, findings)}
    assert {k: v.verdict for k, v in verdicts.items()} == wanted, {
        k: v.evidence or v.reason for k, v in verdicts.items()
    }


@pytest.mark.slow
def test_verify_refutes_a_consistent_launch() -> None:
    env = {
        "DMLC_PS_ROOT_URI": "localhost",
        "DMLC_PS_ROOT_PORT": "9700",
        "DMLC_NUM_WORKER": "2",
        "DMLC_NUM_SERVER": "1",
    }
    job = [
        {"role": "scheduler", "count": 1, "env": dict(env, DMLC_PS_ROOT_URI="127.0.0.1")},
        {"role": "server", "count": 1, "env": dict(env)},
        {"role": "worker", "count": 2, "env": dict(env)},
    ]
    finding = Finding(
        "MXL801",
        "MXL801",
        str(FIXTURES / "good" / "split_roles" / "start_workers.sh"),
        Location(5, 1),
        Location(5, 2),
        data={"check": "value", "setting": "DMLC_PS_ROOT_URI", "job": job},
    )
    [verdict] = verify([finding], [], VerifyOptions(bench=False)).verdicts.values()
    assert verdict.verdict == "refuted", verdict.reason
    assert "all 2 workers joined" in verdict.evidence


@pytest.mark.slow
def test_a_job_that_never_joins_is_stopped_with_all_its_processes() -> None:
    port, other = free_ports(2)
    env = {
        "DMLC_PS_ROOT_URI": "127.0.0.1",
        "DMLC_PS_ROOT_PORT": str(port),
        "DMLC_NUM_WORKER": "1",
        "DMLC_NUM_SERVER": "1",
    }
    members = [
        Member("scheduler", dict(env)),
        Member("server", dict(env)),
        Member("worker", dict(env, DMLC_PS_ROOT_PORT=str(other)), {"kind": "probe"}),
    ]
    start = time.monotonic()
    results = run_cluster(members, timeout=8, memory_mb=6144)
    assert time.monotonic() - start < 30
    assert [(r.role, r.finished, r.payload.get("status")) for r in results] == [
        ("scheduler", False, "started"),
        ("server", False, "started"),
        ("worker", False, "creating"),
    ]
    for r in results:
        with pytest.raises(ProcessLookupError):
            os.kill(r.pid, 0)


def test_a_named_launch_script_is_not_read_as_a_requirements_file(tmp_path: Path) -> None:
    script = tmp_path / "run_local.sh"
    script.write_text(JOB + "DMLC_ROLE=worker python train.py\n", encoding="utf-8")
    result = check_paths([script], Settings(select=("ALL",), root=tmp_path))
    assert [(f.code, f.location.row) for f in result.findings] == [("MXL801", 2)]


# --- MXL807 ---------------------------------------------------------------------------------

TRAIN_PARSER = (
    "import argparse\n\n"
    "parser = argparse.ArgumentParser()\n"
    "group = parser.add_argument_group('data')\n"
    "group.add_argument('--batch-size', type=int)\n"
    "parser.add_argument('--kv-store', default='device')\n"
    "parser.add_argument('--lr', '--learning-rate', type=float)\n"
    "{parse}\n"
)


def _options(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, int, int, str]]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    result = check_paths([tmp_path], Settings(select=("MXL807",), root=tmp_path))
    return [
        (Path(f.filename).name, f.location.row, f.location.column, f.message)
        for f in result.findings
    ]


def test_mxl807_misspelt_kvstore_option_under_mpirun(tmp_path: Path) -> None:
    found = _options(
        tmp_path,
        {
            "scripts/train.py": TRAIN_PARSER.format(parse="args = parser.parse_args()"),
            "scripts/run.sh": "mpirun -np 2 python train.py --kvstore dist_sync --lr 0.1\n",
        },
    )
    assert found == [
        (
            "run.sh",
            1,
            30,
            "`--kvstore` is not an option of `train.py`, whose parser does not declare it: "
            '`parse_args()` stops every process of the job at start with "error: unrecognized '
            'arguments: --kvstore dist_sync" (did you mean `--kv-store`?)',
        )
    ]


def test_mxl807_abbreviations_groups_and_parse_known_args(tmp_path: Path) -> None:
    run = "DMLC_ROLE=worker python train.py --batch 8 --learning 0.1 --l 1 --epochs=3\n"
    found = _options(
        tmp_path,
        {
            "train.py": TRAIN_PARSER.format(parse="args, _ = parser.parse_known_args()"),
            "run.sh": run,
        },
    )
    # `--batch` and `--learning` abbreviate one option each, `--l` two (ambiguous: not judged).
    assert [(row, col) for _, row, col, _ in found] == [(1, 65)]
    assert found[0][3].endswith(
        "`parse_known_args()` leaves it over, and the setting never takes effect"
    )


def test_mxl807_leftovers_the_script_uses_are_not_judged(tmp_path: Path) -> None:
    forwarded = TRAIN_PARSER.format(parse="args, rest = parser.parse_known_args()\nprint(rest)")
    run = "DMLC_ROLE=worker python train.py --epochs=3\n"
    assert _options(tmp_path, {"train.py": forwarded, "run.sh": run}) == []


def test_mxl807_needs_a_distributed_launch_and_a_script_of_the_run(tmp_path: Path) -> None:
    files = {
        "train.py": TRAIN_PARSER.format(parse="args = parser.parse_args()"),
        "local.sh": "python train.py --kv-store device --epochs 3\n",
        "elsewhere.sh": "DMLC_ROLE=worker python ../other/train.py --epochs 3\n",
    }
    assert _options(tmp_path, files) == []


def test_noqa_in_a_continued_shell_command(tmp_path: Path) -> None:
    """A directive on the last line of a command continued with backslashes covers it all;
    `--add-noqa` writes it there, where it ends no continuation."""
    files = {
        "train.py": TRAIN_PARSER.format(parse="args = parser.parse_args()"),
        "run.sh": "DMLC_ROLE=worker python train.py --kvstore dist_sync \\\n    --lr 0.1\n",
    }
    assert [(row, col) for _, row, col, _ in _options(tmp_path, files)] == [(1, 34)]
    proc = subprocess.run(
        [sys.executable, "-m", "mxlint", "check", "--select", "MXL807", "--add-noqa", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "run.sh").read_text() == (
        "DMLC_ROLE=worker python train.py --kvstore dist_sync \\\n    --lr 0.1  # noqa: MXL807\n"
    )
    assert _options(tmp_path, {}) == []


def test_mxl804_callback_parameters_are_samples_not_ranks() -> None:
    """A transform or batchify callback is called by the data pipeline with samples: its
    parameters do not hide a rank; one given where the callback is handed over does split."""
    source = (
        "import mxnet as mx\nfrom mxnet import gluon\n\n"
        "def scale(data, label):\n    return data / 255, label\n\n"
        "kv = mx.kv.create('dist_sync')\n"
        "train_set = gluon.data.ArrayDataset(mx.nd.ones((8, 2)), mx.nd.ones(8)).transform(scale)\n"
        "train_data = gluon.data.DataLoader(train_set, batch_size=4,\n"
        "                                   batchify_fn=lambda b: b)\n"
    )
    assert _rows(source) == [("MXL804", 9)]
    handed = (
        source.replace(
            "from mxnet import gluon\n", "from functools import partial\nfrom mxnet import gluon\n"
        )
        .replace("def scale(data, label):", "def scale(rank, data, label):")
        .replace(".transform(scale)", ".transform(partial(scale, kv.rank))")
    )
    assert _rows(handed) == []
    # Handed to a function of another module of the project, which may call it with anything.
    wrapped = source.replace(
        "from mxnet import gluon\n", "from mxnet import gluon\nfrom helpers import wrap\n"
    ).replace(".transform(scale)", ".transform(wrap(scale))")
    assert _rows(wrapped) == []
