"""Small helpers shared by the package (and its tests)."""

from __future__ import annotations

import contextlib
import gc
import hashlib
from pathlib import Path
from typing import Union


def sha256_file(path: Union[str, Path]) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextlib.contextmanager
def gc_paused():
    """The cyclic garbage collector paused while a block builds many acyclic objects
    (``Encoding`` lists: each allocation would otherwise count toward a collection that
    walks them all again); restored as it was, whatever the block raises."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
