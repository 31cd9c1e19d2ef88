"""`jitorch.amp.GradScaler`: PyTorch 2.x's loss scaling (`torch.amp.GradScaler("cpu")`).

scale(loss) multiplies by the current scale (a float32 0-d tensor, as in PyTorch, so a bfloat16
loss stays bfloat16); unscale_(optimizer) multiplies every gradient by the float32 reciprocal and
records whether any is inf/nan; step(optimizer) unscales if needed and skips
`optimizer.step()` when an inf/nan was found; update() backs the scale off after a skipped step
and grows it after `growth_interval` clean steps (`torch._amp_update_scale_`'s rule).

"cuda" runs where this process has CUDA (a GPU or the simulator): the scale lives on the device
of the first output scaled (as PyTorch's), gradients are checked and unscaled on their own
devices (one inf/nan flag per device), so models spread over devices work. Without CUDA,
"cuda" warns and disables the scaler, as PyTorch's CPU-only build does.
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd import grad_mode

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _scalar(v: float, dev=None) -> Tensor:
    """A float32 0-d tensor of `v` on `dev` (None: the CPU)."""
    t = Tensor._make(np.array(v, dtype=np.float32))
    return t if dev is None else t.to(dev)


def _first_device(val):
    """The device of the first tensor in `val` (a tensor or nested iterables)."""
    if isinstance(val, Tensor):
        return val.device
    for v in val if isinstance(val, (list, tuple)) else ():
        d = _first_device(v)
        if d is not None:
            return d
    return None


class GradScaler:
    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        from .. import cuda
        if device == "cuda" and enabled and not cuda.is_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None  # made by the first scale() call, as in PyTorch
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier " \
              "in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev=None) -> None:
        self._scale = _scalar(self._init_scale, dev)
        self._growth_tracker = int(self._init_growth_tracker)

    def scale(self, outputs):
        """outputs * scale: a Tensor, or (nested) lists/tuples/iterables of Tensors."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._lazy_init_scale_growth_tracker(_first_device(outputs))
        if isinstance(outputs, Tensor):
            return outputs * self._scale.to(outputs.device)

        def apply_scale(val):
            if isinstance(val, Tensor):
                return val * self._scale.to(val.device)
            if isinstance(val, (list, tuple)):
                return type(val)(apply_scale(v) for v in val)
            if hasattr(val, "__iter__"):
                return map(apply_scale, val)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale: Tensor, allow_fp16: bool) -> dict:
        """Unscale every gradient on its device; {device name: 1.0 if an inf/nan was found
        there, else 0.0} (a float32 0-d tensor on that device)."""
        from .._device import backend_of
        found, inv = {}, {}
        with grad_mode.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise AssertionError(f"expected param to be torch.Tensor, got "
                                             f"{type(param).__name__}")
                    g = param.grad
                    if g is None:
                        continue
                    if not allow_fp16 and g.dtype is dt.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    # _amp_foreach_non_finite_check_and_unscale_: check, then always multiply
                    dev = g.device
                    if dev not in inv:
                        inv[dev], found[dev] = inv_scale.to(dev), False
                    xp = backend_of(g._device).xp
                    if not bool(xp.isfinite(g._data.astype(g._dtype.compute, copy=False)).all()):
                        found[dev] = True
                    g.mul_(inv[dev])
        return {str(d): _scalar(1.0 if f else 0.0, d) for d, f in found.items()} or \
            {"cpu": _scalar(0.0)}

    def unscale_(self, optimizer) -> None:
        """Divide the optimizer's gradients by the scale (in place), checking for inf/nan."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv = np.float32(1.0 / np.float64(self._scale.item()))  # double reciprocal, as PyTorch
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, _scalar(inv), False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """unscale_ (if not done) and optimizer.step(), skipped when a gradient is inf/nan."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Back off after an inf/nan step, grow after `growth_interval` clean steps; or set
        `new_scale` (a float or a 1-element tensor that does not require grad)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale = _scalar(new_scale, self._scale.device)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if not isinstance(new_scale, Tensor) or new_scale.numel() != 1 \
                        or new_scale.requires_grad:
                    raise AssertionError(reason)
                self._scale = _scalar(float(new_scale.reshape(()).item()), self._scale.device)
        else:
            found = [f for s in self._per_optimizer_states.values()
                     for f in s["found_inf_per_device"].values()]
            if len(found) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            scale = np.float32(self._scale.item())
            if sum(f.item() for f in found):  # _amp_update_scale_
                scale = np.float32(scale * np.float32(self._backoff_factor))
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    grown = np.float32(scale * np.float32(self._growth_factor))
                    if np.isfinite(grown):
                        scale = grown
                    self._growth_tracker = 0
                else:
                    self._growth_tracker = successful
            self._scale = _scalar(scale, self._scale.device)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled; the initial scale before the first scale())."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return self._growth_tracker

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor,
                    "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale = _scalar(state_dict["scale"], self._scale.device)
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker = int(state_dict["_growth_tracker"])
