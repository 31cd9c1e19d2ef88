"""The older hook-based `nn.utils.weight_norm` / `remove_weight_norm` (PyTorch's
`torch.nn.utils.weight_norm`), and the one weight-norm formula both forms use
(`norm_except_dim`, `_weight_norm`; `parametrizations.weight_norm` imports them).

The hook form keeps parameters `<name>_g` and `<name>_v` and recomputes `<name>` as a plain
attribute in a forward pre-hook, as PyTorch does (deprecated there with a FutureWarning).
"""
from __future__ import annotations

import warnings

from ..._tensor import Tensor
from ..parameter import Parameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "norm_except_dim"]


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The `pow`-norm of `v` over every dim but `dim`, kept as size 1 (dim=-1: the whole
    tensor, a 0-d norm), as `torch.norm_except_dim`."""
    if dim == -1:
        return v.norm(pow)
    dims = tuple(d for d in range(v.ndim) if d != dim)
    return v.norm(pow, dim=dims, keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """`torch._weight_norm`: v scaled so that its norm (except `dim`) is g."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes `<name>` from `<name>_g` and `<name>_v`."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module) -> Tensor:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name: str, dim: int) -> "WeightNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim: int = 0):
    """Reparametrise `module.<name>` as g * v / ||v|| with a forward pre-hook."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Remove the hook of `weight_norm`, leaving `<name>` a parameter with its current value."""
    remove_norm_hook(module, WeightNorm, name, "weight_norm")
    return module


def remove_norm_hook(module, hook_type, name: str, fn_name: str) -> None:
    """Remove the forward pre-hook of `hook_type` that `fn_name` put on `module.<name>` (its
    `remove` leaves `<name>` a parameter); PyTorch's ValueError where there is none."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, hook_type) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return
    raise ValueError(f"{fn_name} of '{name}' not found in {module}")
