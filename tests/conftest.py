from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(autouse=True, scope="session")
def _cache_outside_the_checkout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """`mxlint check` keeps a cache at the project root; tests that lint the fixtures must not
    leave one inside the checkout (tests of the cache itself unset this). Session-scoped, so
    that module-scoped fixtures running the CLI see it too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MXLINT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "mxlint-cache"))
        # Reports are compared as plain text: a terminal's forced colour must not reach them.
        patch.delenv("FORCE_COLOR", raising=False)
        yield
