"""MXL5xx: the dependency-file readers, the rules' own examples, and the bad/good fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest
from expectations import actual, expected
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mxlint import registry
from mxlint.api import check_paths
from mxlint.config import Settings
from mxlint.dockerfile import cuda_of_image, parse_dockerfile
from mxlint.requirements_parsing import (
    conda_to_pep440,
    parse_environment_yml,
    parse_pyproject,
    parse_requirements_txt,
    parse_setup_cfg,
    parse_setup_py,
    poetry_to_pep440,
)
from mxlint.rule import Example, Valid
from mxlint.rules.versions._files import file_kind, named_kind
from mxlint.rules.versions._releases import releases

REQ_RULES = [r for r in registry.all_rules().values() if r.kind == "requirements"]


# --- every rule's examples, as files in a scratch project -----------------------------------


def _run(tmp_path: Path, code: str, filename: str, project, rule) -> list:
    target = tmp_path / filename
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(code, encoding="utf-8")
    for name, text in project:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    result = check_paths([tmp_path], Settings(select=(rule.code,), root=tmp_path))
    return [f for f in result.findings if f.code == rule.code]


def _cases(kind: str):
    for rule in REQ_RULES:
        for i, ex in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, ex, id=f"{rule.code}-{kind}-{i}")


@pytest.mark.parametrize(("rule", "example"), list(_cases("invalid")))
def test_invalid_example_is_reported(tmp_path, rule, example):
    ex = example if isinstance(example, Example) else Example(example)
    hits = _run(tmp_path, ex.code, ex.filename, ex.project, rule)
    assert hits, f"{rule.code} not reported on {ex.filename}:\n{ex.code}"
    if ex.line is not None:
        target = (tmp_path / ex.filename).resolve()
        rows = [f.location.row for f in hits if Path(f.filename).resolve() == target]
        assert ex.line in rows, rows


@pytest.mark.parametrize(("rule", "example"), list(_cases("valid")))
def test_valid_example_is_silent(tmp_path, rule, example):
    ex = example if isinstance(example, Valid) else Valid(example)
    assert _run(tmp_path, ex.code, ex.filename, ex.project, rule) == []


def test_every_requirements_rule_has_examples_and_docs():
    assert {r.code for r in REQ_RULES} >= {
        "MXL501",
        "MXL502",
        "MXL503",
        "MXL504",
        "MXL505",
        "MXL506",
    }
    for rule in REQ_RULES:
        assert rule.invalid and rule.valid, rule.code
        doc = rule.documentation()
        for heading in (
            "## What it does",
            "## Why is this bad?",
            "## Example",
            "## Use instead",
            "## Fix safety",
        ):
            assert heading in doc, (rule.code, heading)
        assert "flake8" in doc, rule.code


# --- fixtures -------------------------------------------------------------------------------


def test_bad_project_findings_are_exactly_the_marked_ones(fixtures_dir):
    root = fixtures_dir / "versions" / "bad"
    marked = expected(root)
    assert {code for _, _, code in marked} >= {
        "MXL501",
        "MXL502",
        "MXL503",
        "MXL504",
        "MXL505",
        "MXL506",
    }
    assert actual(root, prefix="MXL5") == marked


def test_good_project_is_clean(fixtures_dir):
    root = fixtures_dir / "versions" / "good"
    assert expected(root) == set()
    assert actual(root, prefix="MXL5") == set()


def test_findings_point_at_the_requirement(fixtures_dir):
    root = fixtures_dir / "versions" / "bad"
    result = check_paths([root], Settings(select=("MXL5",), root=root))
    by_place = {(Path(f.filename).name, f.location.row, f.code): f for f in result.findings}
    dock = by_place[("Dockerfile", 12, "MXL505")]
    line = (root / "Dockerfile").read_text().splitlines()[11]
    assert line[dock.location.column - 1 :].startswith("onnx==1.19.0")
    assert "onnx<1.19" in dock.message
    pin = by_place[("requirements.txt", 4, "MXL501")]
    assert pin.location.column == 1 and "mxnet-cu112==1.9.1" in pin.message


def _placed(root: Path, codes: tuple[str, ...], paths: list[Path] | None = None) -> set:
    result = check_paths(paths or [root], Settings(select=codes, root=root))
    base = root.resolve()
    return {
        (
            Path(f.filename).resolve().relative_to(base).as_posix(),
            f.location.row,
            f.location.column,
            f.code,
        )
        for f in result.findings
    }


def test_unreadable_entries_and_undeclared_dependencies_are_placed_exactly(fixtures_dir):
    root = fixtures_dir / "versions" / "bad"
    assert _placed(root, ("MXL507", "MXL508")) == {
        ("requirements/base.txt", 2, 13, "MXL507"),
        ("requirements/base.txt", 3, 8, "MXL507"),
        ("library/setup.py", 6, 5, "MXL508"),
        ("library/setup.py", 8, 9, "MXL507"),
        ("poetry/pyproject.toml", 15, 9, "MXL507"),
    }
    undeclared = {t for t in _placed(root, ("MXL506",)) if t[0].startswith("trainer/")}
    assert undeclared == {
        ("trainer/pyproject.toml", 5, 6, "MXL506"),
        ("trainer/requirements/gpu.in", 2, 1, "MXL506"),
        ("trainer/Dockerfile", 2, 32, "MXL506"),
    }


def test_undeclared_messages_say_where_the_fix_goes(fixtures_dir):
    root = fixtures_dir / "versions" / "bad"
    result = check_paths([root / "library"], Settings(select=("MXL5",), root=root))
    (finding,) = [f for f in result.findings if f.code == "MXL508"]
    assert finding.message == (
        "`import mxlib` imports mxnet (mxlib/model.py:1), but the metadata requires no MXNet "
        "build: add one to `install_requires` (a range of `mxnet` releases, or an extra per "
        "build), and cap `numpy>=1.17` (line 7) with `<1.24`"
    )
    result = check_paths([root / "trainer" / "Dockerfile"], Settings(select=("MXL5",), root=root))
    assert [f.message for f in result.findings] == [
        "`mxnet==1.9.1` leaves numpy to MXNet's own `numpy<2.0.0,>1.16.0`, which installs "
        "numpy 1.24+, where `import mxnet` fails (`np.bool` was removed): add `numpy<1.24`"
    ]


def test_a_file_named_on_the_command_line_is_checked_whatever_its_name(tmp_path):
    (tmp_path / "requirements").mkdir()
    (tmp_path / "deps").mkdir()
    (tmp_path / "requirements" / "base.txt").write_text("mxnet=1.9.1\n")
    (tmp_path / "deps" / "pins.lock").write_text("numpy<1.24\nmxnet==1.9.1numpy\n")
    (tmp_path / "deps" / "notes.md").write_text("mxnet=1.9.1\n")
    named = [tmp_path / "requirements" / "base.txt", tmp_path / "deps" / "pins.lock"]
    assert _placed(tmp_path, ("MXL5",), named) == {
        ("requirements/base.txt", 1, 6, "MXL507"),
        ("deps/pins.lock", 2, 13, "MXL507"),
    }
    # Under a directory only the names that say what a file is: requirements/*.txt is one.
    assert _placed(tmp_path, ("MXL5",)) == {("requirements/base.txt", 1, 6, "MXL507")}
    # A document named on the command line is prose, not a list of requirements.
    assert _placed(tmp_path, ("MXL5",), [tmp_path / "deps" / "notes.md"]) == set()


def test_a_staged_file_alone_still_sees_the_projects_numpy_cap(tmp_path):
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='x', install_requires=['numpy<1.24'])\n"
    )
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "train.txt").write_text("mxnet==1.9.1\n-e .\n")
    (tmp_path / "requirements" / "docs.txt").write_text("sphinx\n")
    named = [tmp_path / "requirements" / "train.txt", tmp_path / "requirements" / "docs.txt"]
    assert _placed(tmp_path, ("MXL5",), named) == set()
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='x', install_requires=['numpy'])\n"
    )
    assert _placed(tmp_path, ("MXL5",), named) == {("requirements/train.txt", 1, 1, "MXL506")}


def test_a_package_imports_mxnet_only_through_module_level_imports(tmp_path):
    from mxlint.rules.versions._packages import mxnet_import

    pkg = tmp_path / "src" / "mxlib"
    (pkg / "nets").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""import mxnet"""\nfrom . import nets\n')
    (pkg / "nets" / "__init__.py").write_text("from .resnet import build\n")
    (pkg / "nets" / "resnet.py").write_text("import os\n\nfrom mxnet.gluon import nn\n")
    (pkg / "optional.py").write_text("import mxnet\n")
    found = mxnet_import(str(tmp_path))
    assert found is not None
    assert (found.package, Path(found.path).relative_to(tmp_path).as_posix(), found.line) == (
        "mxlib",
        "src/mxlib/nets/resnet.py",
        3,
    )
    (pkg / "nets" / "resnet.py").write_text("def build():\n    import mxnet\n")
    assert mxnet_import(str(tmp_path)) is None


