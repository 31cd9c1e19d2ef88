"""`jitorch.backends.cuda`: `is_built()` answers whether this process has a cuda backend (CuPy
on a GPU, or the simulator); `matmul`'s precision flags and the scaled-dot-product kernel
switches are settable values with PyTorch's defaults."""


class _Flags:
    """A fixed set of settable flags; an unknown name raises PyTorch's AttributeError."""

    def __init__(self, **defaults):
        object.__setattr__(self, "_values", dict(defaults))

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"Unknown attribute {name}") from None

    def __setattr__(self, name, value):
        if name not in self._values:
            raise AttributeError(f"Unknown attribute {name}")
        self._values[name] = value


matmul = _Flags(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                allow_bf16_reduced_precision_reduction=True,
                allow_fp16_accumulation=False)

_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    """True where this process has a cuda backend (CuPy on a GPU, or the simulator)."""
    from .._device import cuda_backend
    return cuda_backend() is not None


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = bool(enabled)
