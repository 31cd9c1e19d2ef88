"""The op families. Importing this package declares every op in the registry; the public
functions are re-exported by `jitorch/__init__.py` through each family's `__all__`."""
from . import registry  # noqa: F401
from .binary import *  # noqa: F401,F403
from .ternary import *  # noqa: F401,F403
from .compare import *  # noqa: F401,F403
from .complex_ops import *  # noqa: F401,F403
from .conversion import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .scatter import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .linalg_misc import *  # noqa: F401,F403
from .einsum import *  # noqa: F401,F403
from .linalg_diag import *  # noqa: F401,F403
from .linalg_decomp import *  # noqa: F401,F403
from .linalg_svd import *  # noqa: F401,F403
from .linalg_norm import *  # noqa: F401,F403
from .minmax import *  # noqa: F401,F403
from .moments import *  # noqa: F401,F403
from .reduce import *  # noqa: F401,F403
from .scan import *  # noqa: F401,F403
from .search import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .join import *  # noqa: F401,F403
from .reorder import *  # noqa: F401,F403
from .sort import *  # noqa: F401,F403
from .unary import *  # noqa: F401,F403
from . import operators  # noqa: F401  (binds Tensor dunders; must come last)
