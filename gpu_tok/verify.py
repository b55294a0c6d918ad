"""``gpu-tok verify``: re-encode a sample of a corpus with the reference library and compare.

The sample is ``N`` documents drawn uniformly from the whole document stream by reservoir
sampling with ``random.Random(seed)`` (one pass, memory ``O(N)``), so the same inputs and
seed give the same sample. The reference is ``tokenizers.Tokenizer.from_file`` for a
``tokenizer.json`` (``encode_batch(texts, add_special_tokens=...)``) and ``tiktoken`` for
a tiktoken encoding (``encode_ordinary_batch``: what ``gpu-tok encode`` writes for it).
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from typing import List, Optional

from .bulk import Encoder, load_encoder, resolve_device
from .corpus import BadInput, Source, Stdin, expand_inputs, input_format, iter_records


@dataclass
class VerifyOptions:
    inputs: List[str]
    tokenizer: Optional[str] = None
    sample: int = 1000
    seed: int = 0
    device: str = "auto"
    input_format: str = "auto"
    field: str = "text"
    lines: bool = False
    add_special_tokens: bool = False
    on_error: str = "stop"
    num_threads: Optional[int] = None
    no_truncation_padding: bool = False  # as the encode job's: the reference without them too


def sample_documents(sources: List[Source], n: int, seed: int, on_error: str, log) -> tuple:
    """``(sample, seen)``: up to ``n`` ``(index, where, text)`` in stream order, and the number of documents."""
    rng = random.Random(seed)
    reservoir: list = []
    seen = 0
    for src in sources:
        for rec in iter_records(src):
            if rec.error is not None:
                if on_error == "stop":
                    raise BadInput(f"{rec.where}: {rec.error}")
                log(f"gpu-tok: skipped {rec.where}: {rec.error}")
                continue
            if len(reservoir) < n:
                reservoir.append((seen, rec.where, rec.text))
            else:
                j = rng.randrange(seen + 1)
                if j < n:
                    reservoir[j] = (seen, rec.where, rec.text)
            seen += 1
    reservoir.sort(key=lambda r: r[0])
    return reservoir, seen


def reference_ids(enc: Encoder, texts: List[str], add_special_tokens: bool,
                  clear_stored: bool = False) -> List[List[int]]:
    if enc.kind == "tiktoken":
        try:
            import tiktoken
        except ImportError:
            raise BadInput("gpu-tok verify needs the reference library 'tiktoken' for a tiktoken encoding "
                           "(pip install tiktoken==0.14.0)") from None
        from .tiktoken_encoding import load_tiktoken_bpe, named_definition

        d = named_definition(enc.name)
        ref = tiktoken.Encoding(enc.name, pat_str=d["pat_str"], mergeable_ranks=load_tiktoken_bpe(enc.path),
                                special_tokens=d["special_tokens"], explicit_n_vocab=d["explicit_n_vocab"])
        return [list(r) for r in ref.encode_ordinary_batch(texts)]
    try:
        import tokenizers
    except ImportError:
        raise BadInput("gpu-tok verify needs the reference library 'tokenizers' for a tokenizer.json "
                       "(pip install tokenizers==0.23.1)") from None
    ref = tokenizers.Tokenizer.from_file(str(enc.path))
    if clear_stored:
        ref.no_truncation()
        ref.no_padding()
    return [e.ids for e in ref.encode_batch(texts, add_special_tokens=add_special_tokens)]


def run_verify(o: VerifyOptions, out=None, err=None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr

    def log(msg):
        print(msg, file=err, flush=True)

    paths = expand_inputs(o.inputs)
    stdin = Stdin()
    sources = [Source(p, input_format(p, o.input_format), o.field, o.lines, stdin=stdin if p == "-" else None)
               for p in paths]
    enc = load_encoder(o.tokenizer, log, o.no_truncation_padding)
    if enc.kind == "tiktoken" and o.add_special_tokens:
        raise BadInput("--add-special-tokens: a tiktoken encoding has no post-processor")
    device, _ = resolve_device(enc, o.device)
    sample, seen = sample_documents(sources, o.sample, o.seed, o.on_error, log)
    texts = [t for _, _, t in sample]
    ref = reference_ids(enc, texts, o.add_special_tokens, o.no_truncation_padding)  # first: a missing reference fails early
    ids, rs = enc.encode(texts, o.add_special_tokens, device, o.num_threads)
    bad = 0
    for k, (index, where, _) in enumerate(sample):
        ours = ids[int(rs[k]):int(rs[k + 1])].tolist()
        theirs = ref[k]
        if ours != theirs:
            bad += 1
            p = next((j for j, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
            print(f"MISMATCH document {index} ({where}): first difference at token {p}: ours {ours[p:p + 8]} "
                  f"vs reference {theirs[p:p + 8]} ({len(ours)} vs {len(theirs)} tokens)", file=out)
    refname = "tiktoken" if enc.kind == "tiktoken" else "tokenizers"
    print(f"verify: {len(sample)} of {seen} documents sampled (seed {o.seed}), {enc.name} on {device} vs "
          f"{refname}: {bad} mismatches", file=out, flush=True)
    return 1 if bad else 0
