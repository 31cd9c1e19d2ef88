"""`utils.checkpoint`, the legacy tensor types, `jitorch.compile` and `__version__` (issue 19).

Checkpointing: the gradients equal the plain run's (dropout included: the recomputation draws
the same masks), under backward, `autograd.grad` and `backward(inputs=...)`, with PyTorch's
warnings and errors; and by finite differences. Legacy types, `compile` and the version follow
PyTorch's documented behaviour (constructors, isinstance, `.type()`, argument errors).
"""

import numpy as np
import pytest

import jitorch
from jitorch.utils.checkpoint import checkpoint, checkpoint_sequential


def _net():
    jitorch.manual_seed(0)
    layers = []
    for _ in range(3):
        layers += [jitorch.nn.Linear(6, 6), jitorch.nn.Tanh(), jitorch.nn.Dropout(0.3)]
    return jitorch.nn.Sequential(*layers).double()


def _grads(net, x):
    return [p.grad.clone() for p in net.parameters()] + [x.grad.clone()]


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_gradients_equal_the_plain_run_with_dropout(use_reentrant):
    net = _net()
    x = jitorch.randn(4, 6, dtype=jitorch.float64, requires_grad=True)
    jitorch.manual_seed(5)
    net(x).pow(2).sum().backward()
    want = _grads(net, x)
    net.zero_grad()
    x.grad = None
    jitorch.manual_seed(5)
    y = checkpoint_sequential(net, 3, x, use_reentrant=use_reentrant)
    y.pow(2).sum().backward()
    for g, w in zip(_grads(net, x), want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    # without the RNG state restored the recomputation draws other masks
    net.zero_grad()
    x.grad = None
    jitorch.manual_seed(5)
    y = checkpoint(net, x, use_reentrant=use_reentrant, preserve_rng_state=False)
    y.pow(2).sum().backward()
    assert not all(np.array_equal(g.numpy(), w.numpy()) for g, w in zip(_grads(net, x), want))


def test_non_reentrant_checkpoint_under_grad_and_inputs_and_without_input_grads():
    net = _net().eval()
    x = jitorch.randn(4, 6, dtype=jitorch.float64, requires_grad=True)
    params = list(net.parameters())
    want = jitorch.autograd.grad(net(x).sum(), params + [x])
    got = jitorch.autograd.grad(checkpoint(net, x, use_reentrant=False).sum(), params + [x])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)
    # backward(inputs=...) accumulates only into those
    checkpoint(net, x, use_reentrant=False).sum().backward(inputs=[params[0]])
    np.testing.assert_allclose(params[0].grad.numpy(), want[0].numpy(), rtol=1e-12)
    assert params[1].grad is None and x.grad is None
    # an input that does not require grad: the parameters still get theirs
    net.zero_grad()
    y = checkpoint(net, x.detach(), use_reentrant=False, )
    assert y.requires_grad
    y.sum().backward()
    np.testing.assert_allclose(params[2].grad.numpy(), want[2].numpy(), rtol=1e-12)
    # the forward runs under no_grad, the recomputation with grad
    for reentrant in (True, False):
        seen = []

        def fn(a):
            seen.append(jitorch.is_grad_enabled())
            return a * 2

        checkpoint(fn, x, use_reentrant=reentrant).sum().backward()
        assert seen == [False, True]
    # keyword arguments reach the function
    z = checkpoint(lambda a, scale: a * scale, x, use_reentrant=False, scale=3.0)
    np.testing.assert_array_equal(z.detach().numpy(), (x * 3.0).detach().numpy())


def test_checkpoint_warnings_and_errors_are_pytorchs():
    net = _net().eval()
    x = jitorch.randn(2, 6, dtype=jitorch.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="torch.utils.checkpoint: the use_reentrant parameter "
                                         "should be passed explicitly"):
        y = checkpoint(net, x)
    with pytest.raises(RuntimeError, match=r"When use_reentrant=True, torch.utils.checkpoint is "
                                           r"incompatible with .grad\(\)"):
        jitorch.autograd.grad(y.sum(), [x])
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = checkpoint(net, x.detach(), use_reentrant=True)
    assert not y.requires_grad
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda a, scale: a, x, use_reentrant=True, scale=2)
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant parameter"):
        checkpoint_sequential(net, 2, x)