# --- readers --------------------------------------------------------------------------------


def test_requirements_txt_reader():
    text = (
        "# comment\n"
        "-r base.txt\n"
        "--constraint=constraints.txt\n"
        "mxnet-cu112[extra]==1.9.1 \\\n"
        "    --hash=sha256:abc\n"
        'numpy<1.24; python_version >= "3.8"  # cap\n'
        "  onnx>=1.10 --hash=sha256:def\n"
        "https://host/x/mxnet_cu112-1.9.1-py3-none-manylinux2014_x86_64.whl\n"
        "git+https://github.com/org/repo.git#egg=gluoncv\n"
        "-e .\n"
        "not a requirement !!\n"
        "pkg==${VERSION}\n"
    )
    parsed = parse_requirements_txt(text)
    got = [(r.name, r.specifier, r.line, r.col, r.extras, r.direct) for r in parsed.requirements]
    assert got == [
        ("mxnet-cu112", "==1.9.1", 4, 1, ("extra",), False),
        ("numpy", "<1.24", 6, 1, (), False),
        ("onnx", ">=1.10", 7, 3, (), False),
        ("mxnet-cu112", "==1.9.1", 8, 1, (), True),
        ("gluoncv", "", 9, 1, (), True),
    ]
    assert parsed.requirements[1].marker == 'python_version >= "3.8"'
    assert [(i.kind, i.target, i.line) for i in parsed.includes] == [
        ("r", "base.txt", 2),
        ("c", "constraints.txt", 3),
    ]
    assert not parsed.custom_index
    assert parse_requirements_txt("-i https://pypi.org/simple\nmxnet\n").custom_index is False
    assert parse_requirements_txt("-f ./wheels\nmxnet\n").custom_index is True


