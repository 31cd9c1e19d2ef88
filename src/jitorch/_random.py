"""Random numbers: `Generator`, the default generator and seeding, the random factories
(`rand`, `randn`, `randint`, `randperm`, `normal`, `bernoulli`, `multinomial`, `poisson`, the
`*_like` forms) and the sampling helpers; the in-place samplers (`Tensor.uniform_`, `normal_`,
`bernoulli_`, `random_`, `exponential_`, `geometric_`, `log_normal_`, `cauchy_`) are in
`_random_inplace.py`.

Invariants: every draw comes from a `Generator` (the `generator=` argument, else the default
one). A generator is PyTorch's CPU generator: mt19937 seeded as PyTorch seeds it, and PyTorch's
sampling transforms (jitorch/_mt19937.py), so after the same `manual_seed` a program draws
PyTorch's numbers (docs/random.md lists which samplers match bit for bit). Dropout masks come
from a second, counter-based stream keyed by the same seed (jitorch/_philox.py), shared with
compiled code. Like PyTorch, a fresh generator starts from seed 67280421310721, so an unseeded
program is still reproducible. `get_state` is PyTorch's 5056-byte layout, so states move
between PyTorch and jitorch. These are not registry ops: outputs carry no autograd history,
and the in-place samplers overwrite values like `fill_` does.

Threads: every draw, reseed and state read or write holds the generator's lock, so concurrent
draws from one generator never share numbers and a state is never read halfway through a draw.

`os.fork`: as in PyTorch, a forked child inherits every generator's state, so parent and child
draw the same numbers until one of them reseeds (DataLoader process workers reseed theirs:
utils/data/_worker.py, as PyTorch's do). The generators' locks are released in the child
(jitorch/_fork.py), and so are their NumPy bit generators' (`_after_fork`).
"""
from __future__ import annotations

import builtins
import contextlib
import os
import weakref

import numpy as np

from . import _dtype as dt
from . import _fork
from . import _mt19937 as _mt
from ._creation import (_check_input, _dtype_arg, _finish, _index_like, _num, _raw_size,
                        _size_args, _size_tuple, _write_out, trace_hook)
from ._device import as_device
from ._layout import factory_layout
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
# mantissa digits: random_() on a floating dtype draws integers in [0, 2**digits]
_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


class Generator:
    """`torch.Generator`: an independent random stream, PyTorch's CPU engine (mt19937 and its
    cached normal sample: jitorch/_mt19937.py) with PyTorch's seeding API and state layout."""

    def __init__(self, device="cpu"):
        self._device = as_device(device)
        self._lock = _fork.lock()
        # the Philox stream's (seed, offset) (jitorch/_philox.py: dropout masks); written in
        # place, never replaced: compiled code reads the default generator's array by address
        self._philox = np.zeros(2, dtype=np.uint64)
        self._engine = _mt.Engine(_DEFAULT_SEED)
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
        with self._lock:
            self._engine.reseed(seed)
            self._philox[0], self._philox[1] = seed, 0
        return self

    def __getstate__(self):  # copy/pickle: the state, not the lock
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = _fork.lock()
        # its own engine and Philox state (a shallow copy would share them)
        self._engine = self._engine.copy()
        self._philox = np.array(state.get("_philox", (self._engine.seed, 0)), dtype=np.uint64)
        _generators.add(self)

    def seed(self) -> int:
        """Reseed from OS entropy; returns the new seed."""
        s = builtins.int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._engine.seed

    def get_state(self) -> Tensor:
        """The full state as a uint8 tensor in the layout of PyTorch's (a CPU generator's
        5056 bytes; the Philox stream's offset rides in a field PyTorch ignores)."""
        with self._lock:
            raw = self._engine.state_bytes(int(self._philox[1]))
        return Tensor._make(np.frombuffer(raw, dtype=np.uint8).copy(), dt.uint8)

    def set_state(self, new_state) -> "Generator":
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state._dtype is not dt.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if not new_state.is_contiguous():
            raise RuntimeError("RNG state must be contiguous")
        raw = new_state._data.tobytes()
        if len(raw) != _mt.STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_mt.STATE_BYTES} but "
                               f"found the input RNG state size to be {len(raw)}")
        engine, offset = _mt.Engine.from_state_bytes(raw)
        with self._lock:
            self._engine = engine
            self._philox[0], self._philox[1] = engine.seed, offset
        return self

    def clone_state(self) -> "Generator":
        g = Generator()
        return g.set_state(self.get_state())

    def __repr__(self):
        return f"<jitorch.Generator object at {hex(id(self))}>"


_generators: "weakref.WeakSet" = weakref.WeakSet()  # every Generator, for _after_fork
default_generator = Generator()


