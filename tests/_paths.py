"""Where the test data live (shared by conftest.py, the tests and tests/oracles/generate.py).

Models:  $GPU_TOK_MODELS,  else <repo>/../shared/models   (one folder per family with tokenizer.json)
Corpora: $GPU_TOK_CORPORA, else <repo>/../shared/corpora  (parity/ and bench/ below it)

Nothing here imports pytest at module level, so the generator can use it without pytest.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from gpu_tok._util import sha256_file  # noqa: F401  (re-exported for the tests)

REPO_ROOT = Path(__file__).resolve().parents[1]
TESTS_DIR = REPO_ROOT / "tests"
ORACLES_DIR = TESTS_DIR / "oracles"


def _dir_from_env(var: str, default: Path) -> Path:
    value = os.environ.get(var)
    if value:
        return Path(value).expanduser().resolve()
    return default.resolve()


def models_dir() -> Path:
    """Folder holding <family>/tokenizer.json ($GPU_TOK_MODELS, else ../shared/models)."""
    return _dir_from_env("GPU_TOK_MODELS", REPO_ROOT / ".." / "shared" / "models")


def corpora_dir() -> Path:
    """Folder holding parity/ and bench/ ($GPU_TOK_CORPORA, else ../shared/corpora)."""
    return _dir_from_env("GPU_TOK_CORPORA", REPO_ROOT / ".." / "shared" / "corpora")


def parity_dir() -> Path:
    return corpora_dir() / "parity"


def model_file(name: str) -> Path:
    """Path of <models_dir>/<name>/tokenizer.json (may not exist)."""
    return models_dir() / name / "tokenizer.json"


def model_path(name: str) -> Path:
    """Like model_file, but calls pytest.skip with a clear reason when the file is absent."""
    path = model_file(name)
    if not path.is_file():
        import pytest

        pytest.skip(
            f"model {name!r} not available: {path} does not exist "
            f"(set GPU_TOK_MODELS to the folder holding <family>/tokenizer.json)"
        )
    return path


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_text_exact(path: Path) -> str:
    """Read a UTF-8 file as str without newline translation (CRLF / CR stay as they are)."""
    return Path(path).read_bytes().decode("utf-8")


def parity_files() -> list[Path]:
    """Every file under corpora/parity, sorted by its path relative to parity/ (POSIX form)."""
    root = parity_dir()
    files = [p for p in root.rglob("*") if p.is_file()]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())
