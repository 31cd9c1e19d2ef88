"""Random numbers: `Generator`, the default generator and seeding, the random factories
(`rand`, `randn`, `randint`, `randperm`, `normal`, `bernoulli`, `multinomial`, `poisson`, the
`*_like` forms) and the sampling helpers; the in-place samplers (`Tensor.uniform_`, `normal_`,
`bernoulli_`, `random_`, `exponential_`, `geometric_`, `log_normal_`, `cauchy_`) are in
`_random_inplace.py`.

Invariants: every draw comes from a `Generator` (the `generator=` argument, else the default
one), each backed by NumPy's PCG64 (and, for dropout masks, a Philox stream keyed by the same
seed: jitorch/_philox.py), so equal seeds give equal numbers; the numbers themselves
differ from PyTorch's (a different bit generator). Like PyTorch, a fresh generator starts from
seed 67280421310721, so an unseeded program is still reproducible. Samples are drawn in the
target dtype's precision (`rand` in float16 has 11 random bits, as in PyTorch) so that
`[0, 1)` stays half-open. These are not registry ops: outputs carry no autograd history, and
the in-place samplers overwrite values like `fill_` does.

Threads: a draw goes through the generator's NumPy `Generator`, which holds its bit generator's
lock while it draws, so concurrent draws from one generator never share numbers. Reseeding and
`get_state`/`set_state` hold the jitorch generator's lock (and `get_state` the bit generator's,
so it never reads a state halfway through a draw); a draw sees either the old or the new stream
whole (`_rng` is replaced in one assignment, with its bit generator).

`os.fork`: as in PyTorch, a forked child inherits every generator's state, so parent and child
draw the same numbers until one of them reseeds (DataLoader process workers reseed theirs:
utils/data/_worker.py, as PyTorch's do). The bit generators' locks (NumPy's, held during a draw
that another parent thread was making when it forked) are released in the child, where nobody
holds them (`_after_fork`, see jitorch/_fork.py).
"""
from __future__ import annotations

import builtins
import contextlib
import os
import weakref

import numpy as np

from . import _dtype as dt
from . import _fork
from ._creation import (_check_input, _dtype_arg, _finish, _index_like, _num, _size_args,
                        _size_tuple, _write_out)
from ._device import as_device
from ._device.transfer import factory as _on_device
from ._tensor import Tensor

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "rand", "rand_like", "randn", "randn_like",
           "randint", "randint_like", "randperm", "normal", "bernoulli", "multinomial",
           "poisson"]

_DEFAULT_SEED = 67280421310721  # PyTorch's default CPU seed
_U64 = 1 << 64
# C++ type names PyTorch's random_ bound checks use
_C_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char",
            "int16": "short int", "int32": "int", "int64": "long int", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double"}
# mantissa digits: random_() and rand draw integers of this many bits for floating dtypes
_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