@_fork.in_child
def _after_fork() -> None:
    """In a forked child: release each generator's bit-generator lock (a parent thread may
    have been drawing); the states themselves are inherited, as in PyTorch."""
    for g in list(_generators):
        g._engine.bitgen.lock._at_fork_reinit()


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
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """`torch.random.fork_rng`: restore the default generator's state on exit, and the CUDA
    devices' (`devices`, default all of them) where there are any."""
    if not enabled:
        yield
        return
    from .cuda import random as cuda_random
    gens = cuda_random.generators()
    if devices is not None:
        gens = [cuda_random.default_generator(as_device(d).index if not isinstance(d, int)
                                              else d) for d in devices]
    states = [(g, g.get_state()) for g in (default_generator, *gens)]
    try:
        yield
    finally:
        for g, st in states:
            g.set_state(st)


# --- helpers -------------------------------------------------------------------------------------
def _gen(generator, fname: str) -> Generator:
    """The generator a draw uses: `generator=`, else the default one."""
    from ._ops.registry import _mode_state
    for mode in _mode_state.stack:  # vmap refuses random ops (randomness="error")
        check = getattr(mode, "random_op", None)
        if check is not None:
            check(fname)
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"{fname}(): argument 'generator' must be torch.Generator, not "
                        f"{type(generator).__name__}")
    return generator


def _draw(generator, fname: str, sampler, *args):
    """`sampler(engine, *args)` (a transform of jitorch/_mt19937.py) under the lock of the
    generator the call draws from."""
    g = _gen(generator, fname)
    with g._lock:
        return sampler(g._engine, *args)


def _pt(d: dt.dtype) -> str:
    from ._ops.registry import _pt_name
    return _pt_name(d)


def _not_impl(kernel: str, d: dt.dtype):
    return NotImplementedError(f'"{kernel}" not implemented for \'{_pt(d)}\'')


def _real_draw(generator, fname, shape, d: dt.dtype, sampler, *args) -> np.ndarray:
    """An array of d's storage type and `shape` from `sampler(engine, n, real dtype, *args)`;
    a complex dtype draws its parts interleaved (real, imaginary, ...), as PyTorch samples
    `view_as_real` of the tensor."""
    n = builtins.int(np.prod(shape, dtype=np.int64))
    if d.category == dt.COMPLEX:
        r = d.to_real()
        vals = _draw(generator, fname, sampler, 2 * n, r.np, *args).astype(r.np, copy=False)
        return vals.view(d.np).reshape(shape)
    return _draw(generator, fname, sampler, n, d.np, *args).astype(d.np, copy=False).reshape(
        shape)


def _uniform_values(generator, fname, shape, d: dt.dtype, lo=0.0, hi=1.0) -> np.ndarray:
    """U[lo, hi) as PyTorch's CPU kernel draws it (complex: each part)."""
    return _real_draw(generator, fname, shape, d, _mt.uniform, lo, hi)


def _normal_values(generator, fname, shape, d: dt.dtype, mean=0.0, std=1.0,
                   contiguous=True) -> np.ndarray:
    """mean + std * N(0, 1) as PyTorch's CPU kernel draws it; complex dtypes get std / sqrt(2)
    per part (unit total variance for std 1), as in PyTorch."""
    if d.category == dt.COMPLEX:
        std = std / np.sqrt(2.0)
    return _real_draw(generator, fname, shape, d, _mt.normal, mean, std, contiguous)


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


def _draw_ints(generator, fname: str, lo: int, hi: int, shape, d: dt.dtype) -> np.ndarray:
    """Integers in [lo, hi) as PyTorch's `random_(lo, hi)` draws them for dtype d (int64)."""
    n = builtins.int(np.prod(shape, dtype=np.int64))
    return _draw(generator, fname, _mt.int_from_to, n, lo, hi, d.name).reshape(shape)


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
    factory_layout("rand", layout)
    shape = _size_args("rand", size, _size_kw("rand", kw))
    dtype = _dtype_arg(dtype, "rand")
    d = dtype or (out._dtype if out is not None else dt.get_default_dtype())
    _require_float(d, "check_uniform_bounds")
    arr = _uniform_values(generator, "rand", shape, d)
    r = _finish_like(arr, d, out, dtype, requires_grad, "rand")
    if trace_hook[0] is not None:  # not recordable: a trace warns of traced sizes baked in
        trace_hook[0]("rand", r, requires_grad, {"size": _raw_size(size, kw.get("size"))})
    return r


@_on_device(random=True)
def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False, **kw) -> Tensor:
    """`torch.randn`: standard normal in the default dtype."""
    as_device(device)
    factory_layout("randn", layout)
    shape = _size_args("randn", size, _size_kw("randn", kw))
    dtype = _dtype_arg(dtype, "randn")
    d = dtype or (out._dtype if out is not None else dt.get_default_dtype())
    _require_float(d, "normal_kernel_cpu")
    arr = _normal_values(generator, "randn", shape, d)
    r = _finish_like(arr, d, out, dtype, requires_grad, "randn")
    if trace_hook[0] is not None:  # not recordable: a trace warns of traced sizes baked in
        trace_hook[0]("randn", r, requires_grad, {"size": _raw_size(size, kw.get("size"))})
    return r


