"""OpInfo entries for conversion/copy ops."""
import numpy as np

from opinfo import ALL_REAL, OpInfo, Sample


def _samples(dtype, rng):
    a = (rng.standard_normal((3, 4)) * 3).astype(dtype)
    return [Sample((a,), name="2d"), Sample((a.T,), name="transposed"),
            Sample((np.asarray(a[0, 0]),), name="0d")]


OPINFOS = [
    OpInfo("clone", lambda x: x.copy(), _samples, dtypes=ALL_REAL),
]
