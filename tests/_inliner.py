"""What Numba's inliner takes while a function compiles (decision 0036's tests)."""
from __future__ import annotations


def record_inlined(monkeypatch) -> list:
    """A list that gets the name of every function Numba inlines (``inline="always"``)
    from now until ``monkeypatch`` is undone: each goes through ``InlineWorker``'s front
    end (``run_untyped_passes``) once per call site."""
    from numba.core import inline_closurecall

    names: list = []
    front = inline_closurecall.InlineWorker.run_untyped_passes

    def seen(self, func, *args, **kwargs):
        names.append(func.__name__)
        return front(self, func, *args, **kwargs)

    monkeypatch.setattr(inline_closurecall.InlineWorker, "run_untyped_passes", seen)
    return names
