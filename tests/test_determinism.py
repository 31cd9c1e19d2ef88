"""Deterministic mode (`_determinism`): PyTorch's API and errors, the `empty*` fill values, BLAS
at one thread, and bit-identical results across runs and thread counts, eager and compiled."""
import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
from jitorch import _determinism, _threads

threadpoolctl = pytest.importorskip("threadpoolctl")


@pytest.fixture(autouse=True)
def _restore():
    saved = (_determinism._enabled, _determinism._warn_only, _determinism._fill,
             _threads._num_threads, _threads._pinned)
    yield
    jitorch.use_deterministic_algorithms(saved[0], warn_only=saved[1])
    _determinism._fill = saved[2]
    if _threads._num_threads != saved[3]:
        _threads._num_threads = saved[3]
        _threads._resize_pool_locked()
    if _threads._pinned and not saved[4]:
        _threads.unpin_blas()


def test_flags_and_debug_mode():
    assert not jitorch.are_deterministic_algorithms_enabled()
    assert jitorch.get_deterministic_debug_mode() == 0
    jitorch.use_deterministic_algorithms(True)
    assert jitorch.are_deterministic_algorithms_enabled()
    assert not jitorch.is_deterministic_algorithms_warn_only_enabled()
    assert jitorch.get_deterministic_debug_mode() == 2
    jitorch.use_deterministic_algorithms(True, warn_only=True)
    assert jitorch.get_deterministic_debug_mode() == 1
    jitorch.use_deterministic_algorithms(False, warn_only=True)  # PyTorch keeps warn_only
    assert (jitorch.are_deterministic_algorithms_enabled(),
            jitorch.is_deterministic_algorithms_warn_only_enabled(),
            jitorch.get_deterministic_debug_mode()) == (False, True, 0)
    for mode, want in (("warn", (True, True)), ("error", (True, False)), (0, (False, False)),
                       (2, (True, False)), (True, (True, True)), ("default", (False, False))):
        jitorch.set_deterministic_debug_mode(mode)
        assert (jitorch.are_deterministic_algorithms_enabled(),
                jitorch.is_deterministic_algorithms_warn_only_enabled()) == want


