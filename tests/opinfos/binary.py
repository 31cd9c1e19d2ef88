"""OpInfo entries for binary arithmetic ops."""
import numpy as np

import jitorch
from opinfo import ALL_REAL, FLOATS, OpInfo, Sample


def _bin_samples(dtype, rng):
    def r(*shape):
        a = rng.standard_normal(shape) * 3
        return a.astype(dtype) if np.dtype(dtype).kind == "f" else np.round(a).astype(dtype)
    return [
        Sample((r(3, 4), r(3, 4)), name="same"),
        Sample((r(3, 4), r(4)), name="broadcast"),
        Sample((r(2, 1, 3), r(4, 1)), name="broadcast-both"),
        Sample((r(5), 2), name="scalar"),
        Sample((r(), r(3)), name="0d"),
    ]


def _div_samples(dtype, rng):
    out = _bin_samples(dtype, rng)
    return [Sample((a, np.where(b == 0, 1, b) if isinstance(b, np.ndarray) else b),
                   s.kwargs, s.name) for s in out for a, b in [s.args]]


def _float_rule(d):
    return d if d.is_floating_point else jitorch.get_default_dtype()


OPINFOS = [
    OpInfo("add", np.add, _bin_samples, dtypes=ALL_REAL),
    OpInfo("sub", np.subtract, _bin_samples, dtypes=ALL_REAL),
    OpInfo("subtract", np.subtract, _bin_samples, dtypes=ALL_REAL),
    OpInfo("mul", np.multiply, _bin_samples, dtypes=ALL_REAL),
    OpInfo("multiply", np.multiply, _bin_samples, dtypes=ALL_REAL),
    OpInfo("div", np.true_divide, _div_samples, dtypes=ALL_REAL, out_dtype=_float_rule),
    OpInfo("divide", np.true_divide, _div_samples, dtypes=ALL_REAL, out_dtype=_float_rule),
    OpInfo("true_divide", np.true_divide, _div_samples, dtypes=ALL_REAL, out_dtype=_float_rule),
]
