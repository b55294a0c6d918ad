"""Errors raised by gpu_tok.

Both derive from ValueError so callers that catch HF ``tokenizers``' value
errors keep working.
"""


class TokenizerFileError(ValueError):
    """A ``tokenizer.json`` is malformed: the message says what and where (a JSON path)."""

    def __init__(self, path: str, message: str, file=None):
        self.json_path = path
        self.detail = message
        self.file = file
        where = ": ".join(str(x) for x in (file, path) if x)
        super().__init__(f"{where}: {message}" if where else message)


class UnsupportedComponent(ValueError):
    """A ``tokenizer.json`` component or setting that gpu_tok does not reproduce exactly.

    ``json_path`` names the place (e.g. ``pre_tokenizer.pretokenizers[1].type``) and
    ``value`` the value found there. Nothing is ever silently approximated.
    """

    def __init__(self, path: str, value, reason: str = "not supported"):
        self.json_path = path
        self.value = value
        super().__init__(f"{path} = {value!r}: {reason}")


class InvalidText(TypeError, ValueError):
    """A text that is not valid Unicode (a lone surrogate), named with its position."""


class TruncationError(ValueError):
    """Truncation cannot keep to its ``max_length`` (the reference raises ``Exception``
    with the same message), or its ``stride`` does not fit (the reference panics)."""