def test_bad_arguments_raise_pytorchs_errors():
    with pytest.raises(TypeError, match=r"argument 'mode' \(position 1\) must be bool, not int"):
        jitorch.use_deterministic_algorithms(1)
    with pytest.raises(TypeError, match="argument 'warn_only' must be bool, not int"):
        jitorch.use_deterministic_algorithms(True, warn_only=1)
    with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`, but "
                                           "got foo"):
        jitorch.set_deterministic_debug_mode("foo")
    with pytest.raises(RuntimeError, match="expected 0, 1, or 2, but got 3"):
        jitorch.set_deterministic_debug_mode(3)
    with pytest.raises(TypeError, match="debug_mode must be str or int, but got <class "
                                        "'float'>"):
        jitorch.set_deterministic_debug_mode(1.0)
    with pytest.raises(RuntimeError, match="expected a bool, but got int"):
        jitorch.utils.deterministic.fill_uninitialized_memory = 1
    assert not jitorch.are_deterministic_algorithms_enabled()


def test_pytorch_1_7_names():
    with pytest.warns(UserWarning, match="set_deterministic is deprecated"):
        jitorch.set_deterministic(True)
    with pytest.warns(UserWarning, match="is_deterministic is deprecated"):
        assert jitorch.is_deterministic() is True
    with pytest.warns(UserWarning):
        jitorch.set_deterministic(False)
    assert not jitorch.are_deterministic_algorithms_enabled()


FILLS = [(jitorch.float32, "nan"), (jitorch.float64, "nan"), (jitorch.float16, "nan"),
         (jitorch.bfloat16, "nan"), (jitorch.complex64, "nan"), (jitorch.int32, 2**31 - 1),
         (jitorch.int64, 2**63 - 1), (jitorch.uint8, 255), (jitorch.int8, 127),
         (jitorch.bool, True)]


@pytest.mark.parametrize("dtype,fill", FILLS, ids=[str(d) for d, _ in FILLS])
def test_empty_is_filled_in_deterministic_mode(dtype, fill):
    def made():
        base = jitorch.zeros(1, dtype=dtype)
        return [jitorch.empty(2, 3, dtype=dtype), jitorch.empty_like(base),
                base.new_empty((2,)), jitorch.empty_strided((2, 2), (1, 2), dtype=dtype)]

    for t in made():
        assert not t.to(jitorch.float64 if dtype != jitorch.complex64 else dtype).any()
    jitorch.use_deterministic_algorithms(True)
    for t in made():
        a = t.numpy().astype(np.complex128 if dtype == jitorch.complex64 else np.float64)
        if fill == "nan":
            assert np.isnan(a.real).all() and (a.imag == 0).all()  # NaN+0j, as PyTorch
        else:
            assert (a == fill).all()
    jitorch.utils.deterministic.fill_uninitialized_memory = False
    assert jitorch.utils.deterministic.fill_uninitialized_memory is False
    assert all(not t.to(jitorch.float64 if dtype != jitorch.complex64 else dtype).any()
               for t in made())


@pytest.mark.parametrize("dtype,fill", [(jitorch.float32, "nan"), (jitorch.int64, 2**63 - 1),
                                        (jitorch.bool, True)], ids=["float32", "int64", "bool"])
def test_compiled_empty_fills_as_eager_and_follows_the_mode(dtype, fill):
    @jitorch.jit.script
    def f(x):
        return jitorch.empty_like(x), jitorch.empty(3, dtype=x.dtype), x.new_empty((2,))

    x = jitorch.zeros(4, dtype=dtype)
    assert all(not t.to(jitorch.float64).any() for t in f(x))  # outside the mode: zeros
    jitorch.use_deterministic_algorithms(True)
    outs = f(x)
    assert not f.stats["interpreted"], f.stats
    for t in outs:
        a = t.numpy().astype(np.float64)
        assert (np.isnan(a) if fill == "nan" else a == fill).all(), (dtype, a)
    jitorch.utils.deterministic.fill_uninitialized_memory = False
    assert all(not t.to(jitorch.float64).any() for t in f(x))
    jitorch.utils.deterministic.fill_uninitialized_memory = True
    jitorch.use_deterministic_algorithms(False)
    assert all(not t.to(jitorch.float64).any() for t in f(x))


def test_blas_runs_one_thread_while_deterministic():
    rng = np.random.default_rng(0)
    a = jitorch.from_numpy(rng.standard_normal((256, 3000), dtype=np.float32))
    b = jitorch.from_numpy(rng.standard_normal((3000, 64), dtype=np.float32))
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        one = (a @ b).numpy().copy()
    with threadpoolctl.threadpool_limits(4, user_api="blas"):  # a 4-core machine's default
        jitorch.use_deterministic_algorithms(True)
        assert set(_threads.blas_threads().values()) == {1}
        got = (a @ b).numpy().copy()
        jitorch.use_deterministic_algorithms(False)
        assert set(_threads.blas_threads().values()) == {4}  # restored when turned off
    np.testing.assert_array_equal(got, one)  # OpenBLAS's sgemm bits depend on its threads


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(3000, 64)
        self.l2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.l2(jitorch.tanh(self.l1(x))).log_softmax(1)


@jitorch.jit.script
def reduce_rows(x: jitorch.Tensor) -> jitorch.Tensor:
    return (x * x).sum(1) + x.mean(0).sum()


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _train_step(model, x, target) -> str:
    for p in model.parameters():
        p.grad = None
    loss = jitorch.nn.functional.nll_loss(model(x), target)
    loss.backward()
    return _digest(loss.detach().numpy(), *[p.grad.numpy() for p in model.parameters()])


def _run_all() -> list:
    jitorch.manual_seed(0)
    model = MLP()
    scripted = jitorch.jit.script(model)
    x = jitorch.randn(256, 3000)
    target = jitorch.randint(0, 10, (256,))
    big = jitorch.randn(1000, 257, dtype=jitorch.float64)
    return [_train_step(model, x, target), _train_step(scripted, x, target),
            _digest(reduce_rows(big).numpy()), _digest(big.sum(0).numpy(), big.std(1).numpy())]


def test_bit_identical_across_thread_counts_and_repeats():
    jitorch.use_deterministic_algorithms(True)
    jitorch.set_num_threads(1)
    first = _run_all()
    jitorch.set_num_threads(2)
    second = _run_all()
    assert second == first
    assert _run_all() == first  # and again, with the programs cached


_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
import jitorch
from test_determinism import _run_all
if sys.argv[2] == "1":
    jitorch.use_deterministic_algorithms(True)
print(" ".join(_run_all()))
"""


def _subprocess(blas_threads: int, deterministic: bool) -> str:
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(blas_threads),
               PYTHONHASHSEED=str(blas_threads))  # different hash seeds: set orders differ
    r = subprocess.run([sys.executable, "-c", _SCRIPT, os.path.dirname(__file__),
                        "1" if deterministic else "0"], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.split()


def test_bit_identical_across_processes_and_blas_threads():
    # fresh processes (other addresses, hash seeds, BLAS thread counts), deterministic mode on
    assert _subprocess(1, True) == _subprocess(3, True)


_TIER_SCRIPT = """
import numpy as np, jitorch
jitorch.use_deterministic_algorithms(True)

@jitorch.jit.script
def f(x: jitorch.Tensor, w: jitorch.Tensor) -> jitorch.Tensor:
    return (x * x).sum(1) + x.mean(0).sum() + jitorch.tanh(x @ w).sum()

jitorch.manual_seed(0)
x, w = jitorch.randn(1000, 257), jitorch.randn(257, 33)
first = f(x, w).numpy().copy()
tier = jitorch.jit.stats()["functions"]["f"]["tier"]
f.wait_compiled()
print(tier, np.array_equal(first, f(x, w).numpy()))
"""


def test_no_timing_dependent_tier_in_deterministic_mode(tmp_path):
    # background compiles serve the first calls from the interpreter, whose sums may round
    # otherwise than the compiled loop's: in deterministic mode the first call compiles
    script = tmp_path / "tier.py"  # a file: scripting needs the function's source
    script.write_text(_TIER_SCRIPT)
    env = dict(os.environ, JITORCH_COMPILE="background", JITORCH_CACHE_DIR=str(tmp_path / "c"))
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["compiled", "True"]
