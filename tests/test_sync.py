"""MXL603-MXL606 and the environment rules (MXL509-MXL511): fixtures match their markers exactly,
the traps stay silent, and the readers they stand on (launch scripts, Dockerfile ENV and CUDA
flavours) read what the rules need."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from expectations import actual, expected

from mxlint.api import check_paths, check_source
from mxlint.config import Settings
from mxlint.dockerfile import cuda_image_kind, parse_dockerfile
from mxlint.fixes import apply_edits
from mxlint.rules.sync.debug_setting_left_on import effect, production_path
from mxlint.rules.versions._releases import cudnn_of_build
from mxlint.rules.versions.environment import _shell_settings
from mxlint.rules.versions.invalid_mxnet_setting import problem
from mxlint.verify.probes import operator_calls, operator_rows
from mxlint.verify.syncs import compare_times

SYNC = ("MXL603", "MXL604", "MXL605")
ENVIRONMENT = ("MXL509", "MXL510", "MXL511", "MXL606")


def _codes(root: Path, codes: tuple[str, ...]) -> set[tuple[str, int, str]]:
    found = actual(root, Settings(select=codes, root=root))
    return {row for row in found if row[2] in codes}


def _rows(source: str, codes: tuple[str, ...], filename: str = "example.py", project=()):
    findings = check_source(textwrap.dedent(source), filename, Settings(select=codes), project)
    return sorted((f.code, f.location.row) for f in findings)


# -- fixtures ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("family", "codes"), [("sync", SYNC), ("environment", ENVIRONMENT)])
def test_bad_fixtures_report_exactly_the_marked_findings(fixtures_dir, family, codes):
    root = fixtures_dir / family / "bad"
    marked = expected(root)
    assert {code for _, _, code in marked} == set(codes)
    assert _codes(root, codes) == marked


@pytest.mark.parametrize(("family", "codes"), [("sync", SYNC), ("environment", ENVIRONMENT)])
def test_good_twins_are_silent(fixtures_dir, family, codes):
    assert _codes(fixtures_dir / family / "good", codes) == set()


def test_verify_fixtures_match_their_markers(fixtures_dir):
    """The `--verify` programs: each marker of a rule on by default is reported, no look-alike."""
    codes = ("MXL511", *SYNC, "MXL606")
    for kind in ("bad", "good"):
        root = fixtures_dir / "verify" / "sync" / kind
        want = {row for row in expected(root) if row[2] in codes} if kind == "bad" else set()
        assert _codes(root, codes) == want


# -- MXL603 --------------------------------------------------------------------------------------

TRAIN = """
from mxnet import autograd, gluon

loss_fn = gluon.loss.L2Loss()


def train(net, trainer, loader, log):
    for data, label in loader:
        with autograd.record():
            out = net(data)
            loss = loss_fn(out, label)
        loss.backward()
        trainer.step(data.shape[0])
        {line}
