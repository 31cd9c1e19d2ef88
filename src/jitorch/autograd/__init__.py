"""`jitorch.autograd`: reverse mode (tape + engine), grad modes, custom Functions, gradcheck,
forward mode (`forward_ad`). Re-exports only."""
from . import forward_ad, functional, graph
from .engine import backward, grad
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled, no_grad, set_grad_enabled)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = ["backward", "grad", "Function", "FunctionCtx", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "gradcheck", "gradgradcheck", "forward_ad",
           "graph", "once_differentiable", "GradcheckError", "functional"]
