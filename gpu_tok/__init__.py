"""gpu_tok: exact bulk tokenization, Hugging Face ``tokenizer.json`` and tiktoken alike.

>>> import gpu_tok
>>> tok = gpu_tok.Tokenizer.from_file("tokenizer.json")
>>> tok.encode("Hello world").ids
"""

from .config import AddedToken
from .encoding import Encoding
from .errors import InvalidText, TokenizerFileError, TruncationError, UnsupportedComponent
from .tokenizer import Tokenizer, TokenBatch
from .tiktoken_encoding import TiktokenEncoding, load_tiktoken_bpe

__version__ = "0.1.0"

__all__ = [
    "AddedToken",
    "Encoding",
    "InvalidText",
    "TiktokenEncoding",
    "TokenBatch",
    "Tokenizer",
    "TokenizerFileError",
    "TruncationError",
    "UnsupportedComponent",
    "__version__",
    "load_tiktoken_bpe",
]
