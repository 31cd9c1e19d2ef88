"""`jitorch.optim`: PyTorch's optimizers (math in `functional`, compiled per param group with
`@jitorch.script`) and `lr_scheduler`."""
from . import functional  # noqa: F401
from . import lr_scheduler  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from ._optimizers import (SGD, Adadelta, Adagrad, Adam, Adamax, AdamW, NAdam, RAdam,  # noqa: F401
                          RMSprop)

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Adadelta", "Adamax",
           "NAdam", "RAdam", "LBFGS", "functional", "lr_scheduler"]
