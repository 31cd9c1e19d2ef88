"""`jitorch.autograd.profiler`: PyTorch's older profiler API (`torch.autograd.profiler`).

`profile(enabled=True, use_cuda=False, record_shapes=False, profile_memory=False,
with_stack=False, ...)` records the same events as `jitorch.profiler.profile` (one window, no
schedule); `use_cuda`/`use_device="cuda"` warn that CUDA is not available and profile the CPU,
as PyTorch does on a CPU-only build. `record_function` is the same class in both APIs.
"""
from __future__ import annotations

import warnings

from ..profiler.events import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401
from ..profiler.profiler import _Profile
from ..profiler.record_function import record_function  # noqa: F401

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]


class profile(_Profile):
    """`with jitorch.autograd.profiler.profile() as prof:` then `prof.key_averages().table()`;
    `enabled=False` makes it a no-op."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None):
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops,
                         with_modules=with_modules)
        self.enabled = enabled
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use "
                          "``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=2)
            use_device = "cuda"
        if use_device is not None:
            if use_device not in ("cuda", "xpu", "mtia", "hpu", "privateuseone"):
                warnings.warn(f"The {use_device} is not a valid device option.", stacklevel=2)
            else:
                warnings.warn(f"{use_device.upper()} is not available, disabling "
                              f"{use_device.upper()} profiling", stacklevel=2)
        self.use_cuda = False
        self.use_device = None
        self.use_cpu = use_cpu
        self.entered = False

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._start_trace()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self._stop_trace()
        return False

    def __str__(self):
        return self.table() if self._events is not None else "<unfinished profiler_legacy.profile>"