@_on_device(like="input", random=True)
def rand_like(input, *, generator=None, dtype=None, layout=None, device=None,
              requires_grad=False, memory_format=None) -> Tensor:
    _check_input(input, "rand_like")
    factory_layout("rand_like", input.layout if layout is None else layout, layout is None)
    d = _dtype_arg(dtype, "rand_like") or input._dtype
    _require_float(d, "check_uniform_bounds")
    arr = _uniform_values(generator, "rand_like", input._data.shape, d)
    return _finish(arr, d, requires_grad)


@_on_device(like="input", random=True)
def randn_like(input, *, generator=None, dtype=None, layout=None, device=None,
               requires_grad=False, memory_format=None) -> Tensor:
    _check_input(input, "randn_like")
    factory_layout("randn_like", input.layout if layout is None else layout, layout is None)
    d = _dtype_arg(dtype, "randn_like") or input._dtype
    _require_float(d, "normal_kernel_cpu")
    arr = _normal_values(generator, "randn_like", input._data.shape, d)
    return _finish(arr, d, requires_grad)


@_on_device(random=True)
def randint(*args, size=None, low=None, high=None, generator=None, out=None, dtype=None,
            layout=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """`torch.randint(high, size)` / `torch.randint(low, high, size)`: integers in
    [low, high), int64 unless `dtype` is given."""
    as_device(device)
    factory_layout("randint", layout)
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
    arr = _draw_ints(generator, "randint", low, high, shape, d).astype(d.np)
    return _finish_like(arr, d, out, dtype, requires_grad, "randint")


@_on_device(like="input", random=True)
def randint_like(input, low=0, high=None, *, generator=None, dtype=None, layout=None,
                 device=None, requires_grad=False, memory_format=None) -> Tensor:
    """`torch.randint_like(input, high)` / `(input, low, high)`: input's shape and dtype."""
    _check_input(input, "randint_like")
    factory_layout("randint_like", input.layout if layout is None else layout, layout is None)
    if high is None:
        low, high = 0, low
    high = _int_arg(high, "randint_like", "high", 2)
    low = _int_arg(low, "randint_like", "low", 2)
    d = _dtype_arg(dtype, "randint_like") or input._dtype
    _check_int_range(low, high, d)
    arr = _draw_ints(generator, "randint_like", low, high, input._data.shape, d)
    return _finish(arr.astype(d.np), d, requires_grad)


@_on_device(random=True)
def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False) -> Tensor:
    """`torch.randperm`: a random permutation of 0..n-1 (int64 unless `dtype` is given)."""
    as_device(device)
    factory_layout("randperm", layout)
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
    arr = _draw(generator, "randperm", _mt.randperm, n).astype(d.np)
    return _finish_like(arr, d, out, dtype, requires_grad, "randperm")


@_on_device(random=True)
def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """`torch.normal`: (Tensor mean, Tensor std), (Tensor mean, float std), (float mean,
    Tensor std) broadcast their shapes and take the tensor's dtype; (float, float, size) makes a
    new tensor of the default dtype."""
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
        arr = _normal_values(generator, "normal", shape, d, m, s)
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
    # PyTorch: (Tensor mean, float std) draws normal_(0, std) then adds mean; with a tensor
    # std it draws normal_(0, 1), then multiplies by std and adds mean (two roundings)
    with np.errstate(all="ignore"):
        if st:
            z = _normal_values(generator, "normal", shape, d)
            arr = (z * np.asarray(s).astype(d.np)).astype(d.np)
        else:
            arr = _normal_values(generator, "normal", shape, d, 0.0, s)
        arr = (arr + np.asarray(m).astype(d.np)).astype(d.np)
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


_P_MSG = ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
          "message be improved?  If so, please report an enhancement request to PyTorch.)")


def bernoulli(input, p=None, *, generator=None, out=None) -> Tensor:
    """`torch.bernoulli(input)`: 1 with probability input[i] (input's dtype); with a float `p`,
    every element uses p and only input's shape and dtype matter."""
    _check_input(input, "bernoulli")
    shape = input._data.shape
    if p is None:
        if input._dtype.category != dt.FLOAT:
            raise _not_impl("bernoulli_tensor_cpu_p_", input._dtype)
        probs = input._data
        if not np.all((probs >= 0) & (probs <= 1)):
            raise RuntimeError(_P_MSG)
        hits = _draw(generator, "bernoulli", _mt.bernoulli_tensor, probs)
    else:
        probs = _check_p(_scalar(p, "bernoulli", "p"))
        hits = _draw(generator, "bernoulli", _mt.bernoulli_scalar, input.numel(), probs)
    arr = hits.reshape(shape).astype(input._dtype.np)
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
    p = input._data.reshape(-1, n_cat)
    p64 = p.astype(np.float64)
    if not np.all(np.isfinite(p64) & (p64 >= 0)):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if np.any(p64.sum(axis=1) <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    idx = _draw(generator, "multinomial", _mt.multinomial, p, num_samples, bool(replacement))
    arr = idx.reshape(input._data.shape[:-1] + (num_samples,))
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
    arr = _draw(generator, "poisson", _mt.poisson, rates).astype(input._dtype.np)
    return _finish(arr, input._dtype, False)


# the in-place samplers (Tensor.uniform_, ...) are bound by _random_inplace.py
from . import _random_inplace  # noqa: E402,F401