def test_requirements_options_take_their_value_after_any_whitespace():
    text = (
        "-c\t constraints.txt\n--requirement\tbase.txt\n-rextra.txt\n"
        "--constraint=pins.txt more\n-c\t\n--index-url\thttps://mirror.example/simple\n"
    )
    parsed = parse_requirements_txt(text)
    assert [(i.kind, i.target, i.line) for i in parsed.includes] == [
        ("c", "constraints.txt", 1),
        ("r", "base.txt", 2),
        ("r", "extra.txt", 3),
        ("c", "pins.txt", 4),
    ]
    assert parsed.custom_index


def test_pyproject_reader_pep621_and_groups():
    text = (
        '[project]\nname = "x"\ndependencies = [\n  "mxnet>=1.6",\n  \'numpy\',\n]\n'
        '[project.optional-dependencies]\ngpu = ["mxnet-cu112==1.9.1"]\n'
    )
    parsed = parse_pyproject(text)
    assert [(r.name, r.line, r.col) for r in parsed.requirements] == [
        ("mxnet", 4, 4),
        ("numpy", 5, 4),
    ]
    assert [(r.name, r.line) for r in parsed.groups["extra:gpu"]] == [("mxnet-cu112", 8)]
    assert parse_pyproject("[project\nbroken").requirements == []


def test_poetry_reader_and_specs():
    text = (
        '[tool.poetry.dependencies]\npython = "^3.8"\nmxnet = "^1.9.1"\n'
        'numpy = {version = "~1.23", extras = ["x"]}\nonnx = "1.14.1"\n'
        '[tool.poetry.group.gpu.dependencies]\nmxnet-cu112 = ">=1.9"\n'
    )
    parsed = parse_pyproject(text)
    assert [(r.name, r.specifier, r.line) for r in parsed.requirements] == [
        ("mxnet", ">=1.9.1,<2", 3),
        ("numpy", ">=1.23,<1.24", 4),
        ("onnx", "==1.14.1", 5),
    ]
    assert [(r.name, r.line) for r in parsed.groups["poetry:gpu"]] == [("mxnet-cu112", 7)]
    assert poetry_to_pep440("^0.2.3") == ">=0.2.3,<0.3"
    assert poetry_to_pep440("~1.2.3") == ">=1.2.3,<1.3"
    assert poetry_to_pep440("*") == ""
    assert poetry_to_pep440(">=1.2, <2") == ">=1.2,<2"
    assert poetry_to_pep440("1.9.*") == "==1.9.*"
    assert poetry_to_pep440("^1 || ^2") is None