class Generator:
    """`torch.Generator`: an independent random stream (PCG64) with PyTorch's seeding API."""

    def __init__(self, device="cpu"):
        self._device = as_device(device)
        self._lock = _fork.lock()
        # the Philox stream's (seed, offset) (jitorch/_philox.py: dropout masks); written in
        # place, never replaced: compiled code reads the default generator's array by address
        self._philox = np.zeros(2, dtype=np.uint64)
        self.manual_seed(_DEFAULT_SEED)
        _generators.add(self)

    @property
    def device(self):
        return self._device

    def manual_seed(self, seed) -> "Generator":
        """Reseed; negative seeds wrap to 64 bits, as in PyTorch. Returns self."""
        seed = builtins.int(seed)
        if not -(1 << 63) <= seed < _U64:
            raise ValueError("Overflow when unpacking long long")
        seed %= _U64
        self._install(seed, np.random.PCG64(seed))
        return self

    def __getstate__(self):  # copy/pickle: the state, not the lock
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = _fork.lock()
        # its own Philox state (a shallow copy would share the array); an older pickle: offset 0
        self._philox = np.array(state.get("_philox", (self._seed, 0)), dtype=np.uint64)
        _generators.add(self)

    def _install(self, seed: int, bitgen) -> None:
        """Make (seed, bitgen) the generator's state: `_rng` last, in one assignment, so that a
        draw on another thread uses the old stream or the new one, never a mix."""
        self._install_offset(seed, bitgen, 0)

    def _install_offset(self, seed: int, bitgen, offset: int) -> None:
        """`_install`, with the Philox stream at `offset` under key `seed`."""
        with self._lock:
            self._seed, self._bitgen = seed, bitgen
            self._philox[0], self._philox[1] = seed, offset
            self._rng = np.random.Generator(bitgen)

    def seed(self) -> int:
        """Reseed from OS entropy; returns the new seed."""
        s = builtins.int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Tensor:
        """The full state as a uint8 tensor (seed, PCG64 state and increment, buffered bits,
        the Philox stream's offset)."""
        with self._lock:
            seed, bitgen = self._seed, self._bitgen
            offset = int(self._philox[1])
            with bitgen.lock:  # (held by a draw: never a state halfway through one)
                st = bitgen.state
        raw = (seed.to_bytes(8, "little")
               + st["state"]["state"].to_bytes(16, "little")
               + st["state"]["inc"].to_bytes(16, "little")
               + builtins.int(st["has_uint32"]).to_bytes(1, "little")
               + builtins.int(st["uinteger"]).to_bytes(4, "little")
               + offset.to_bytes(8, "little"))
        return Tensor._make(np.frombuffer(raw, dtype=np.uint8).copy(), dt.uint8)

    def set_state(self, new_state) -> "Generator":
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state._dtype is not dt.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        raw = new_state._data.tobytes()
        if len(raw) != _STATE_BYTES:
            raise RuntimeError(f"Expected a PCG64 generator state of size {_STATE_BYTES} but "
                               f"found the input RNG state size to be {len(raw)}")
        bitgen = np.random.PCG64()
        bitgen.state = {
            "bit_generator": "PCG64",
            "state": {"state": builtins.int.from_bytes(raw[8:24], "little"),
                      "inc": builtins.int.from_bytes(raw[24:40], "little")},
            "has_uint32": raw[40], "uinteger": builtins.int.from_bytes(raw[41:45], "little")}
        self._install_offset(builtins.int.from_bytes(raw[:8], "little"), bitgen,
                             builtins.int.from_bytes(raw[45:53], "little"))
        return self

    def clone_state(self) -> "Generator":
        g = Generator()
        return g.set_state(self.get_state())

    def __repr__(self):
        return f"<jitorch.Generator object at {hex(id(self))}>"


_STATE_BYTES = 53
_generators: "weakref.WeakSet" = weakref.WeakSet()  # every Generator, for _after_fork
default_generator = Generator()


@_fork.in_child
def _after_fork() -> None:
    """In a forked child: release each generator's bit-generator lock (a parent thread may
    have been drawing); the states themselves are inherited, as in PyTorch."""
    for g in list(_generators):
        g._bitgen.lock._at_fork_reinit()


def manual_seed(seed) -> Generator:
    """`torch.manual_seed`: reseed the default generator (and, as PyTorch, every CUDA
    device's); returns it."""
    from .cuda.random import manual_seed_all
    manual_seed_all(seed)
    return default_generator.manual_seed(seed)


def seed() -> int:
    """`torch.seed`: reseed the default generator nondeterministically; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, **kwargs):
    """`torch.random.fork_rng`: restore the default generator's state on exit."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


# --- helpers -------------------------------------------------------------------------------------
def _rng(generator, fname: str) -> np.random.Generator:
    from ._ops.registry import _mode_state
    for mode in _mode_state.stack:  # vmap refuses random ops (randomness="error")
        check = getattr(mode, "random_op", None)
        if check is not None:
            check(fname)
    if generator is None:
        return default_generator._rng
    if not isinstance(generator, Generator):
        raise TypeError(f"{fname}(): argument 'generator' must be torch.Generator, not "
                        f"{type(generator).__name__}")
    return generator._rng


