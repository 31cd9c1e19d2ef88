"""`jitorch.utils.deterministic`: the `fill_uninitialized_memory` flag (PyTorch 2.1+).

A module attribute backed by `_determinism` (as PyTorch's is a property over its global
context): while deterministic mode is on and this is True, `empty*` results are filled with NaN
or the dtype's largest value.
"""
import sys
import types

from .. import _determinism


class _Deterministic(types.ModuleType):
    @property
    def fill_uninitialized_memory(self) -> bool:
        """Whether to fill uninitialized memory with a known value when
        `jitorch.use_deterministic_algorithms()` is set to True."""
        return _determinism.get_fill_uninitialized_memory()

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode) -> None:
        _determinism.set_fill_uninitialized_memory(mode)


sys.modules[__name__].__class__ = _Deterministic
