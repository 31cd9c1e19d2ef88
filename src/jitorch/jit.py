"""`jitorch.jit`: PyTorch's `torch.jit` facade over the compiler in `jitorch.script`.

Re-exports only; the implementations live in `jitorch/script/`.
"""
from __future__ import annotations

from .script.api import script, trace  # noqa: F401
