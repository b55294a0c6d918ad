"""The GPT-2 byte-to-character table shared by the ByteLevel components."""

from __future__ import annotations

from .regex_util import compile_onig


def _bytes_to_chars():
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table = {b: chr(b) for b in keep}
    n = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + n)
            n += 1
    return [table[b] for b in range(256)]


BYTE_TO_CHAR = _bytes_to_chars()
CHAR_TO_BYTE = {c: b for b, c in enumerate(BYTE_TO_CHAR)}
SPACE_CHAR = BYTE_TO_CHAR[ord(" ")]  # "Ġ"

# The split pattern of the ByteLevel pre-tokenizer (use_regex=true), the GPT-2 pattern.
GPT2_PATTERN = compile_onig(r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")


def to_byte_chars(text: str) -> str:
    return "".join(BYTE_TO_CHAR[b] for b in text.encode("utf-8"))
