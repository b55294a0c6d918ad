#!/usr/bin/env python3
"""Train gpu_tok's embedded default tokenizer with the reference trainer.

The default tokenizer is a small byte-level BPE (GPT-2 style: ByteLevel
pre-tokenizer without prefix space, ByteLevel post-processor and decoder, one
special token ``<|endoftext|>``) trained by Hugging Face ``tokenizers``'
``BpeTrainer`` on the repository's own ``*.py`` and ``*.md`` files.

    python scripts/train_default_tokenizer.py            # rewrite gpu_tok/data/
    python scripts/train_default_tokenizer.py --out /tmp/tok.json
    python scripts/train_default_tokenizer.py --check    # verify the committed file

``--check`` exits 0 when the committed file is exactly what training gives,
1 when it is not, and says when that is because the input text has changed
since the committed file was trained (the usual case: the repository's text
grows, the embedded tokenizer stays frozen).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from pathlib import Path

# The trainer gave byte-identical output with 1, 2, 8 and 16 threads here; one
# thread keeps the result independent of scheduling all the same (and costs nothing
# at this size). Set before tokenizers is imported.
os.environ["RAYON_NUM_THREADS"] = "1"

import tokenizers  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "gpu_tok" / "data"
OUT = DATA / "default_tokenizer.json"
PROVENANCE = DATA / "default_tokenizer.PROVENANCE.md"
VOCAB_SIZE = 4000
SPECIAL = "<|endoftext|>"
SKIP_DIRS = {".git", ".venv", "venv", "build", "dist", "__pycache__", "node_modules"}


def input_files(repo: Path = REPO) -> list[str]:
    """Sorted repo-relative paths of the *.py and *.md files used for training.

    In a git checkout: tracked files plus untracked ones git does not ignore;
    otherwise a walk that skips hidden and build folders. gpu_tok/data/ (this
    script's own output) never counts.
    """
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=repo, check=True, capture_output=True,
        ).stdout.decode("utf-8")
        paths = [p for p in out.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for root, dirs, files in os.walk(repo):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")
                       and not d.endswith(".egg-info")]
            paths += [os.path.relpath(os.path.join(root, f), repo) for f in files]
    keep = {
        p.replace(os.sep, "/") for p in paths
        if p.endswith((".py", ".md")) and (repo / p).is_file()
    }
    return sorted(p for p in keep if not p.startswith("gpu_tok/data/"))


def inputs_digest(repo: Path, files: list[str]) -> str:
    """SHA-256 over every input's path and content, in order."""
    h = hashlib.sha256()
    for rel in files:
        h.update(rel.encode("utf-8") + b"\0")
        h.update(hashlib.sha256((repo / rel).read_bytes()).hexdigest().encode("ascii") + b"\n")
    return h.hexdigest()


def train(repo: Path, files: list[str]) -> str:
    """Train on ``files`` (one sequence per file) and return the compact JSON."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        show_progress=False,
        special_tokens=[SPECIAL],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    texts = [(repo / rel).read_bytes().decode("utf-8") for rel in files]
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return tok.to_str(pretty=False) + "\n"


def provenance(files: list[str], digest: str, vocab_size: int, sha: str) -> str:
    listing = "\n".join(f"- `{f}`" for f in files)
    return f"""# default_tokenizer.json provenance

- made by: `scripts/train_default_tokenizer.py` (`BpeTrainer`, vocab_size={VOCAB_SIZE}, min_frequency=2, one thread)
- reference: `tokenizers` {tokenizers.__version__}
- model: byte-level BPE, ByteLevel pre-tokenizer (add_prefix_space=False), ByteLevel post-processor (trim_offsets=False), ByteLevel decoder, special token `{SPECIAL}`
- vocabulary size (with added tokens): {vocab_size}
- sha256 of default_tokenizer.json: `{sha}`
- inputs: {len(files)} files; digest `{digest}` (sha256 over each path, NUL, sha256 of its content, newline)

Input files, in training order:

{listing}
"""


def recorded_digest(path: Path) -> str | None:
    if not path.is_file():
        return None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("- inputs:") and "digest `" in line:
            return line.split("digest `", 1)[1].split("`", 1)[0]
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help=f"write here instead of {OUT.relative_to(REPO)} "
                    "(the provenance file is written beside it)")
    ap.add_argument("--check", action="store_true",
                    help="compare with the committed file instead of writing")
    args = ap.parse_args(argv)

    files = input_files(REPO)
    if not files:
        print("no *.py or *.md files found to train on", file=sys.stderr)
        return 1
    digest = inputs_digest(REPO, files)

    if args.check:
        want = recorded_digest(PROVENANCE)
        if want != digest:
            print(f"inputs changed since {OUT.relative_to(REPO)} was trained "
                  f"(recorded {want}, now {digest}); nothing to compare")
            return 1
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == train(REPO, files)
        print("identical" if same else f"DIFFERS: {OUT.relative_to(REPO)} is not what training gives")
        return 0 if same else 1

    text = train(REPO, files)
    out = args.out or OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    vocab_size = Tokenizer.from_str(text).get_vocab_size(with_added_tokens=True)
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    prov = out.with_name(out.name.removesuffix(".json") + ".PROVENANCE.md")
    prov.write_text(provenance(files, digest, vocab_size, sha), encoding="utf-8")
    print(f"wrote {out} ({len(text.encode('utf-8'))} bytes, vocab {vocab_size}, {len(files)} input files) and {prov.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
