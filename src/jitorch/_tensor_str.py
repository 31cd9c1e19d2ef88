"""Tensor printing in PyTorch's exact format: `repr(t)` and `jitorch.set_printoptions`.

Owns the print options (precision, threshold, edgeitems, linewidth, sci_mode) and the printer.
The algorithm mirrors PyTorch's `_tensor_str.py` step by step (one shared formatter per tensor
choosing int/fixed/scientific mode and a common width, line wrapping by `linewidth`,
summarisation with `...` past `threshold` elements, then the `dtype=`/`requires_grad=`/
`grad_fn=` suffixes), so that reprs match PyTorch's character for character.

It works on the NumPy storage only: printing never dispatches ops, so it records no autograd
history and works inside tracing modes.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np

from . import _dtype as dt

__all__ = ["set_printoptions"]  # get_printoptions/printoptions: jitorch._tensor_str, as in PyTorch


@dataclasses.dataclass
class _PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrinterOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """`torch.set_printoptions`: options not given keep their value, except `sci_mode`
    (None restores automatic choice), as in PyTorch."""
    if profile is not None:
        if profile == "default":
            PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, 1000
            PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
        elif profile == "short":
            PRINT_OPTS.precision, PRINT_OPTS.threshold = 2, 1000
            PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 80
        elif profile == "full":
            PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, math.inf
            PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current options, as keyword arguments for `set_printoptions`."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Temporarily change the print options."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


def _as_printable(arr: np.ndarray) -> np.ndarray:
    # bfloat16 arrays convert to Python floats only through float32 (exactly)
    if arr.dtype.kind == "V" or arr.dtype.name == "bfloat16":
        return arr.astype(np.float32)
    return arr


class _Formatter:
    """One formatter per tensor (per real/imaginary part for complex): picks the mode and the
    common width from the values that will be printed."""

    def __init__(self, arr: np.ndarray, floating: bool):
        self.floating_dtype = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        vals = arr.reshape(-1)
        if not floating:
            for v in vals.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        v64 = vals.astype(np.float64)
        nz = v64[np.isfinite(v64) & (v64 != 0)]
        if nz.size == 0:
            return
        absv = np.abs(nz)
        vmin, vmax = float(absv.min()), float(absv.max())
        # every value is exact in float64, so this matches PyTorch's in-dtype ceil check
        self.int_mode = bool(np.all(nz == np.ceil(nz)))
        p = PRINT_OPTS.precision
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        values = nz.tolist()
        if self.sci_mode:
            widths = (len(f"{v:.{p}e}") for v in values)
        elif self.int_mode:
            # int-valued floats print with a trailing "." that the width must count
            widths = (len(f"{v:.0f}") + 1 for v in values)
        else:
            widths = (len(f"{v:.{p}f}") for v in values)
        self.max_width = max(self.max_width, max(widths))

    def width(self) -> int:
        return self.max_width

    def format(self, value) -> str:
        if self.floating_dtype:
            p = PRINT_OPTS.precision
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _complex_str(val, f1: _Formatter, f2: _Formatter) -> str:
    real_str = f1.format(val.real)
    imag_str = (f2.format(val.imag) + "j").lstrip()
    # a sign already separates the parts (negative numbers, -0.0)
    if imag_str[0] in "+-":
        return real_str + imag_str
    return real_str + "+" + imag_str


def _val_str(val, f1, f2):
    return f1.format(val) if f2 is None else _complex_str(val, f1, f2)


def _vector_str(arr, indent, summarize, f1, f2):
    element_length = f1.width() + 2  # the value, a comma and a space
    if f2 is not None:
        element_length += f2.width() + 1  # imaginary part and its "j"
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    edge = PRINT_OPTS.edgeitems
    if summarize and not edge:
        data = ["..."]
    elif summarize and arr.shape[0] > 2 * edge:
        data = ([_val_str(v, f1, f2) for v in arr[:edge].tolist()] + [" ..."]
                + [_val_str(v, f1, f2) for v in arr[-edge:].tolist()])
    else:
        data = [_val_str(v, f1, f2) for v in arr.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _str_with_formatter(arr, indent, summarize, f1, f2=None):
    ndim = arr.ndim
    if ndim == 0:
        return _val_str(arr.item(), f1, f2)
    if ndim == 1:
        return _vector_str(arr, indent, summarize, f1, f2)
    edge = PRINT_OPTS.edgeitems
    n = arr.shape[0]
    if summarize and n > 2 * edge:
        slices = ([_str_with_formatter(arr[i], indent + 1, summarize, f1, f2)
                   for i in range(edge)] + ["..."]
                  + [_str_with_formatter(arr[i], indent + 1, summarize, f1, f2)
                     for i in range(n - edge, n)])
    else:
        slices = [_str_with_formatter(arr[i], indent + 1, summarize, f1, f2) for i in range(n)]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _summarized(arr: np.ndarray) -> np.ndarray:
    """The values a summarised print shows (PyTorch's `get_summarized_data`)."""
    edge = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        if arr.shape[0] > 2 * edge:
            # arr[-0:] is the whole array, as in PyTorch, when edgeitems is 0
            return np.concatenate((arr[:edge], arr[-edge:]))
        return arr
    if not edge:
        return arr[(slice(0, 0),) * arr.ndim]
    n = arr.shape[0]
    rows = (list(range(edge)) + list(range(n - edge, n))) if n > 2 * edge else range(n)
    return np.stack([_summarized(arr[i]) for i in rows])


def _tensor_str(arr: np.ndarray, d: dt.dtype, indent: int) -> str:
    if arr.size == 0:
        return "[]"
    summarize = arr.size > PRINT_OPTS.threshold
    arr = _as_printable(arr)
    shown = _summarized(arr) if summarize else arr
    if d.category == dt.COMPLEX:
        f1 = _Formatter(shown.real, True)
        f2 = _Formatter(shown.imag, True)
        return _str_with_formatter(arr, indent, summarize, f1, f2)
    f = _Formatter(shown, d.category == dt.FLOAT)
    return _str_with_formatter(arr, indent, summarize, f)


def _add_suffixes(tensor_str: str, suffixes: list, indent: int) -> str:
    parts = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t) -> str:
    """`repr(t)` exactly as PyTorch prints it (with `jitorch.` dtype names)."""
    from ._tensor import Tensor
    cls = type(t)
    plain = cls is Tensor or cls.__name__ == "Parameter"
    prefix = "tensor(" if plain else f"{cls.__name__}("
    indent = len(prefix)
    from ._device import CPU, backend_of, get_default_device
    arr, d = t._data, t._dtype
    default = dt.get_default_dtype()
    suffixes = []
    if t._device is not get_default_device():  # PyTorch names a device other than the default
        suffixes.append(f"device='{t._device}'")
    if t._device is not CPU:  # printing copies the values to the host
        arr = backend_of(t._device).to_host(arr)
    if arr.size == 0:
        # an empty tensor has no values to show its shape or dtype, so both are printed
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if d is not default:
            suffixes.append(f"dtype={d!r}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(arr.shape)}")
        if d not in (default, dt.default_complex(), dt.int64, dt.bool):
            suffixes.append(f"dtype={d!r}")
        body = _tensor_str(arr, d, indent)
    fn = t._grad_fn
    if fn is not None:
        name = fn.name() if hasattr(fn, "name") else type(fn).__name__
        suffixes.append(f"grad_fn=<{name}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    if t._tangent is not None:
        suffixes.append(f"tangent={tensor_repr(t._tangent)}")
    return _add_suffixes(prefix + body, suffixes, indent)
