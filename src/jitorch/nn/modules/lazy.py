"""Lazy modules: `UninitializedParameter` / `UninitializedBuffer`, `LazyModuleMixin` and the
`Lazy*` layers (Linear, Conv1/2/3d, ConvTranspose1/2/3d, BatchNorm1/2/3d, InstanceNorm1/2/3d).

As in PyTorch, a lazy layer is its full layer built with 0 input features whose parameters are
placeholders; a forward pre-hook reads the input features from the first input, materialises
the placeholders in place (the same Parameter objects, so an optimizer built before the first
call keeps them), runs the layer's own `reset_parameters` and turns the module into its full
class (`cls_to_become`).
"""
from __future__ import annotations

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from ..._tensor import Tensor, _new
from ...autograd import grad_mode
from ..parameter import Parameter
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear

__all__ = ["UninitializedParameter", "UninitializedBuffer", "LazyLinear", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class _Uninitialized:
    """A placeholder tensor (0 elements) until `materialize(shape)` gives it its storage."""
    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None) -> None:
        if isinstance(shape, int):
            shape = (shape,)
        data = _jt.empty(tuple(shape), device=device or self._lazy_device,
                         dtype=dtype or self._lazy_dtype)
        self._data = data._data
        self._dtype = data._dtype
        self._device = data._device
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class UninitializedParameter(_Uninitialized, Parameter):
    """A Parameter whose shape is not known yet (`materialize(shape)` fixes it)."""
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        p = Parameter.__new__(cls, _jt.empty(0, device=device, dtype=dtype), requires_grad)
        p._lazy_device, p._lazy_dtype = device, dtype
        return p

    def __init__(self, *args, **kwargs):
        pass  # all state is set in __new__


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape is not known yet (`materialize(shape)` fixes it)."""
    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None):
        t = _new(cls)
        t.__dict__.update(_jt.empty(0, device=device, dtype=dtype).__dict__)
        t._lazy_device, t._lazy_dtype = device, dtype
        return t

    def __init__(self, *args, **kwargs):
        pass  # all state is set in __new__


def _uninitialized(t) -> bool:
    return isinstance(t, _Uninitialized)


class LazyModuleMixin:
    """Infers the parameters' shapes from the first input (PyTorch's mixin)."""
    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters)

    def has_uninitialized_params(self) -> bool:
        return any(_uninitialized(t) for t in list(self._parameters.values())
                   + list(self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    def reset_parameters(self) -> None:
        # the full layer's init runs once the shapes are known (not on the placeholders, nor
        # on the 0-feature tensors the full layer's constructor made)
        state = list(self._parameters.values()) + list(self._buffers.values())
        if not any(t is not None and (_uninitialized(t) or t.numel() == 0) for t in state):
            super().reset_parameters()


def _infer_parameters(module, args):
    with grad_mode.no_grad():
        module.initialize_parameters(*args)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._initialize_hook.remove()
    del module._initialize_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """`Linear` whose in_features is the last size of the first input."""
    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def initialize_parameters(self, input, *args) -> None:
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()


class _LazyConvMixin(LazyModuleMixin):
    def _lazy_init(self, out_channels, bias, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def initialize_parameters(self, input, *args) -> None:
        if not self.has_uninitialized_params():
            return
        n = self._dims
        if input.dim() not in (n + 1, n + 2):
            raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                               f"{self._get_name()}, but got input of size: "
                               f"{list(input.shape)}")
        self.in_channels = input.shape[input.dim() - n - 1]
        if self.in_channels % self.groups:
            raise ValueError("in_channels must be divisible by groups")
        if self._transposed:
            shape = (self.in_channels, self.out_channels // self.groups)
        else:
            shape = (self.out_channels, self.in_channels // self.groups)
        self.weight.materialize(shape + tuple(self.kernel_size))
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


def _lazy_conv(full):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        full.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False,
                      padding_mode)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters)
        self._lazy_init(out_channels, bias, device, dtype)

    def __init_t__(self, out_channels: int, kernel_size, stride=1, padding=0,
                   output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                   padding_mode: str = "zeros", device=None, dtype=None) -> None:
        full.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False,
                      dilation, padding_mode)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters)
        self._lazy_init(out_channels, bias, device, dtype)

    return type("Lazy" + full.__name__, (_LazyConvMixin, full), {
        "__init__": __init_t__ if full._transposed else __init__, "cls_to_become": full,
        "__module__": __name__,
        "__doc__": f"`{full.__name__}` whose in_channels is read from the first input."})


LazyConv1d, LazyConv2d, LazyConv3d = (_lazy_conv(c) for c in (Conv1d, Conv2d, Conv3d))
LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d = (
    _lazy_conv(c) for c in (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))


class _LazyNormMixin(LazyModuleMixin):
    def initialize_parameters(self, input, *args) -> None:
        if not self.has_uninitialized_params():
            return
        # PyTorch reads dim 1 for every lazy norm (an unbatched instance norm input too)
        self.num_features = input.shape[1]
        for name in ("weight", "bias", "running_mean", "running_var"):
            t = getattr(self, name)
            if t is not None and _uninitialized(t):
                t.materialize((self.num_features,))
        self.reset_parameters()


def _lazy_norm(full, affine_default, track_default):
    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = affine_default, track_running_stats: bool = track_default,
                 device=None, dtype=None) -> None:
        # the full layer with 0 features, placeholders for what the first input sizes
        full.__init__(self, 0, eps, momentum, False, False)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _jt.tensor(0, dtype=_jt.long, device=device)

    return type("Lazy" + full.__name__, (_LazyNormMixin, full), {
        "__init__": __init__, "cls_to_become": full, "__module__": __name__,
        "__doc__": f"`{full.__name__}` whose num_features is read from the first input."})


LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d = (
    _lazy_norm(c, True, True) for c in (BatchNorm1d, BatchNorm2d, BatchNorm3d))
LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d = (
    _lazy_norm(c, False, False) for c in (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d))
