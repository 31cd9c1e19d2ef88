"""`DataParallel` with no accelerator: the wrapped module, run as it is (PyTorch's CPU path)."""
from __future__ import annotations

from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """`nn.DataParallel(module, device_ids=None, output_device=None, dim=0)`. With no GPU the
    replica list is empty and `forward` is `module(*inputs, **kwargs)`; the wrapper's state dict
    keys carry the `module.` prefix, as PyTorch's do."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.device_ids: list = []
        self.dim = dim
        self.output_device = output_device

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """The functional form scatters over devices; with none PyTorch raises this RuntimeError
    (it has no CPU fallback, unlike the module)."""
    raise RuntimeError("device type could not be determined")