def _pt(d: dt.dtype) -> str:
    from ._ops.registry import _pt_name
    return _pt_name(d)


def _not_impl(kernel: str, d: dt.dtype):
    return NotImplementedError(f'"{kernel}" not implemented for \'{_pt(d)}\'')


def _uniform01(rng, shape, d: dt.dtype) -> np.ndarray:
    """U[0, 1) with the dtype's mantissa precision, so rounding never reaches 1."""
    if d is dt.float64:
        return rng.random(shape)
    if d is dt.float32:
        return rng.random(shape, dtype=np.float32)
    bits = _DIGITS[d.name]
    return (rng.integers(0, 1 << bits, shape) * (1.0 / (1 << bits))).astype(np.float32)


def _float_draw(rng, shape, d: dt.dtype, real_draw) -> np.ndarray:
    """Draw real parts (and imaginary ones for complex dtypes) as arrays of d's storage type."""
    if d.category == dt.COMPLEX:
        r = d.to_real()
        return (real_draw(rng, shape, r).astype(d.np)
                + 1j * real_draw(rng, shape, r).astype(d.np)).astype(d.np)
    return real_draw(rng, shape, d).astype(d.np)


def _normal_real(rng, shape, d: dt.dtype) -> np.ndarray:
    return rng.standard_normal(shape, dtype=np.float64 if d is dt.float64 else np.float32)


def _std_normal(rng, shape, d: dt.dtype) -> np.ndarray:
    """N(0, 1); complex dtypes get N(0, 1/2) per part (unit total variance), as in PyTorch."""
    if d.category == dt.COMPLEX:
        z = _float_draw(rng, shape, d, _normal_real)
        return (z * np.sqrt(0.5).astype(d.to_real().np)).astype(d.np)
    return _float_draw(rng, shape, d, _normal_real)


def _require_float(d: dt.dtype, kernel: str) -> None:
    if d.category not in (dt.FLOAT, dt.COMPLEX):
        raise _not_impl(kernel, d)


def _inplace_write(self: Tensor, arr: np.ndarray) -> Tensor:
    """Overwrite self's values with samples: PyTorch's in-place rules, a version bump, and
    no gradient through the overwritten values."""
    from .autograd import grad_mode
    from .autograd.inplace import check_inplace_allowed, check_writable, rebase_history
    check_inplace_allowed(self)
    check_writable(self)
    with np.errstate(all="ignore"):
        self._data[...] = arr.astype(self._dtype.np, copy=False)
    self._version[0] += 1
    if grad_mode._state.enabled and self._requires_grad and self._grad_fn is not None:
        from ._ops.conversion import _detached_zero_history
        rebase_history(self, _detached_zero_history(self))
    return self


def _scalar(v, fname: str, name: str) -> float:
    if isinstance(v, Tensor):
        return v.item()
    if isinstance(v, np.generic):
        return v.item()
    if not isinstance(v, (builtins.int, builtins.float)):
        raise TypeError(f"{fname}(): argument '{name}' must be float, not {type(v).__name__}")
    return v


def _int_arg(v, fname: str, name: str, pos: int) -> int:
    r = _index_like(v)
    if r is None:
        raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be int, not "
                        f"{type(v).__name__}")
    if not -(1 << 63) <= r < (1 << 63):
        raise ValueError("Overflow when unpacking long long")
    return r


def _check_int_range(lo: int, hi: int, d: dt.dtype) -> None:
    """PyTorch's random_ bound checks for [lo, hi) in dtype d."""
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} "
                           f">= to={hi}")
    if d is dt.bool:
        mn, mx = 0, 1
    elif d.category == dt.INT:
        info = np.iinfo(d.np)
        mn, mx = builtins.int(info.min), builtins.int(info.max)
    elif d.category == dt.FLOAT:
        info = dt.finfo(d)
        mn, mx = info.min, info.max
    else:
        raise _not_impl("random_from_to", d)
    if not mn <= lo <= mx:
        raise RuntimeError(f"from is out of bounds for {_C_NAMES[d.name]}")
    if not mn <= hi - 1 <= mx:
        raise RuntimeError(f"to - 1 is out of bounds for {_C_NAMES[d.name]}")