def test_setup_py_reader_never_executes():
    text = (
        "import os\nos.system('exit 1')\nfrom setuptools import setup\n"
        "BASE = ['numpy<1.24']\nREQ = BASE + [\n    'mxnet==1.9.1',\n]\n"
        "setup(install_requires=REQ, extras_require={'gpu': ['mxnet-cu112==1.9.1']})\n"
    )
    parsed = parse_setup_py(text)
    assert [(r.name, r.line, r.col) for r in parsed.requirements] == [
        ("numpy", 4, 9),
        ("mxnet", 6, 5),
    ]
    assert [r.name for r in parsed.groups["extra:gpu"]] == ["mxnet-cu112"]
    assert (
        parse_setup_py("setup(install_requires=open('r.txt').read().split())\n").requirements == []
    )
    assert parse_setup_py("def (:\n").requirements == []


def test_setup_cfg_reader():
    text = (
        "[options]\ninstall_requires =\n    mxnet>=1.5\n    # note\n    numpy<1.24\n"
        "python_requires = >=3.8\n[options.extras_require]\ngpu = mxnet-cu112==1.9.1\n"
    )
    parsed = parse_setup_cfg(text)
    assert [(r.name, r.line, r.col) for r in parsed.requirements] == [
        ("mxnet", 3, 5),
        ("numpy", 5, 5),
    ]
    assert [(r.name, r.line, r.col) for r in parsed.groups["extra:gpu"]] == [("mxnet-cu112", 8, 7)]


def test_setup_cfg_one_line_list_is_split_at_semicolons():
    """As setuptools reads a list option: all on the key's line, `;` separates requirements;
    on continuation lines, each line is one requirement and `;` starts its marker."""
    one_line = parse_setup_cfg("[options]\ninstall_requires = mxnet==1.9.1; numpy<1.24  # x\n")
    assert [(r.name, str(r.specifier), r.line, r.col) for r in one_line.requirements] == [
        ("mxnet", "==1.9.1", 2, 20),
        ("numpy", "<1.24", 2, 34),
    ]
    assert one_line.malformed == []
    dangling = parse_setup_cfg(
        '[options]\ninstall_requires = mxnet==1.9.1\n    numpy<1.24; python_version<"3.12"\n'
    )
    assert [(r.name, r.line, r.col) for r in dangling.requirements] == [
        ("mxnet", 2, 20),
        ("numpy", 3, 5),
    ]
    assert dangling.malformed == []


def test_environment_yml_reader():
    text = (
        "name: x\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.9\n"
        '  - conda-forge::numpy>=1.21  # c\n  - "mxnet 1.9.1 py39_0"\n  - pip\n'
        "  - pip:\n      - -r requirements.txt\n      - onnx==1.14.1\nprefix: /opt\n"
    )
    parsed = parse_environment_yml(text)
    got = [(r.name, r.specifier, r.line, r.col, r.conda) for r in parsed.requirements]
    assert got == [
        ("python", "==3.9.*", 5, 5, True),
        ("numpy", ">=1.21", 6, 5, True),
        ("mxnet", "==1.9.1", 7, 6, True),
        ("pip", "", 8, 5, True),
        ("onnx", "==1.14.1", 11, 9, False),
    ]
    assert [(i.kind, i.target) for i in parsed.includes] == [("r", "requirements.txt")]
    assert conda_to_pep440("=1.9.1=py38_0") == "==1.9.1.*"
    assert conda_to_pep440(">=1.2|<0.5") is None