def test_checkpoint_gradient_by_finite_differences():
    w = jitorch.randn(3, 3, dtype=jitorch.float64)

    def f(a, b):
        return checkpoint(lambda u, v: (u @ w).tanh() * v, a, b, use_reentrant=False)

    a = jitorch.randn(2, 3, dtype=jitorch.float64, requires_grad=True)
    b = jitorch.randn(2, 3, dtype=jitorch.float64, requires_grad=True)
    assert jitorch.autograd.gradcheck(f, (a, b))


# --- legacy tensor types -------------------------------------------------------------------
def test_legacy_types_construct_as_pytorchs():
    t = jitorch.FloatTensor(2, 3)
    assert t.shape == (2, 3) and t.dtype == jitorch.float32
    assert jitorch.FloatTensor().shape == (0,)
    assert jitorch.LongTensor([1, 2]).tolist() == [1, 2]
    assert jitorch.LongTensor([1, 2]).dtype == jitorch.int64
    assert jitorch.FloatTensor(jitorch.Size([4])).shape == (4,)
    assert jitorch.DoubleTensor(np.array([1.5])).dtype == jitorch.float64
    dtypes = {"HalfTensor": "float16", "BFloat16Tensor": "bfloat16", "IntTensor": "int32",
              "ShortTensor": "int16", "CharTensor": "int8", "ByteTensor": "uint8",
              "BoolTensor": "bool"}
    for name, d in dtypes.items():
        assert getattr(jitorch, name)([1]).dtype == getattr(jitorch, d)
    a = jitorch.ones(2)
    b = jitorch.FloatTensor(a)  # an alias
    b[0] = 5
    assert a[0].item() == 5
    with pytest.raises(TypeError, match=r"new\(\): data must be a sequence \(got float\)"):
        jitorch.FloatTensor(2.5)
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu but "
                                           "device type: meta was passed"):
        jitorch.FloatTensor(2, device="meta")


def test_legacy_types_isinstance_and_type_strings():
    x = jitorch.ones(2)
    assert isinstance(x, jitorch.FloatTensor) and not isinstance(x, jitorch.DoubleTensor)
    assert isinstance(jitorch.nn.Parameter(x), jitorch.FloatTensor)
    assert not isinstance(x, jitorch.cuda.FloatTensor) and not isinstance(3, jitorch.FloatTensor)
    assert not issubclass(jitorch.FloatTensor, jitorch.Tensor)  # as PyTorch's
    assert jitorch.FloatTensor.dtype == jitorch.float32 and jitorch.cuda.LongTensor.is_cuda
    assert not hasattr(jitorch, "ComplexFloatTensor")  # PyTorch has only the name
    assert jitorch.ones(1, dtype=jitorch.complex64).type() == "jitorch.ComplexFloatTensor"
    assert jitorch.nn.Linear(2, 2).type(jitorch.DoubleTensor).weight.dtype == jitorch.float64
    assert x.type() == "jitorch.FloatTensor"
    assert x.type(jitorch.DoubleTensor).dtype == jitorch.float64
    assert x.type("torch.LongTensor").dtype == jitorch.int64
    assert x.type("jitorch.IntTensor").dtype == jitorch.int32
    assert x.type(jitorch.int16).dtype == jitorch.int16
    with pytest.raises(ValueError, match="invalid type: 'torch.Foo'"):
        x.type("torch.Foo")
    with pytest.raises(TypeError, match="dtype must be a type, str, or dtype object"):
        x.type(3)


def test_set_default_tensor_type():
    try:
        with pytest.warns(UserWarning, match=r"set_default_tensor_type\(\) is deprecated"):
            jitorch.set_default_tensor_type(jitorch.DoubleTensor)
        assert jitorch.ones(1).dtype == jitorch.float64
        with pytest.warns(UserWarning):
            jitorch.set_default_tensor_type("torch.FloatTensor")
        assert jitorch.ones(1).dtype == jitorch.float32
        with pytest.warns(UserWarning), pytest.raises(
                TypeError, match="only floating-point types are supported as the default type"):
            jitorch.set_default_tensor_type(jitorch.LongTensor)
    finally:
        jitorch.set_default_dtype(jitorch.float32)


