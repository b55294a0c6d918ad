"""Typed, immutable configuration of a tokenizer, as parsed from ``tokenizer.json``.

These are plain frozen dataclasses: the loader (``gpu_tok.loader``) builds them,
the CPU reference (``gpu_tok.cpu_ref``) and the fast paths read them. Each
component keeps the JSON path it was read from so that later stages can name
it in errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Tuple


# ------------------------------------------------------------------ patterns
@dataclass(frozen=True)
class Pattern:
    """A ``{"String": ...}`` or ``{"Regex": ...}`` pattern."""

    kind: str  # "String" or "Regex"
    value: str


# ---------------------------------------------------------------- normalizers
@dataclass(frozen=True)
class UnicodeNormalizer:
    form: str  # "NFC", "NFD", "NFKC", "NFKD"
    path: str = ""


@dataclass(frozen=True)
class Lowercase:
    path: str = ""


@dataclass(frozen=True)
class Strip:
    left: bool = True
    right: bool = True
    path: str = ""


@dataclass(frozen=True)
class StripAccents:
    path: str = ""


@dataclass(frozen=True)
class BertNormalizer:
    """Clean-up, spaces around CJK ideographs, accents stripped, lowercase (HF field names;
    ``strip_accents`` None: strip when ``lowercase``)."""

    clean_text: bool = True
    handle_chinese_chars: bool = True
    strip_accents: Optional[bool] = None
    lowercase: bool = True
    path: str = ""


@dataclass(frozen=True)
class Replace:
    pattern: Pattern
    content: str
    path: str = ""


@dataclass(frozen=True)
class Prepend:
    prepend: str
    path: str = ""


@dataclass(frozen=True)
class Precompiled:
    """SentencePiece's compiled normalization rules; ``charsmap`` is the parsed
    ``gpu_tok.cpu_ref.precompiled.Charsmap`` (checked when the file is read)."""

    data: bytes = field(repr=False)
    charsmap: object = field(repr=False, compare=False)
    path: str = ""


@dataclass(frozen=True)
class NormalizerSequence:
    normalizers: Tuple[object, ...]
    path: str = ""


# ------------------------------------------------------------- pre-tokenizers
@dataclass(frozen=True)
class ByteLevel:
    """Used as pre-tokenizer, post-processor and decoder alike (same fields)."""

    add_prefix_space: bool = True
    trim_offsets: bool = True
    use_regex: bool = True
    path: str = ""


@dataclass(frozen=True)
class Split:
    pattern: Pattern
    behavior: str
    invert: bool = False
    path: str = ""


@dataclass(frozen=True)
class Digits:
    individual_digits: bool = False
    path: str = ""


@dataclass(frozen=True)
class Punctuation:
    behavior: str = "Isolated"
    path: str = ""


@dataclass(frozen=True)
class Whitespace:
    path: str = ""


@dataclass(frozen=True)
class WhitespaceSplit:
    path: str = ""


@dataclass(frozen=True)
class BertPreTokenizer:
    """White space removed, then every punctuation character isolated."""

    path: str = ""


@dataclass(frozen=True)
class Metaspace:
    """Also the Metaspace decoder (same fields)."""

    replacement: str = "\u2581"
    prepend_scheme: str = "always"  # "always", "first" or "never"
    split: bool = True
    path: str = ""


@dataclass(frozen=True)
class PreTokenizerSequence:
    pretokenizers: Tuple[object, ...]
    path: str = ""


# --------------------------------------------------------------------- models
@dataclass(frozen=True)
class BPE:
    vocab: Mapping[str, int] = field(repr=False)
    merges: Tuple[Tuple[str, str], ...] = field(repr=False)
    unk_token: Optional[str] = None
    continuing_subword_prefix: Optional[str] = None
    end_of_word_suffix: Optional[str] = None
    fuse_unk: bool = False
    byte_fallback: bool = False
    ignore_merges: bool = False
    path: str = "model"


@dataclass(frozen=True)
class WordPiece:
    """Greedy longest-match-first WordPiece: every piece after a word's first is looked up
    with ``continuing_subword_prefix``; a word that cannot be covered, or of more than
    ``max_input_chars_per_word`` characters, is ``unk_token``."""

    vocab: Mapping[str, int] = field(repr=False)
    unk_token: str = "[UNK]"
    continuing_subword_prefix: str = "##"
    max_input_chars_per_word: int = 100
    path: str = "model"


@dataclass(frozen=True)
class WordLevel:
    """One token per piece: the piece's id, else ``unk_token``'s."""

    vocab: Mapping[str, int] = field(repr=False)
    unk_token: str = "<unk>"
    path: str = "model"


@dataclass(frozen=True)
class Unigram:
    """SentencePiece's unigram model: the best-scoring segmentation of each piece
    (scores as the reference parses them, see ``loader.serde_f64``); an uncovered
    character is ``unk_id`` (consecutive ones fused), or its bytes with ``byte_fallback``."""

    vocab: Tuple[Tuple[str, float], ...] = field(repr=False)
    unk_id: Optional[int] = None
    byte_fallback: bool = False
    path: str = "model"


# ------------------------------------------------------------ post-processors
@dataclass(frozen=True)
class SpecialTokenSpec:
    id: str
    ids: Tuple[int, ...]
    tokens: Tuple[str, ...]


@dataclass(frozen=True)
class TemplatePiece:
    kind: str  # "SpecialToken" or "Sequence"
    id: str  # special token name, or "A"/"B"
    type_id: int


@dataclass(frozen=True)
class TemplateProcessing:
    single: Tuple[TemplatePiece, ...]
    pair: Tuple[TemplatePiece, ...]
    special_tokens: Mapping[str, SpecialTokenSpec]
    path: str = ""


@dataclass(frozen=True)
class RobertaProcessing:
    sep: Tuple[str, int]
    cls: Tuple[str, int]
    trim_offsets: bool = True
    add_prefix_space: bool = True
    path: str = ""


@dataclass(frozen=True)
class BertProcessing:
    sep: Tuple[str, int]
    cls: Tuple[str, int]
    path: str = ""


@dataclass(frozen=True)
class ProcessorSequence:
    processors: Tuple[object, ...]
    path: str = ""


# ------------------------------------------------------------------- decoders
@dataclass(frozen=True)
class ByteFallbackDecoder:
    path: str = ""


@dataclass(frozen=True)
class FuseDecoder:
    path: str = ""


@dataclass(frozen=True)
class StripDecoder:
    content: str
    start: int
    stop: int
    path: str = ""


@dataclass(frozen=True)
class ReplaceDecoder:
    pattern: Pattern
    content: str
    path: str = ""


@dataclass(frozen=True)
class WordPieceDecoder:
    prefix: str = "##"
    cleanup: bool = True
    path: str = ""


@dataclass(frozen=True)
class DecoderSequence:
    decoders: Tuple[object, ...]
    path: str = ""


# --------------------------------------------------------------- added tokens
@dataclass(frozen=True)
class AddedToken:
    """An entry of ``added_tokens`` (HF's ``AddedToken`` field names and defaults:
    ``normalized`` defaults to ``not special``)."""

    content: str
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: Optional[bool] = None
    special: bool = False

    def __post_init__(self):
        if self.normalized is None:
            object.__setattr__(self, "normalized", not self.special)


@dataclass(frozen=True)
class TruncationParams:
    """``tokenizers.Tokenizer.truncation``, in the reference's Python spelling."""

    max_length: int
    stride: int = 0
    strategy: str = "longest_first"  # longest_first | only_first | only_second
    direction: str = "right"

    def as_dict(self) -> dict:
        return {"max_length": self.max_length, "stride": self.stride, "strategy": self.strategy,
                "direction": self.direction}


