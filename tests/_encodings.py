"""Comparing ``Encoding`` objects (ours against the reference's) field by field."""

from __future__ import annotations

FIELDS = ("ids", "type_ids", "tokens", "offsets", "attention_mask", "special_tokens_mask", "word_ids",
          "sequence_ids")


def diff(a, b, where="encoding"):
    """The first field where two encodings differ (``n_sequences`` and the overflowing
    windows, recursively, included), or None."""
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        if f == "offsets":
            x, y = [tuple(o) for o in x], [tuple(o) for o in y]
        if list(x) != list(y):
            return f"{where}.{f}: {x} != {y}"
    if a.n_sequences != b.n_sequences:
        return f"{where}.n_sequences: {a.n_sequences} != {b.n_sequences}"
    if len(a.overflowing) != len(b.overflowing):
        return f"{where}: {len(a.overflowing)} overflowing != {len(b.overflowing)}"
    for i, (x, y) in enumerate(zip(a.overflowing, b.overflowing)):
        d = diff(x, y, f"{where}.overflowing[{i}]")
        if d:
            return d
    return None
