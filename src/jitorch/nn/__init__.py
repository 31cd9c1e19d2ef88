"""`jitorch.nn`: modules, parameters, initialisers and utilities with PyTorch's API.

`import jitorch.nn as nn` gives `nn.Module`, `nn.Parameter`, `nn.Linear`, `nn.init`, `nn.utils`, ...
"""
from . import init, utils  # noqa: F401
from . import functional  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter  # noqa: F401
from . import parallel  # noqa: F401,E402
from .parallel import DataParallel  # noqa: F401,E402

__all__ = ["Parameter", "Buffer", "init", "utils", "DataParallel"] + list(_modules_all)