# --- compile and __version__ -----------------------------------------------------------------
def test_compile_functions_as_decorator_with_and_without_arguments():
    @jitorch.compile
    def f(x, y):
        return jitorch.sin(x) * y + 1

    @jitorch.compile(mode="reduce-overhead", dynamic=True, fullgraph=True)
    def g(x):
        try:  # no try in scripted code: traced with the first call's inputs
            return (x * 2).relu().sum(-1)
        except ValueError:
            return x

    x, y = jitorch.randn(4, 3), jitorch.randn(4, 3)
    np.testing.assert_allclose(f(x, y).numpy(), (jitorch.sin(x) * y + 1).numpy(), rtol=1e-6)
    np.testing.assert_allclose(g(x).numpy(), (x * 2).relu().sum(-1).numpy(), rtol=1e-6)
    assert f.__name__ == "f" and f._jitorch_compiler.scripted
    assert g._jitorch_compiler.traces and not g._jitorch_compiler.scripted


def test_compile_falls_back_to_eager_with_the_reason_unless_fullgraph():
    def h(x, scale=2.0):
        try:
            return float(x.sum()) * scale
        except ValueError:
            return 0.0

    x = jitorch.ones(3)
    c = jitorch.compile(h)
    with pytest.warns(UserWarning, match=r"jitorch.compile: .*h runs eagerly: scripting failed: "
                                         r"ScriptError: try blocks are not supported"):
        assert c(x) == 6.0
    assert c(x, scale=3.0) == 9.0
    with pytest.raises(RuntimeError, match=r"fullgraph=True\): cannot compile .*h: scripting "
                                           r"failed"):
        jitorch.compile(h, fullgraph=True)(x)


def test_compiled_module_keeps_the_originals_state():
    jitorch.manual_seed(0)
    m = jitorch.nn.Sequential(jitorch.nn.Linear(3, 4), jitorch.nn.Dropout(0.5),
                              jitorch.nn.Linear(4, 2))
    cm = jitorch.compile(m)
    assert type(cm).__name__ == "OptimizedModule" and cm._orig_mod is m
    assert list(cm.state_dict()) == ["_orig_mod." + k for k in m.state_dict()]
    assert [id(p) for p in cm.parameters()] == [id(p) for p in m.parameters()]
    x = jitorch.randn(5, 3)
    cm.eval()
    assert not m.training and not m[1].training
    np.testing.assert_allclose(cm(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    cm.train()
    assert m.training
    cm(x).sum().backward()
    assert m[0].weight.grad is not None and m[0].weight.grad.abs().sum().item() > 0
    assert jitorch.compile(m, backend="eager")(x).shape == (5, 2)


def test_compile_argument_errors_are_pytorchs():
    m = jitorch.nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast, should be one of: default, "
                                           "reduce-overhead, max-autotune"):
        jitorch.compile(m, mode="fast")
    with pytest.raises(RuntimeError, match="Either mode or options can be specified, but both "
                                           "can't be specified at the same time."):
        jitorch.compile(m, mode="default", options={})
    with pytest.raises(RuntimeError, match="Invalid backend: 'nope'"):
        jitorch.compile(m, backend="nope")


def test_version_takes_the_modern_paths_of_version_checks():
    from packaging.version import parse
    v = jitorch.__version__
    assert isinstance(v, str) and v == "2.13.0+jitorch.0.1.0"
    assert v >= "1.12" and v >= (2, 0) and v > "2.13.0" and v < "2.14" and v > "2.13.0a0"
    assert not v < "2.13" and v != "2.13.0"  # a local label sorts after the release, as PEP 440
    assert parse(v) >= parse("2.0") and parse(v).release == (2, 13, 0)
    assert [int(p) for p in v.split(".")[:2]] == [2, 13]
    assert jitorch.version.jitorch == "0.1.0"