def test_dockerfile_reader():
    text = (
        "ARG CUDA=11.2.2\nARG MX=1.9.1\n"
        "FROM --platform=linux/amd64 nvidia/cuda:${CUDA}-cudnn8-runtime-ubuntu20.04 AS build\n"
        "# a comment\nWORKDIR /src\nCOPY reqs/gpu.txt ./requirements.txt\n"
        "ARG MX\n"
        "RUN apt-get update && \\\n"
        "    # comment inside\n"
        "    python3 -m pip install --no-cache-dir -U 'mxnet-cu112==${MX}' numpy\\<1.24 \\\n"
        "      -r requirements.txt && pip3 install $UNKNOWN onnx  # trailing comment onnx2\n"
        "FROM build AS final\n"
        'RUN ["pip", "install", "gluoncv==0.10.5"]\n'
        "RUN conda install -y -c conda-forge mxnet=1.9\n"
    )
    stages = parse_dockerfile(text)
    assert [(s.name, s.cuda, s.line) for s in stages] == [
        ("build", "11.2", 3),
        ("final", "11.2", 12),
    ]
    got = [(r.name, r.specifier, r.line, r.col) for r in stages[0].requirements]
    assert got == [
        ("mxnet-cu112", "==1.9.1", 10, 47),
        ("numpy", "<1.24", 10, 67),
        ("onnx", "", 11, 52),
    ]
    assert [i.target for i in stages[0].includes] == ["requirements.txt"]
    assert stages[0].copies == {"/src/requirements.txt": "reqs/gpu.txt"}
    assert [r.name for r in stages[1].requirements][-2:] == ["gluoncv", "mxnet"]
    assert parse_dockerfile("ARG BASE\nFROM ${BASE}\nRUN pip install mxnet\n")[0].cuda is None


def test_cuda_of_image():
    assert cuda_of_image("nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04") == "11.2"
    assert cuda_of_image("nvcr.io/nvidia/cuda:10.1-devel") == "10.1"
    assert cuda_of_image("pytorch/pytorch:1.9.0-cuda11.1-cudnn8-runtime") == "11.1"
    assert cuda_of_image("ubuntu:20.04") is None
    assert cuda_of_image("nvidia/cuda") is None
    assert cuda_of_image("localhost:5000/cuda") is None


def test_malformed_entries_from_every_reader():
    def placed(parsed):
        return [(m.line, m.col, m.width, m.hint) for m in parsed.malformed]

    text = (
        "mxnet==1.9.1numpy<1.24\nonnx=1.14.1\nnumpy>=1.20<1.24\nmxnet 1.9.1\n"
        "-e .\n./vendor/pkg\nwheels/x-1.0-py3-none-any.whl\npkg==${V}\n"
        "  gluoncv==0.10.5 scipy  # comment\n"
    )
    assert placed(parse_requirements_txt(text)) == [
        (1, 13, 10, "two requirements run together: put `numpy<1.24` on a line of its own"),
        (2, 5, 7, "`=` is not a version operator: `onnx==1.14.1`"),
        (3, 12, 5, "version clauses are separated by commas: `numpy>=1.20,<1.24`"),
        (4, 7, 5, "a version needs an operator: `mxnet==1.9.1`"),
        (9, 19, 5, "two requirements run together: put `scipy` on a line of its own"),
    ]
    setup_py = (
        "from setuptools import setup\nsetup(install_requires=[\n"
        "    'mxnet==1.9.1' 'numpy<1.24',\n    r'onnx=1.14',\n])\n"
    )
    assert [(line, col) for line, col, _, _ in placed(parse_setup_py(setup_py))] == [
        (3, 5),  # implicit concatenation: at the literal
        (4, 11),  # a plain literal: where reading stops, past `r'`
    ]
    pyproject = (
        '[project]\nname = "x"\ndependencies = ["mxnet=1.9.1"]\n'
        '[tool.poetry.dependencies]\nnumpy = ">=1.2 <1.24"\nonnx = "1.14,onnx"\n'
        'rpy2 = ">=2.9.*,<3.*"\n'
    )
    assert placed(parse_pyproject(pyproject)) == [
        (3, 23, 6, "`=` is not a version operator: `mxnet==1.9.1`"),
        (
            6,
            9,
            9,
            "`1.14,onnx` is not a Poetry version constraint "
            "(`^1.9`, `~1.9.1`, `>=1.9,<2`, `1.9.1`)",
        ),
    ]
    assert placed(parse_pyproject('[project]\ndependencies = ["a" "b"]\n')) == [
        (2, 21, 4, "the file is not TOML (unclosed array), so none of it is read")
    ]
    cfg = "[options]\ninstall_requires =\n    mxnet=1.9.1\n"
    assert placed(parse_setup_cfg(cfg)) == [
        (3, 10, 6, "`=` is not a version operator: `mxnet==1.9.1`")
    ]
    env = "dependencies:\n- mxnet=1.9.1\n- pip:\n  - mxnet=1.9.1\n"
    assert placed(parse_environment_yml(env)) == [
        (4, 10, 6, "`=` is not a version operator: `mxnet==1.9.1`")
    ]