def _draw_ints(rng, lo: int, hi: int, shape) -> np.ndarray:
    return rng.integers(lo, hi, shape, dtype=np.int64)


def _size_kw(fname: str, kw: dict):
    extra = kw.keys() - {"size"}
    if extra:
        raise TypeError(f"{fname}() got an unexpected keyword argument '{extra.pop()}'")
    return kw.get("size")


def _finish_like(arr, d, out, dtype, requires_grad, fname):
    if out is not None:
        return _write_out(out, arr, dtype, fname)
    return _finish(arr, d, requires_grad)


# --- factories -----------------------------------------------------------------------------------
@_on_device(random=True)
def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False, **kw) -> Tensor:
    """`torch.rand`: U[0, 1) in the default dtype (complex: each part)."""
    as_device(device)
    shape = _size_args("rand", size, _size_kw("rand", kw))
    dtype = _dtype_arg(dtype, "rand")
    d = dtype or (out._dtype if out is not None else dt.get_default_dtype())
    _require_float(d, "check_uniform_bounds")
    arr = _float_draw(_rng(generator, "rand"), shape, d, _uniform01)
    return _finish_like(arr, d, out, dtype, requires_grad, "rand")


@_on_device(random=True)
def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False, **kw) -> Tensor:
    """`torch.randn`: standard normal in the default dtype."""
    as_device(device)
    shape = _size_args("randn", size, _size_kw("randn", kw))
    dtype = _dtype_arg(dtype, "randn")
    d = dtype or (out._dtype if out is not None else dt.get_default_dtype())
    _require_float(d, "normal_kernel_cpu")
    arr = _std_normal(_rng(generator, "randn"), shape, d)
    return _finish_like(arr, d, out, dtype, requires_grad, "randn")


@_on_device(like="input", random=True)
def rand_like(input, *, generator=None, dtype=None, layout=None, device=None,
              requires_grad=False, memory_format=None) -> Tensor:
    _check_input(input, "rand_like")
    d = _dtype_arg(dtype, "rand_like") or input._dtype
    _require_float(d, "check_uniform_bounds")
    arr = _float_draw(_rng(generator, "rand_like"), input._data.shape, d, _uniform01)
    return _finish(arr, d, requires_grad)


@_on_device(like="input", random=True)
def randn_like(input, *, generator=None, dtype=None, layout=None, device=None,
               requires_grad=False, memory_format=None) -> Tensor:
    _check_input(input, "randn_like")
    d = _dtype_arg(dtype, "randn_like") or input._dtype
    _require_float(d, "normal_kernel_cpu")
    arr = _std_normal(_rng(generator, "randn_like"), input._data.shape, d)
    return _finish(arr, d, requires_grad)