"""


@pytest.mark.parametrize(
    "line",
    [
        "log([l.asscalar() for l in loss])",
        "log(sum(l.asscalar() for l in loss))",
        "log([loss[i].asscalar() for i in range(len(label))])",
        "log([o.argmax().asscalar() for o in out.softmax()])",
        "log([(p == y).asscalar() for p, y in zip(out.argmax(axis=1), label)])",
        "log({i: out[i].asnumpy() for i in range(data.shape[0])})",
    ],
)
def test_per_element_readbacks_are_reported(line):
    assert _rows(TRAIN.format(line=line), ("MXL603",)) == [("MXL603", 14)]


@pytest.mark.parametrize(
    "line",
    [
        "log(loss.mean().asscalar())",  # one readback per step: MXL602's, off by default
        "log([v.item() for v in loss.asnumpy()])",  # NumPy values after one readback
        "log([o.asscalar() for o in out])",  # a network may return a tuple of heads
        "log([x.shape for x in data])",  # no readback
        "log([l.asscalar() for l in [loss]])",  # a list literal is not the batch
        "log([int(i) for i in range(len(label))])",  # the index, not an element
    ],
)
def test_look_alikes_are_silent(line):
    assert _rows(TRAIN.format(line=line), ("MXL603",)) == []


def test_the_comprehension_fix_reads_the_array_once():
    source = textwrap.dedent(TRAIN.format(line="log(sum(l.asscalar() for l in loss))"))
    (finding,) = check_source(source, "example.py", Settings(select=("MXL603",)))
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    fixed = apply_edits(source, finding.fix.edits)
    assert "log(sum(loss.asnumpy().reshape(-1)))" in fixed
    assert check_source(fixed, "example.py", Settings(select=("MXL603",))) == []


def test_a_loop_with_no_training_step_is_not_a_training_loop():
    source = TRAIN.replace("loss.backward()", "pass").replace("trainer.step(data.shape[0])", "pass")
    assert _rows(source.format(line="log([l.asscalar() for l in loss])"), ("MXL603",)) == []


# -- MXL604 --------------------------------------------------------------------------------------


def test_a_read_after_a_training_loop_sees_its_last_step_pending():
    source = """
    import mxnet as mx


    def profile(net, loss_fn, trainer, loader):
        mx.profiler.set_state("run")
        for data, label in loader:
            loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(1)
        print(mx.profiler.dumps())
        mx.profiler.set_state("stop")
    """
    assert _rows(source, ("MXL604",)) == [("MXL604", 11)]


def test_a_read_is_not_reported_when_one_path_synchronised():
    """Work is pending after a branch only when every path leaves it pending."""
    source = """
    import mxnet as mx


    def probe(net, data, flag):
        out = net(data)
        if flag:
            out.wait_to_read()
        else:
            print(out.asnumpy())
        return mx.context.gpu_memory_info(0)
    """
    assert _rows(source, ("MXL604",)) == []


def test_a_helper_in_another_file_decides_whether_the_read_waits():
    source = """
    import mxnet as mx
    from helpers import flush


    def probe(net, data):
        net(data).backward()
        flush()
        return mx.context.gpu_memory_info(0)
    """
    syncs = ("helpers", "from mxnet import nd\n\ndef flush():\n    nd.waitall()\n")
    waits_not = ("helpers", "def flush():\n    print('flushed')\n")
    assert _rows(source, ("MXL604",), project=[syncs]) == []
    assert _rows(source, ("MXL604",), project=[waits_not]) == [("MXL604", 9)]


def test_the_fix_inserts_waitall_spelled_with_the_files_import():
    source = textwrap.dedent(
        """
        from mxnet import nd


        def probe(net, data):
            if data is not None:
                out = net(data)
                out.backward()
                print(mx_mem(nd))
                print(nd.waitall, __import__("mxnet").context.gpu_memory_info(0))
        """
    )
    source = source.replace('__import__("mxnet").context', "mxc")
    source = "import mxnet.context as mxc\n" + source
    (finding,) = check_source(source, "example.py", Settings(select=("MXL604",)))
    fixed = apply_edits(source, finding.fix.edits)
    assert "        nd.waitall()\n        print(nd.waitall, mxc.gpu_memory_info(0))" in fixed


# -- MXL605 --------------------------------------------------------------------------------------


def test_a_profiler_stopped_in_the_importing_script_is_stopped():
    helper = "from mxnet import profiler\n\ndef start():\n    profiler.set_state('run')\n"
    script = "from mxnet import profiler\nfrom prof import start\n\nstart()\nprofiler.dump()\n"
    unrelated = "from mxnet import profiler\n\nprofiler.set_state('stop')\n"
    assert _rows(helper, ("MXL605",), "prof.py", [("train", script)]) == []
    assert _rows(helper, ("MXL605",), "prof.py", [("other", unrelated)]) == [("MXL605", 4)]


def test_a_sibling_module_the_run_did_not_read_may_stop_it(tmp_path):
    """One file checked alone (flake8, an editor): a project module it imports that mentions
    the profiler is unknown, so nothing is reported; read together, it is judged. A module
    with no sign of the profiler cannot stop it."""
    (tmp_path / "train.py").write_text(
        "from mxnet import profiler\nimport hooks\n\nprofiler.set_state('run')\nhooks.go()\n"
    )
    (tmp_path / "hooks.py").write_text(
        "from mxnet import profiler\n\ndef go():\n    profiler.set_state('run')\n"
    )
    settings = Settings(select=("MXL605",), root=tmp_path)
    assert check_paths([tmp_path / "train.py"], settings).findings == []
    both = check_paths([tmp_path], settings)
    assert [(Path(f.filename).name, f.location.row) for f in both.findings] == [
        ("hooks.py", 4),
        ("train.py", 4),
    ]
    (tmp_path / "hooks.py").write_text("def go():\n    print('training')\n")
    alone = check_paths([tmp_path / "train.py"], settings)
    assert [(Path(f.filename).name, f.location.row) for f in alone.findings] == [("train.py", 4)]


def test_a_state_known_only_at_run_time_may_stop_it():
    source = "from mxnet import profiler\n\nprofiler.set_state('run')\nprofiler.set_state(mode)\n"
    assert _rows(source, ("MXL605",)) == []


# -- MXL606 and MXL511 ---------------------------------------------------------------------------


def test_debug_settings_and_their_values():
    assert effect("MXNET_ENGINE_TYPE", "NaiveEngine") is not None
    assert effect("MXNET_ENGINE_TYPE", "ThreadedEnginePerDevice") is None
    assert effect("MXNET_ENGINE_INFO", "0") is None
    assert effect("MXNET_ENGINE_INFO", "true") is not None
    assert effect("MXNET_PROFILER_AUTOSTART", "1") is not None
    assert effect("MXNET_EXEC_VERBOSE", "") is None
    assert effect("MXNET_CUDNN_AUTOTUNE_DEFAULT", "0") is None
    assert effect("MXNET_ENGINE_TYPE", None) is None


@pytest.mark.parametrize(
    ("path", "production"),
    [
        ("train.py", True),
        ("scripts/run_train.sh", True),
        ("latest/train.py", True),
        ("tests/run.sh", False),
        ("debug_train.py", False),
        ("docker/Dockerfile.debug", False),
        ("scripts/profile_resnet.sh", False),
        ("benchmark/train.py", False),
        ("train_test.py", False),
    ],
)
def test_production_paths(path, production):
    assert production_path(path) is production


@pytest.mark.parametrize(
    ("name", "value", "spelled"),
    [
        ("MXNET_ENGINE_TYPE", "Naive", None),
        ("MXNET_ENGINE_TYPE", "", None),
        ("MXNET_ENGINE_TYPE", "threadedengineperdevice", "ThreadedEnginePerDevice"),
        ("MXNET_GPU_MEM_POOL_TYPE", "round", "Round"),
        ("MXNET_GPU_MEM_POOL_TYPE", "", None),
        ("MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF", "19", None),
        ("MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF", "35", None),
        ("MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF", "2.5", None),
        ("MXNET_GPU_MEM_POOL_RESERVE", "5%", None),
        ("MXNET_GPU_MEM_POOL_RESERVE", "150", None),
        ("MXNET_GPU_MEM_POOL_PAGE_SIZE", "16", None),
        ("MXNET_GPU_MEM_POOL_PAGE_SIZE", "3000", None),
        ("MXNET_GPU_MEM_LARGE_ALLOC_ROUND_SIZE", "0", None),
    ],
)
def test_values_mxnet_rejects(name, value, spelled):
    found = problem(name, value)
    assert found is not None
    assert found[1] == spelled


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MXNET_ENGINE_TYPE", "NaiveEngine"),
        ("MXNET_GPU_MEM_POOL_TYPE", "Unpooled"),
        ("MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF", "20"),
        ("MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF", " 34 "),
        ("MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF", ""),  # blank: dmlc reads the default
        ("MXNET_GPU_MEM_POOL_RESERVE", "10"),
        ("MXNET_GPU_MEM_POOL_PAGE_SIZE", "4096"),
        ("MXNET_CUDNN_AUTOTUNE_DEFAULT", "whatever"),
    ],
)
def test_values_mxnet_accepts(name, value):
    assert problem(name, value) is None


def test_the_debug_setting_fix_deletes_the_line_or_leaves_pass():
    source = textwrap.dedent(
        """
        import os
        from mxnet import autograd


        def main(net, loss_fn, trainer, loader):
            os.environ["MXNET_ENGINE_TYPE"] = "NaiveEngine"
            for data, label in loader:
                with autograd.record():
                    loss = loss_fn(net(data), label)
                loss.backward()
                trainer.step(1)


        def configure():
            os.putenv("MXNET_ENGINE_INFO", "1")


        if __name__ == "__main__":
            configure()
            main(*build())
        """
    )
    findings = check_source(source, "train.py", Settings(select=("MXL606",)))
    assert [f.location.row for f in findings] == [7, 16]
    deleted = apply_edits(source, findings[0].fix.edits)
    assert 'os.environ["MXNET_ENGINE_TYPE"]' not in deleted
    assert "def main(net, loss_fn, trainer, loader):\n    for data" in deleted
    passed = apply_edits(source, findings[1].fix.edits)
    assert "def configure():\n    pass\n" in passed


def test_a_python_file_that_does_not_train_is_not_judged():
    source = "import os\nimport mxnet as mx\n\nos.environ['MXNET_ENGINE_TYPE'] = 'NaiveEngine'\n"
    assert _rows(source, ("MXL606",), "train.py") == []
    assert _rows(source + "mx.mod.Module(None).fit(None)\n", ("MXL606",), "train.py") == [
        ("MXL606", 4)
    ]


# -- the readers ---------------------------------------------------------------------------------


def test_launch_script_settings_know_where_and_whether_they_always_apply():
    """What a script writes (MXL511 judges all of it) and what the Python programs it always
    starts run with (MXL606 judges only that)."""
    written, always, programs = _shell_settings(
        textwrap.dedent(
            """\
            #!/bin/bash
            export MXNET_A=1 MXNET_B="two words"
            MXNET_C=3
            export MXNET_C
            if [ -n "$DEBUG" ]; then export MXNET_D=4; fi
            [ -z "$X" ] || export MXNET_E=5
            [ -n "$Y" ] && export MXNET_F=6
            run() { export MXNET_G=7; python3 debug.py; }
            cat > job.sh <<'EOF'
            export MXNET_H=8
            EOF
            MXNET_I=$MXNET_A/x python3 -u train.py \\
                --epochs 3
            for i in 1 2; do MXNET_J=9 python -m pkg.tool; done
            export MXNET_K=$UNKNOWN
            """
        )
    )
    assert [(s.name, s.value, s.line, s.col, s.guarded) for s in written] == [
        ("MXNET_A", "1", 2, 8, False),
        ("MXNET_B", "two words", 2, 18, False),
        ("MXNET_C", "3", 3, 1, False),
        ("MXNET_D", "4", 5, 33, False),
        ("MXNET_E", "5", 6, 23, True),
        ("MXNET_F", "6", 7, 23, True),
        ("MXNET_G", "7", 8, 16, False),
        ("MXNET_I", "1/x", 12, 1, False),
        ("MXNET_J", "9", 14, 18, False),
        ("MXNET_K", None, 15, 8, False),
    ]
    assert [(s.name, s.line) for s in always] == [
        ("MXNET_A", 2),
        ("MXNET_B", 2),
        ("MXNET_C", 3),
        ("MXNET_I", 12),
        ("MXNET_J", 14),  # a loop over a literal list runs its body
    ]
    assert programs == ["debug.py", "train.py", "pkg.tool"]


def test_dockerfile_env_settings_and_cuda_flavours():
    stages = parse_dockerfile(
        "FROM nvidia/cuda:11.2.2-cudnn8-devel-ubuntu20.04 AS build\n"
        "ENV A=1 B=2\n"
        "FROM build\n"
        "ENV C 3 4\n"
        "RUN apt-get install -y libcudnn8\n"
    )
    assert [(v.name, v.value, v.line, v.column) for v in stages[-1].env.values()] == [
        ("A", "1", 2, 5),
        ("B", "2", 2, 9),
        ("C", "3 4", 4, 5),
    ]
    assert stages[-1].cuda_kind == ("devel", "8")
    assert stages[-1].runs == ["apt-get install -y libcudnn8"]
    assert cuda_image_kind("nvidia/cuda:11.2.2-base-ubuntu20.04") == ("base", None)
    assert cuda_image_kind("nvidia/cuda:9.2-cudnn7-devel") == ("devel", "7")
    assert cuda_image_kind("nvcr.io/nvidia/cuda:10.1-runtime") == ("runtime", None)
    assert cuda_image_kind("nvidia/cudagl:11.2.2-runtime") is None
    assert cuda_image_kind("ubuntu:20.04") is None


def test_cudnn_of_each_build():
    from packaging.version import Version

    assert cudnn_of_build("mxnet-cu102", Version("1.9.1")) == 8
    assert cudnn_of_build("mxnet-cu102", Version("1.7.0")) == 7
    assert cudnn_of_build("mxnet-cu101mkl", Version("1.6.0")) == 7
    assert cudnn_of_build("mxnet-cu117", Version("1.9.1")) == 8
    assert cudnn_of_build("mxnet-cu100", Version("1.4.1")) is None
    assert cudnn_of_build("mxnet", Version("1.9.1")) is None


def test_environment_rules_run_on_dependency_files_named_on_the_command_line(tmp_path):
    (tmp_path / "launch.bash").write_text("export MXNET_ENGINE_TYPE=Naive\npython t.py\n")
    result = check_paths([tmp_path / "launch.bash"], Settings(select=("MXL511",), root=tmp_path))
    assert [(f.code, f.location.row, f.location.column) for f in result.findings] == [
        ("MXL511", 1, 8)
    ]


# -- verify's arithmetic -------------------------------------------------------------------------


def test_operator_calls_are_read_from_the_profilers_table():
    text = textwrap.dedent(
        """
        Profile Statistics:
        MXNET_C_API
        =================
        Name                          Total Count        Time (ms)    Min Time (ms)
        ----                          -----------        ---------    -------------
        MXImperativeInvokeEx                   21           3.4000           0.0030

        operator
        =================
        Name                          Total Count        Time (ms)    Min Time (ms)
        ----                          -----------        ---------    -------------
        dot                                    20          89.1000           4.1000
        _random_uniform                         1           1.2000           1.2000
        DeleteVariable                         16           0.7590           0.0010

        """
    )
    assert operator_calls(text) == 37
    assert operator_rows(text) == {"dot": 20, "_random_uniform": 1, "DeleteVariable": 16}
    assert operator_calls("") == 0


def test_step_times_compare_the_medians_of_paired_runs():
    def run(cpu_ms: float, wall_ms: float = 1.0) -> dict:
        seconds = {"seconds": wall_ms * 20 / 1000, "cpu_seconds": cpu_ms * 20 / 1000}
        return {"window": {**seconds, "steps": 20, "blocked": None}}

    ratio, low, high, slow, fast = compare_times([run(10), run(12)], [run(5), run(4)])
    assert (round(ratio, 3), round(low, 3), round(high, 3)) == (2.444, 2.0, 3.0)
    assert (round(slow, 3), round(fast, 3)) == (11.0, 4.5)
    wall = compare_times([run(1, 30)], [run(1, 10)], "seconds")
    assert wall is not None and round(wall[0], 3) == 3.0
    assert compare_times([run(10), {"window": None}], [run(5), run(5)]) is None
