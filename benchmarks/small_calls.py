"""One text per call: the per-call cost of ours against HF ``tokenizers`` and ``tiktoken``.

Each API is called on one text at a time, as a user's loop over documents calls it
(``[enc.encode(t) for t in texts]``): ``Tokenizer.encode`` (its ``ids``, and its ``offsets``:
another field), ``encode_batch([text])``,
``encode_batch_ids([text], device="cpu")`` against ``tokenizers.Tokenizer.encode`` /
``encode_batch``; for a tiktoken encoding ``encode`` and ``encode_ordinary`` against
tiktoken's. The texts are the first ``--chars`` characters (each length in the list) of
the bench prose documents; the result is microseconds per call (best of ``--repeat``
passes over ``--texts`` texts, after one warm-up pass), and the ids of every call are
checked against the reference's first (exit status 1 on a mismatch). ``--decode``: ``decode``
of each text's ids instead (the reference's ids; ``--chars 1`` gives one id a call, as a
generation loop decodes), the texts checked against the reference's.

    python benchmarks/small_calls.py
    python benchmarks/small_calls.py --decode --chars 1,50,500
    python benchmarks/small_calls.py --models gpt2,llama2,bert-base-uncased,cl100k_base --chars 5,50,500,5000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpu_tok.bench import bench_file, load_texts, models_dir  # noqa: E402


def best_us(fn, texts, repeat: int) -> float:
    for t in texts:
        fn(t)
    best = float("inf")
    for _ in range(repeat):
        a = time.perf_counter()
        for t in texts:
            fn(t)
        best = min(best, time.perf_counter() - a)
    return best / len(texts) * 1e6


TIKTOKEN_NAMES = ("cl100k_base", "o200k_base", "r50k_base", "p50k_base")


def tiktoken_pair(name: str, models: Path):
    """Ours and tiktoken's encoding ``name`` (the rank file read in place)."""
    import tiktoken

    from gpu_tok.tiktoken_encoding import from_tiktoken, load_tiktoken_bpe, named_definition

    path = models / "tiktoken" / f"{name}.tiktoken"
    d = named_definition(name)
    return from_tiktoken(name, path), tiktoken.Encoding(name, pat_str=d["pat_str"],
                                                         mergeable_ranks=load_tiktoken_bpe(path),
                                                         special_tokens=d["special_tokens"])


def tokenizer_pair(name: str, models: Path):
    """Ours and HF ``tokenizers``' tokenizer of ``<models>/<name>/tokenizer.json``."""
    import tokenizers

    import gpu_tok

    path = str(models / name / "tokenizer.json")
    return gpu_tok.Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(path)


def cases(name: str, models: Path):
    """``(label, ours, theirs)`` of the calls compared for one model: each a function of one
    text returning its ids as a list."""
    if name in TIKTOKEN_NAMES:
        ours, ref = tiktoken_pair(name, models)
        return [("encode", ours.encode, ref.encode),
                ("encode_ordinary", ours.encode_ordinary, ref.encode_ordinary),
                ("encode_batch([t])", lambda t: ours.encode_batch([t])[0], lambda t: ref.encode_batch([t])[0])]
    ours, ref = tokenizer_pair(name, models)
    return [("encode", lambda t: ours.encode(t).ids, lambda t: ref.encode(t).ids),
            ("encode().offsets", lambda t: [tuple(o) for o in ours.encode(t).offsets], lambda t: ref.encode(t).offsets),
            ("encode_batch([t])", lambda t: ours.encode_batch([t])[0].ids, lambda t: ref.encode_batch([t])[0].ids),
            ("encode_batch_ids([t])", lambda t: ours.encode_batch_ids([t], device="cpu").ids.tolist(),
             lambda t: ref.encode(t).ids)]


def decode_cases(name: str, models: Path):
    """``(label, ours, theirs, encode)`` for ``--decode``: ours and the reference's ``decode``,
    each a function of one list of ids, and the reference's ``encode`` (a text's ids)."""
    if name in TIKTOKEN_NAMES:
        ours, ref = tiktoken_pair(name, models)
        return [("decode", ours.decode, ref.decode, ref.encode_ordinary),
                ("decode_tokens_bytes", ours.decode_tokens_bytes, ref.decode_tokens_bytes, ref.encode_ordinary)]
    ours, ref = tokenizer_pair(name, models)
    return [("decode", ours.decode, ref.decode, lambda t: ref.encode(t).ids)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="gpt2,llama2,bert-base-uncased,cl100k_base")
    ap.add_argument("--file", default="english_prose")
    ap.add_argument("--chars", default="5,50,500,5000")
    ap.add_argument("--texts", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--decode", action="store_true", help="time decode of each text's ids instead")
    args = ap.parse_args()
    models = models_dir()
    if not models.is_dir():
        print(f"no models folder {models} (set GPU_TOK_MODELS)", file=sys.stderr)
        return 2
    docs = load_texts(bench_file(args.file), 30_000 * args.texts)[:args.texts]
    bad = 0
    if args.decode:
        print("| model | call | chars | ids (mean) | ours us | reference us | reference/ours |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for name in args.models.split(","):
            for label, ours, ref, encode in decode_cases(name, models):
                for n in (int(c) for c in args.chars.split(",")):
                    rows = [encode(d[:n]) for d in docs]
                    rows = [r for r in rows if r]
                    for r in rows:
                        if ours(r) != ref(r):
                            bad += 1
                            print(f"MISMATCH {name} {label} on {r[:10]}", file=sys.stderr)
                            break
                    o, t = best_us(ours, rows, args.repeat), best_us(ref, rows, args.repeat)
                    mean = sum(map(len, rows)) / max(len(rows), 1)
                    print(f"| {name} | {label} | {n} | {mean:.1f} | {o:.2f} | {t:.2f} | {t / o:.2f}x |", flush=True)
        return 1 if bad else 0
    print("| model | call | chars | ours us | reference us | reference/ours |")
    print("|---|---|---:|---:|---:|---:|")
    for name in args.models.split(","):
        for label, ours, ref in cases(name, models):
            for n in (int(c) for c in args.chars.split(",")):
                texts = [d[:n] for d in docs]
                for t in texts:
                    if list(ours(t)) != list(ref(t)):
                        bad += 1
                        print(f"MISMATCH {name} {label} on {t[:40]!r}", file=sys.stderr)
                        break
                o, r = best_us(ours, texts, args.repeat), best_us(ref, texts, args.repeat)
                print(f"| {name} | {label} | {n} | {o:.1f} | {r:.1f} | {r / o:.2f}x |", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