def test_environment_lists_at_their_keys_indent():
    text = "name: g\ndependencies:\n- python\n- pip:\n  - mxnet>=1.6\n- numpy\nprefix: /x\n"
    parsed = parse_environment_yml(text)
    assert [(r.name, r.line, r.conda) for r in parsed.requirements] == [
        ("python", 3, True),
        ("mxnet", 5, False),
        ("numpy", 6, True),
    ]


def test_python_requires_and_poetry_python_are_read():
    assert (
        parse_setup_py(
            "from setuptools import setup\nsetup(install_requires=['mxnet'], python_requires='~=2.7')\n"
        ).python_requires
        == "~=2.7"
    )
    assert parse_pyproject('[project]\nrequires-python = ">=3.8"\n').python_requires == ">=3.8"
    assert parse_setup_cfg("[options]\npython_requires = >=3.6\n").python_requires == ">=3.6"
    assert parse_pyproject('[tool.poetry.dependencies]\npython = "^3.7"\n').lock_python == (
        ">=3.7,<4"
    )


def test_setup_py_dependencies_out_of_sight_are_opaque():
    head = "from setuptools import setup\n"
    assert parse_setup_py(head + "setup(install_requires=['numpy'])\n").opaque is False
    assert parse_setup_py(head + "setup(install_requires=read('r.txt'))\n").opaque is True
    assert parse_setup_py(
        head + "R = ['numpy']\nR.append('mxnet')\nsetup(install_requires=R)\n"
    ).opaque
    assert parse_setup_py(head + "setup(**CONFIG)\n").opaque is True
    assert parse_setup_cfg("[options]\ninstall_requires = file: requirements.txt\n").opaque
    assert parse_pyproject('[project]\nname = "x"\ndynamic = ["dependencies"]\n').opaque


def test_file_kinds():
    assert file_kind("requirements/base.txt") == "requirements"
    assert file_kind("requirements/dev.in") == "requirements"
    assert file_kind("requirements/README.md") is None
    assert file_kind("docs/base.txt") is None
    assert named_kind("deps/base.txt") == "requirements"
    assert named_kind("deps/pins.lock") == "requirements"
    assert named_kind("train.py") is None
    for document in ("README.md", "docs/index.rst", ".github/workflows/ci.yml", "data.json"):
        assert named_kind(document) is None
    assert named_kind("Dockerfile") == "dockerfile"
    assert file_kind("requirements-dev.txt") == "requirements"
    assert file_kind("dev-requirements.in") == "requirements"
    assert file_kind("constraints.txt") == "requirements"
    assert file_kind("Dockerfile.gpu") == "dockerfile"
    assert file_kind("train.Dockerfile") == "dockerfile"
    assert file_kind("environment-gpu.yml") == "environment"
    assert file_kind("config.yml") is None
    assert file_kind("setup.py") == "setup.py"
    assert file_kind("train.py") is None


def test_release_tables():
    table = releases()
    assert "1.9.1" in table.variants["mxnet-cu112"]
    assert "1.8.0" not in table.variants["mxnet-cu112"]
    assert "1.9.1" not in table.variants["mxnet-cu100"]
    assert "1.24.0" in table.numpy and "1.19.0" in table.onnx


_PIECES = [
    *"mxnetcu12=<>.-[]{}\"'#\\\n :;|&$()^~*,",
    "FROM ",
    "RUN pip install ",
    "-r ",
    "dependencies:",
    "- pip:",
    "[project]",
    "setup(install_requires=[",
]
_ANY_TEXT = st.lists(st.sampled_from(_PIECES), max_size=80).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ANY_TEXT)
def test_readers_never_crash(text):
    parse_requirements_txt(text)
    parse_pyproject(text)
    parse_setup_cfg(text)
    parse_environment_yml(text)
    parse_dockerfile(text)
    parse_setup_py(text)
