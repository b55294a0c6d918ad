"""Which engines leave CPython's UTF-8 cache on the strings they read (decision 0021).

CPython stores a non-ASCII ``str`` without its UTF-8; ``PyUnicode_AsUTF8AndSize`` encodes
it once and keeps the bytes on the object, and ``str.encode("utf-8")`` then copies them
instead of encoding again. So the time of ``str.encode`` over fresh strings, against the
same after an engine has read them, shows whether that engine went through the call.

    python benchmarks/utf8_cache_check.py [--file multilingual] [--mb 2]

Prints, for each engine, the ``str.encode`` time of all texts after one call of the
engine on fresh copies of them (best of 3), next to the time on untouched fresh copies.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from gpu_tok.bench import corpora_dir, models_dir, load_texts, read_rank_file


def encode_ms(texts) -> float:
    t0 = time.perf_counter()
    for t in texts:
        t.encode("utf-8")
    return 1e3 * (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default="multilingual")
    ap.add_argument("--mb", type=float, default=2.0)
    a = ap.parse_args()
    texts = load_texts(corpora_dir() / "bench" / f"{a.file}.jsonl", a.mb * 1e6)
    gpt2 = models_dir() / "gpt2" / "tokenizer.json"
    engines = {}
    import gpu_tok

    ours = gpu_tok.Tokenizer.from_file(str(gpt2))
    engines["gpu_tok (device=cpu)"] = lambda ts: ours.encode_batch_ids(ts, device="cpu")
    try:
        import tokenizers

        hf = tokenizers.Tokenizer.from_file(str(gpt2))
        engines["tokenizers " + tokenizers.__version__] = lambda ts: hf.encode_batch(ts)
    except ImportError:
        pass
    try:
        import tiktoken

        enc = tiktoken.Encoding("r50k_base", pat_str=r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
                                mergeable_ranks=read_rank_file(models_dir() / "tiktoken" / "r50k_base.tiktoken"),
                                special_tokens={})
        engines["tiktoken " + tiktoken.__version__] = lambda ts: enc.encode_ordinary_batch(ts)
    except (ImportError, OSError):
        pass
    try:
        import fastokens

        ft = fastokens.Tokenizer.from_json_str(Path(gpt2).read_text(encoding="utf-8"))
        engines["fastokens"] = lambda ts: ft.encode_batch_flat(ts, add_special_tokens=False)
    except ImportError:
        pass

    def fresh():
        return [t.encode("utf-8").decode("utf-8") for t in texts]

    base = min(encode_ms(fresh()) for _ in range(3))
    print(f"{len(texts)} texts, {sum(len(t.encode()) for t in texts) / 1e6:.2f} MB of {a.file}")
    print(f"str.encode of fresh strings: {base:.2f} ms")
    for name, run in engines.items():
        best = 1e9
        for _ in range(3):
            ts = fresh()
            run(ts)
            best = min(best, encode_ms(ts))
        print(f"str.encode after {name}: {best:.2f} ms")


if __name__ == "__main__":
    main()