@dataclass(frozen=True)
class PaddingParams:
    """``tokenizers.Tokenizer.padding``: ``length`` None pads to the batch's longest."""

    length: Optional[int] = None
    direction: str = "right"
    pad_to_multiple_of: Optional[int] = None
    pad_id: int = 0
    pad_type_id: int = 0
    pad_token: str = "[PAD]"

    def as_dict(self) -> dict:
        return {"length": self.length, "pad_to_multiple_of": self.pad_to_multiple_of, "pad_id": self.pad_id,
                "pad_token": self.pad_token, "pad_type_id": self.pad_type_id, "direction": self.direction}


@dataclass(frozen=True)
class TokenizerConfig:
    model: object  # BPE, WordPiece or WordLevel
    normalizer: Optional[object] = None
    pre_tokenizer: Optional[object] = None
    post_processor: Optional[object] = None
    decoder: Optional[object] = None
    added_tokens: Tuple[Tuple[int, AddedToken], ...] = ()  # (id in the file, token), file order
    # the file's "truncation" / "padding" (``Tokenizer`` starts with them; its
    # ``enable_*`` / ``no_*`` calls change its own copy)
    truncation: Optional[TruncationParams] = field(default=None, repr=False)
    padding: Optional[PaddingParams] = field(default=None, repr=False)
