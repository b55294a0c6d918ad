"""The CPU reference: the executable spec of the pipeline, in plain Python.

One module per stage, in the reference's order:
``added_tokens`` → ``normalizers`` → ``pre_tokenizers`` → ``models`` →
``post_processors``; ``decoders`` maps ids back to text. ``normalized`` holds
the alignment bookkeeping they share, ``pipeline`` ties them together.
"""

from .pipeline import RefPipeline, check_text

__all__ = ["RefPipeline", "check_text"]
