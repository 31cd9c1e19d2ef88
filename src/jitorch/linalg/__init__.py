"""`jitorch.linalg`: PyTorch's linear algebra namespace. Re-exports only; the ops are declared
in `jitorch/_ops/linalg*.py` (the top-level aliases such as `jitorch.det` live there too)."""
from .._ops._linalg_util import LinAlgError
from .._ops.linalg import matmul
from .._ops.linalg_misc import linalg_cross as cross
from .._ops.linalg_misc import matrix_power, multi_dot, vecdot
from .._ops.linalg_decomp import eigh, eigvalsh, solve
from .._ops.linalg_decomp import linalg_cholesky as cholesky
from .._ops.linalg_decomp import linalg_det as det
from .._ops.linalg_decomp import linalg_inv as inv
from .._ops.linalg_decomp import linalg_qr as qr
from .._ops.linalg_decomp import linalg_slogdet as slogdet
from .._ops.linalg_diag import linalg_diagonal as diagonal
from .._ops.linalg_norm import matrix_norm, norm, vector_norm
from .._ops.linalg_svd import linalg_svd as svd
from .._ops.linalg_svd import lstsq, matrix_rank, pinv, svdvals
from .._ops.linalg_exp import householder_product, matrix_exp

__all__ = ["LinAlgError", "matrix_power", "cross", "matmul", "multi_dot", "vecdot", "eigh",
           "eigvalsh", "solve", "cholesky", "det", "inv", "qr", "slogdet", "diagonal",
           "matrix_norm", "norm", "vector_norm", "svd", "lstsq", "matrix_rank", "pinv",
           "svdvals",
           "matrix_exp", "householder_product"]

# issue 19: triangular solves, LU, the general eigendecomposition
from .._ops.linalg_eig import eig, eigvals  # noqa: E402
from .._ops.linalg_lu import (linalg_lu as lu, linalg_lu_solve as lu_solve,  # noqa: E402
                              lu_factor, lu_factor_ex, solve_triangular)
from .._ops.linalg_lu import (cholesky_ex, cond, inv_ex, linalg_vander as vander,  # noqa: E402
                              solve_ex, tensorinv, tensorsolve)
__all__ += ["eig", "eigvals", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "solve_triangular",
            "cholesky_ex", "cond", "inv_ex", "solve_ex", "tensorinv", "tensorsolve", "vander"]

for _name in __all__:  # the wrappers are defined as `linalg_<name>` next to the top-level ops
    _fn = globals()[_name]
    if callable(_fn) and getattr(_fn, "__name__", "").startswith("linalg_"):
        _fn.__name__ = _fn.__qualname__ = _name
        _fn.__module__ = __name__
del _name, _fn
