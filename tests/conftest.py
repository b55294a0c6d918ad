"""Shared pytest setup.

* `--full`: tests marked `@pytest.mark.full` (exhaustive sweeps) are skipped unless it is given;
  a test that takes the `full_run` fixture runs a slice of its grid without it.
* `models_dir()` / `corpora_dir()` / `model_path(name)` live in tests/_paths.py
  ($GPU_TOK_MODELS / $GPU_TOK_CORPORA, else ../shared/models and ../shared/corpora).
* After each test file, what the files keep between tests (tests/_kept.py) is let go.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

if str(Path(__file__).resolve().parent) not in sys.path:  # also under --import-mode=importlib
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from _kept import forget_all  # noqa: E402
from _paths import corpora_dir, model_path as _model_path, models_dir  # noqa: F401  (re-exported)


def pytest_addoption(parser):
    parser.addoption(
        "--full",
        action="store_true",
        default=False,
        help="also run the exhaustive sweeps (tests marked @pytest.mark.full)",
    )


def pytest_configure(config):
    # Registered in pyproject.toml too; repeating it keeps `-p no:cacheprovider`/other
    # rootdirs from warning about an unknown mark.
    config.addinivalue_line("markers", "full: exhaustive parity sweeps, run only with --full")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--full"):
        return
    skip_full = pytest.mark.skip(reason="exhaustive sweep: run with --full")
    for item in items:
        if item.get_closest_marker("full") is not None:
            item.add_marker(skip_full)


@pytest.fixture(scope="session")
def full_run(request) -> bool:
    """True under ``--full``: a sweep runs its whole grid, otherwise the representative
    slice it names (docs/decisions/0042-suite-time.md)."""
    return bool(request.config.getoption("--full"))


@pytest.fixture(scope="session")
def model_path():
    """model_path(name) -> Path of <models>/<name>/tokenizer.json; skips when it is absent."""
    return _model_path


@pytest.fixture(scope="module", autouse=True)
def _forget_kept_after_each_file():
    """Tokenizers and samples the test files keep (``kept_dict``, ``kept_cache``) live until
    the file's last test: an xdist worker runs many files, and kept to the end they filled
    this 24 GB host (tests/_kept.py)."""
    yield
    forget_all()
