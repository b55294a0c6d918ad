"""Small documents the command-line tests encode (every kind of text the job meets)."""

TEXTS = [
    "Hello world",
    "",
    "  leading and trailing spaces  ",
    "tabs\tand\nnewlines\r\nand CRLF",
    "café naïve Ünïcödé — 東京 русский العربية 🤗👍🏽",
    "def f(x):\n    return x ** 2  # code\n",
    "a literal <|endoftext|> special token",
    "numbers 1234567 and 3.14159",
]