@_on_device(random=True)
def randint(*args, size=None, low=None, high=None, generator=None, out=None, dtype=None,
            layout=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """`torch.randint(high, size)` / `torch.randint(low, high, size)`: integers in
    [low, high), int64 unless `dtype` is given."""
    as_device(device)
    pos = list(args)
    if len(pos) > 3:
        raise TypeError(f"randint() takes at most 3 positional arguments ({len(pos)} given)")
    n_pos = len(pos)
    if size is None:
        if not pos:
            raise TypeError("randint() missing required argument 'size'")
        size = pos.pop()
    if high is None:
        if not pos:
            raise TypeError("randint() missing required argument 'high'")
        high = pos.pop()
    if low is None:
        low = pos.pop() if pos else 0
    shape = _size_tuple("randint", size, n_pos if n_pos else 2)
    high = _int_arg(high, "randint", "high", 2 if n_pos == 3 else 1)
    low = _int_arg(low, "randint", "low", 1)
    dtype = _dtype_arg(dtype, "randint")
    d = dtype or (out._dtype if out is not None else dt.int64)
    _check_int_range(low, high, d)
    arr = _draw_ints(_rng(generator, "randint"), low, high, shape).astype(d.np)
    return _finish_like(arr, d, out, dtype, requires_grad, "randint")


@_on_device(like="input", random=True)
def randint_like(input, low=0, high=None, *, generator=None, dtype=None, layout=None,
                 device=None, requires_grad=False, memory_format=None) -> Tensor:
    """`torch.randint_like(input, high)` / `(input, low, high)`: input's shape and dtype."""
    _check_input(input, "randint_like")
    if high is None:
        low, high = 0, low
    high = _int_arg(high, "randint_like", "high", 2)
    low = _int_arg(low, "randint_like", "low", 2)
    d = _dtype_arg(dtype, "randint_like") or input._dtype
    _check_int_range(low, high, d)
    arr = _draw_ints(_rng(generator, "randint_like"), low, high, input._data.shape)
    return _finish(arr.astype(d.np), d, requires_grad)


@_on_device(random=True)
def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False) -> Tensor:
    """`torch.randperm`: a random permutation of 0..n-1 (int64 unless `dtype` is given)."""
    as_device(device)
    n = _int_arg(n, "randperm", "n", 1)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dtype = _dtype_arg(dtype, "randperm")
    d = dtype or (out._dtype if out is not None else dt.int64)
    if d is dt.bool or d.category == dt.COMPLEX:
        raise _not_impl("randperm", d)
    if d.category == dt.INT and n - 1 > np.iinfo(d.np).max:
        from ._creation import _C_NAMES as _CONV_NAMES
        raise RuntimeError(f"value cannot be converted to type {_CONV_NAMES[d.name]} without "
                           "overflow")
    arr = _rng(generator, "randperm").permutation(n).astype(d.np)
    return _finish_like(arr, d, out, dtype, requires_grad, "randperm")


@_on_device(random=True)
def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """`torch.normal`: (Tensor mean, Tensor std), (Tensor mean, float std), (float mean,
    Tensor std) broadcast their shapes and take the tensor's dtype; (float, float, size) makes a
    new tensor of the default dtype."""
    rng = _rng(generator, "normal")
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got "
                            f"({type(mean).__name__}, {type(std).__name__}), but expected "
                            "(float mean, float std, tuple of ints size) or a Tensor mean/std")
        as_device(device)
        shape = _size_tuple("normal", size, 3)
        m, s = _scalar(mean, "normal", "mean"), _scalar(std, "normal", "std")
        _check_std(s)
        dtype = _dtype_arg(dtype, "normal")
        d = dtype or (out._dtype if out is not None else dt.get_default_dtype())
        _require_float(d, "normal_kernel_cpu")
        arr = _normal_values(rng, shape, d, m, s)
        return _finish_like(arr, d, out, dtype, requires_grad, "normal")
    if size is not None:
        raise TypeError("normal() received an invalid combination of arguments: `size` is "
                        "only accepted with float mean and std")
    d = mean._dtype if mt else std._dtype
    _require_float(d, "normal_kernel_cpu")
    m = mean._data if mt else _scalar(mean, "normal", "mean")
    if st:
        s = std._data
        if np.any(s < 0):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    else:
        s = _scalar(std, "normal", "std")
        _check_std(s)
    shape = _broadcast(np.shape(m), np.shape(s))
    ct = d.compute if d.category == dt.FLOAT else d.np
    z = _std_normal(rng, shape, d).astype(ct)
    with np.errstate(all="ignore"):
        arr = (np.asarray(m).astype(ct) + np.asarray(s).astype(ct) * z).astype(d.np)
    if out is not None:
        return _write_out(out, arr, None, "normal")
    return _finish(arr, d, False)


