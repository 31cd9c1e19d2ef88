"""The older hook-based `nn.utils.spectral_norm` / `remove_spectral_norm` (PyTorch's
`torch.nn.utils.spectral_norm`), and the weight-to-matrix reshape both spectral norms use.

The hook keeps the parameter `<name>_orig` and the power-iteration buffers `<name>_u`,
`<name>_v`; in training each forward runs `n_power_iterations` steps (v first, then u, as
PyTorch's hook does) and divides the weight by sigma = u . (W v). State-dict keys and the
`spectral_norm` version metadata are PyTorch's.
"""
from __future__ import annotations

from ... import autograd
from ..._tensor import Tensor
from ..._ops.nn_norm import normalize
from ..parameter import Parameter
from .weight_norm import remove_norm_hook

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


def reshape_weight_to_matrix(weight: Tensor, dim: int) -> Tensor:
    """`weight` with `dim` moved first and the rest flattened: (size(dim), -1)."""
    if dim != 0:
        weight = weight.permute(dim, *[d for d in range(weight.ndim) if d != dim])
    return weight.reshape(weight.shape[0], -1)


def default_dim(module) -> int:
    """The output-channel dim: 1 for transposed convolutions, 0 otherwise (as PyTorch)."""
    from ..modules import conv
    transposed = tuple(getattr(conv, n) for n in ("ConvTranspose1d", "ConvTranspose2d",
                                                  "ConvTranspose3d") if hasattr(conv, n))
    return 1 if isinstance(module, transposed) else 0


class SpectralNorm:
    """The forward pre-hook that sets `<name>` = `<name>_orig` / sigma."""
    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        return reshape_weight_to_matrix(weight, self.dim)

    def compute_weight(self, module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with autograd.no_grad():
                for _ in range(self.n_power_iterations):
                    # in place: the buffers carry the estimate to the next forward
                    v.copy_(normalize(weight_mat.t().mv(u), dim=0, eps=self.eps))
                    u.copy_(normalize(weight_mat.mv(v), dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def remove(self, module) -> None:
        with autograd.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name,
                self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> "SpectralNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with autograd.no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(_StateDictHook(fn))
        return fn


class _StateDictHook:
    """Records the hook's version in the state dict's metadata, as PyTorch's
    SpectralNormStateDictHook."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata) -> None:
        local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in local_metadata["spectral_norm"]:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        local_metadata["spectral_norm"][key] = self.fn._version


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None):
    """Divide `module.<name>` by its spectral norm, estimated by power iteration in a hook."""
    SpectralNorm.apply(module, name, n_power_iterations,
                       default_dim(module) if dim is None else dim, eps)
    return module


def remove_spectral_norm(module, name: str = "weight"):
    """Remove the hook of `spectral_norm`, leaving `<name>` a parameter (the normalised value)."""
    remove_norm_hook(module, SpectralNorm, name, "spectral_norm")
    for k, hook in module._state_dict_hooks.items():
        if isinstance(hook, _StateDictHook) and hook.fn.name == name:
            del module._state_dict_hooks[k]
            break
    return module
