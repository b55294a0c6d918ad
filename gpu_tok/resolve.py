"""Find a ``tokenizer.json`` from a path or a model name.

``resolve_tokenizer(spec)`` tries, in order:

1. ``spec`` as a path: a ``tokenizer.json`` file, or a directory holding one;
2. ``$GPU_TOK_MODELS/<spec>/tokenizer.json``;
3. the Hugging Face cache (``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
   ``~/.cache/huggingface/hub``): ``models--{org}--{name}/snapshots/*/tokenizer.json``,
   the snapshot ``refs/main`` points at, else the newest one;
4. ``huggingface_hub.hf_hub_download(spec, "tokenizer.json")`` when
   ``huggingface_hub`` is importable and ``HF_HUB_OFFLINE`` is not set.

When none of them gives a file, ``TokenizerNotFound`` lists every place tried.
"""

from __future__ import annotations

import os
from pathlib import Path

TOKENIZER_FILE = "tokenizer.json"


class TokenizerNotFound(FileNotFoundError):
    """No tokenizer.json could be found for a path or name."""


def default_tokenizer_path() -> Path:
    """The small byte-level BPE tokenizer shipped inside the package."""
    return Path(__file__).resolve().parent / "data" / "default_tokenizer.json"


def hf_hub_cache_dir() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def _from_hf_cache(name: str, tried: list[str]) -> Path | None:
    repo_dir = hf_hub_cache_dir() / ("models--" + name.replace("/", "--"))
    tried.append(f"Hugging Face cache: {repo_dir}/snapshots/*/{TOKENIZER_FILE}")
    snapshots = repo_dir / "snapshots"
    ref = repo_dir / "refs" / "main"
    if ref.is_file():
        candidate = snapshots / ref.read_text().strip() / TOKENIZER_FILE
        if candidate.is_file():
            return candidate
    found = [p for p in snapshots.glob(f"*/{TOKENIZER_FILE}") if p.is_file()]
    if not found:
        return None
    return max(found, key=lambda p: (p.stat().st_mtime, str(p)))


def _from_hub(name: str, tried: list[str]) -> Path | None:
    if _truthy(os.environ.get("HF_HUB_OFFLINE")):
        tried.append("Hugging Face Hub: skipped (HF_HUB_OFFLINE is set)")
        return None
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        tried.append("Hugging Face Hub: skipped (huggingface_hub is not installed)")
        return None
    try:
        return Path(hf_hub_download(name, TOKENIZER_FILE))
    except Exception as exc:  # network, auth, missing repo: report, don't crash
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        tried.append(f"Hugging Face Hub: {name}: {type(exc).__name__}: {reason}")
        return None


def resolve_tokenizer(spec: str | os.PathLike) -> Path:
    """Return the path of the ``tokenizer.json`` that ``spec`` names."""
    tried: list[str] = []
    path = Path(spec).expanduser()
    tried.append(f"path: {path}")
    if path.is_file():
        return path
    if path.is_dir():
        if (path / TOKENIZER_FILE).is_file():
            return path / TOKENIZER_FILE
        raise TokenizerNotFound(f"directory {path} has no {TOKENIZER_FILE}")

    name = str(spec)
    models = os.environ.get("GPU_TOK_MODELS")
    if models:
        candidate = Path(models).expanduser() / name / TOKENIZER_FILE
        tried.append(f"GPU_TOK_MODELS: {candidate}")
        if candidate.is_file():
            return candidate
    else:
        tried.append("GPU_TOK_MODELS: not set")

    found = _from_hf_cache(name, tried) or _from_hub(name, tried)
    if found is not None:
        return found
    lines = "\n".join(f"  - {t}" for t in tried)
    raise TokenizerNotFound(f"no {TOKENIZER_FILE} found for {name!r}; looked in:\n{lines}")