def _broadcast(a: tuple, b: tuple) -> tuple:
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        n = max(len(a), len(b))
        pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
        for i in range(n - 1, -1, -1):
            if pa[i] != pb[i] and 1 not in (pa[i], pb[i]):
                raise RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of "
                                   f"tensor b ({pb[i]}) at non-singleton dimension {i}") from None
        raise


def _check_std(s: float) -> None:
    if s < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(float(s))}")


def _normal_values(rng, shape, d: dt.dtype, mean: float, std: float) -> np.ndarray:
    """mean + std * N(0, 1); for complex dtypes both parts get mean and std / sqrt(2)."""
    z = _std_normal(rng, shape, d)
    ct = d.compute if d.category == dt.FLOAT else d.np
    with np.errstate(all="ignore"):
        if d.category == dt.COMPLEX:
            return (z.astype(ct) * std + complex(mean, mean)).astype(d.np)
        return (z.astype(ct) * ct.type(std) + ct.type(mean)).astype(d.np)


_P_MSG = ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
          "message be improved?  If so, please report an enhancement request to PyTorch.)")


def bernoulli(input, p=None, *, generator=None, out=None) -> Tensor:
    """`torch.bernoulli(input)`: 1 with probability input[i] (input's dtype); with a float `p`,
    every element uses p and only input's shape and dtype matter."""
    _check_input(input, "bernoulli")
    rng = _rng(generator, "bernoulli")
    shape = input._data.shape
    if p is None:
        if input._dtype.category != dt.FLOAT:
            raise _not_impl("bernoulli_tensor_cpu_p_", input._dtype)
        probs = input._data.astype(np.float64)
        if not np.all((probs >= 0) & (probs <= 1)):
            raise RuntimeError(_P_MSG)
    else:
        probs = _check_p(_scalar(p, "bernoulli", "p"))
    arr = (rng.random(shape) < probs).astype(input._dtype.np)
    if out is not None:
        return _write_out(out, arr, None, "bernoulli")
    return _finish(arr, input._dtype, False)


def _check_p(p: float) -> float:
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(float(p))}")
    return p


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None) -> Tensor:
    """`torch.multinomial`: indices drawn from the (unnormalised) rows of `input`, int64.
    Without replacement, keys p / Exp(1) ranked descending give sequential sampling without
    replacement (as PyTorch does it), so zero-probability indices come last."""
    _check_input(input, "multinomial")
    num_samples = _int_arg(num_samples, "multinomial", "num_samples", 2)
    if input._dtype.category != dt.FLOAT:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_pt(input._dtype)}")
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    n_cat = input._data.shape[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    p = input._data.astype(np.float64).reshape(-1, n_cat)
    if not np.all(np.isfinite(p) & (p >= 0)):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    total = p.sum(axis=1, keepdims=True)
    if np.any(total <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = _rng(generator, "multinomial")
    if replacement:
        cdf = np.cumsum(p / total, axis=1)
        cdf[:, -1] = 1.0
        u = rng.random((p.shape[0], num_samples))
        idx = np.stack([np.searchsorted(c, r, side="right") for c, r in zip(cdf, u)])
        idx = np.minimum(idx, n_cat - 1)
    else:
        with np.errstate(divide="ignore"):
            keys = p / rng.standard_exponential(p.shape)
        idx = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    arr = idx.astype(np.int64).reshape(input._data.shape[:-1] + (num_samples,))
    if out is not None:
        return _write_out(out, arr, None, "multinomial")
    return _finish(arr, dt.int64, False)


def poisson(input, generator=None) -> Tensor:
    """`torch.poisson`: Poisson(rate) samples with input's (floating) dtype."""
    _check_input(input, "poisson")
    if input._dtype.category != dt.FLOAT:
        raise _not_impl("poisson_cpu", input._dtype)
    rates = input._data.astype(np.float64)
    if np.any(rates < 0):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    arr = _rng(generator, "poisson").poisson(rates).astype(input._dtype.np)
    return _finish(arr, input._dtype, False)


# the in-place samplers (Tensor.uniform_, ...) are bound by _random_inplace.py
from . import _random_inplace  # noqa: E402,F401
