"""Numba types of plain NumPy arrays, for jitorch's own dispatch, without Numba's `typeof`.

Numba's `typeof` of an ndarray first asks whether it is a `numpy.ma.MaskedArray`; the first such
question of a process imports numpy.ma (~0.014 s of every warm start, which types the arguments of
its first eager kernel and of every program entry). An array whose type is exactly `np.ndarray` is
not a masked one, so `array_type` answers for it as Numba's `typeof` does (its dtype, dimensions,
layout and writability) without asking. Used by program entries (runtime/entry.py) and by the
dispatchers of jitorch's eager kernels (`eager_typeof`, cache_guards.guard_eager_dispatcher); any
other value, and a dtype Numba does not type, goes to Numba's own `typeof`.
"""
from __future__ import annotations

import types as _pytypes

import numpy as np
from numba.core import types
from numba.core.dispatcher import Dispatcher
from numba.np import numpy_support


def array_type(val):
    """Numba's argument type of `val` when it is exactly an `np.ndarray` of a dtype Numba
    types, else None."""
    if type(val) is not np.ndarray:
        return None
    try:
        dtype = numpy_support.from_dtype(val.dtype)
    except Exception:  # noqa: BLE001 - Numba's typeof decides (and raises its own error)
        return None
    return types.Array(dtype, val.ndim, numpy_support.map_layout(val),
                       readonly=not val.flags.writeable)


def _typeof_pyval(self, val):
    t = array_type(val)
    if t is None:
        return Dispatcher.typeof_pyval(self, val)
    self._types_active_call.add(t)  # (as Numba's: what an error message lists)
    return t


def eager_typeof(disp) -> None:
    """Dispatcher `disp` types plain arrays through `array_type` (its first call types its
    arguments in Python, `Dispatcher.typeof_pyval`)."""
    disp.typeof_pyval = _pytypes.MethodType(_typeof_pyval, disp)
