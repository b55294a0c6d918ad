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


def inlined_by_untyped_passes(py_func, monkeypatch, **types) -> list:
    """The names Numba's inliner takes when it runs only its untyped passes (where it prunes
    and inlines) on ``py_func``, every argument typed ``int64`` but those ``types`` names."""
    import numba
    from numba.core import compiler
    from numba.core.compiler_machinery import FunctionPass, register_pass
    from numba.core.registry import cpu_target

    @register_pass(mutates_CFG=False, analysis_only=True)
    class _Stop(FunctionPass):  # the untyped passes only: their IR as the "result"
        _name = f"gpu_tok_test_stop_{py_func.__module__}_{py_func.__name__}_{len(_STOPS)}".replace(".", "_")

        def __init__(self):
            FunctionPass.__init__(self)

        def run_pass(self, state):
            state.cr = state.func_ir
            return False

    _STOPS.append(_Stop)

    class UntypedOnly(compiler.CompilerBase):
        def define_pipelines(self):
            pm = compiler.DefaultPassBuilder.define_untyped_pipeline(self.state)
            pm.add_pass(_Stop, "stop")
            pm.finalize()
            return [pm]

    inlined = record_inlined(monkeypatch)
    names = py_func.__code__.co_varnames[:py_func.__code__.co_argcount]
    args = tuple(types.get(n, numba.types.int64) for n in names)
    compiler.compile_extra(cpu_target.typing_context, cpu_target.target_context, py_func, args, None,
                           compiler.Flags(), {}, pipeline_class=UntypedOnly)
    return inlined


_STOPS: list = []  # each pass class registered once under a name of its own
