"""A library composite's check raises the same error eagerly, interpreted and compiled (issue 17
item 6): its checks live in its body (script subset), so a compiled program makes them too
instead of computing a wrong result, and a check of jitorch's own code raises eager's plain
message at the user's call (a user's `raise` keeps TorchScript's "Exc: " prefix)."""
from __future__ import annotations

import pytest

import jitorch
import jitorch.nn.functional as F
from jitorch.script.ir import interpreter


@jitorch.jit.script
def _ln(x, w, b):
    return F.layer_norm(x, (4,), w, b)


@jitorch.jit.script
def _ln2(x):
    return F.layer_norm(x, (3, 4))


def _eager_ln(x, w, b):
    return F.layer_norm(x, (4,), w, b)


BAD = [
    ((3, 5), (4,), (4,), "Given normalized_shape=[4], expected input with shape [*, 4], but got "
                         "input of size[3, 5]"),
    ((3, 4), (5,), (4,), "Expected weight to be of same shape as normalized_shape, but got "
                         "weight of shape [5] and normalized_shape = [4]"),
    ((3, 4), (4,), (2, 4), "Expected bias to be of same shape as normalized_shape, but got bias "
                           "of shape [2, 4] and normalized_shape = [4]"),
    ((), (4,), (4,), "Given normalized_shape=[4], expected input with shape [*, 4], but got "
                     "input of size[]"),
]


@pytest.mark.parametrize("xs, ws, bs, message", BAD)
def test_layer_norm_checks_raise_eagers_error_in_every_tier(xs, ws, bs, message):
    args = (jitorch.randn(xs), jitorch.randn(ws), jitorch.randn(bs))
    _ln(jitorch.randn(3, 4), jitorch.randn(4), jitorch.randn(4))  # the compiled program exists
    with pytest.raises(RuntimeError) as eager:
        _eager_ln(*args)
    assert str(eager.value) == message
    for tier in ("compiled", "interpreted"):
        run = _ln if tier == "compiled" else (
            lambda *a: interpreter.run_graph(_ln.graph, list(a)))
        with pytest.raises(RuntimeError) as got:
            run(*args)
        first = str(got.value).splitlines()[0]
        assert first == message, tier  # eager's message, no "RuntimeError: " prefix
        if tier == "compiled":  # located at the user's call, not in jitorch's sources
            assert "test_composite_errors.py" in str(got.value)


def test_layer_norm_over_two_dims_checks_and_stays_compiled():
    before = dict(jitorch.jit.stats().interpreted_reasons)
    y = _ln2(jitorch.randn(2, 3, 4))
    assert y.shape == (2, 3, 4)
    assert jitorch.jit.stats().interpreted_reasons == before  # the checks compile
    with pytest.raises(RuntimeError, match=r"^Given normalized_shape=\[3, 4\], expected input "
                                           r"with shape \[\*, 3, 4\], but got input of "
                                           r"size\[2, 4, 3\]"):
        _ln2(jitorch.randn(2, 4, 3))


def test_dtype_queries_fold_so_a_checked_function_compiles():
    @jitorch.jit.script
    def f(x):
        if not x.is_floating_point() or x.is_complex():
            raise TypeError("expected a real floating point tensor")
        return x * 2

    before = dict(jitorch.jit.stats().interpreted_reasons)
    assert f(jitorch.ones(3)).tolist() == [2.0, 2.0, 2.0]
    assert jitorch.jit.stats().interpreted_reasons == before
    with pytest.raises(TypeError, match="^TypeError: expected a real floating point tensor"):
        f(jitorch.arange(3))  # a user's raise: TorchScript's "Exc: message"


@jitorch.jit.script
def _rms(x, w):
    return F.rms_norm(x, (4,), w, 1e-6)


@jitorch.jit.script
def _gn(x, w, b):
    return F.group_norm(x, 2, w, b, 1e-5)


OTHER = [
    (_rms, lambda x, w: F.rms_norm(x, (4,), w, 1e-6), [(3, 5), (4,)],
     "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[3, 5]"),
    (_rms, lambda x, w: F.rms_norm(x, (4,), w, 1e-6), [(3, 4), (2,)],
     "Expected weight to be of same shape as normalized_shape, but got weight of shape [2] and "
     "normalized_shape = [4]"),
    (_gn, lambda x, w, b: F.group_norm(x, 2, w, b, 1e-5), [(2, 3, 5), (3,), (3,)],
     "Expected number of channels in input to be divisible by num_groups, but got input of "
     "shape [2, 3, 5] and num_groups=2"),
    (_gn, lambda x, w, b: F.group_norm(x, 2, w, b, 1e-5), [(2, 4, 5), (3,), (4,)],
     "Expected weight to be a vector of size equal to the number of channels in input, but got "
     "weight of shape [3] and input of shape [2, 4, 5]"),
    (_gn, lambda x, w, b: F.group_norm(x, 2, w, b, 1e-5), [(2, 4, 5), (4,), (1, 4)],
     "Expected bias to be a vector of size equal to the number of channels in input, but got "
     "bias of shape [1, 4] and input of shape [2, 4, 5]"),
    (_gn, lambda x, w, b: F.group_norm(x, 2, w, b, 1e-5), [(4,), (4,), (4,)],
     "Expected at least 2 dimensions for input tensor but received 1"),
]


@pytest.mark.parametrize("scripted, eager, shapes, message", OTHER)
def test_norm_checks_raise_eagers_error_compiled(scripted, eager, shapes, message):
    good = [jitorch.randn(2, 4, 5), jitorch.randn(4), jitorch.randn(4)][:len(shapes)] \
        if scripted is _gn else [jitorch.randn(3, 4), jitorch.randn(4)]
    before = dict(jitorch.jit.stats().interpreted_reasons)
    scripted(*good)  # compiled, checks included
    assert jitorch.jit.stats().interpreted_reasons == before
    args = [jitorch.randn(s) for s in shapes]
    with pytest.raises(RuntimeError) as e:
        eager(*args)
    assert str(e.value) == message
    with pytest.raises(RuntimeError) as s:
        scripted(*args)
    assert str(s.value).splitlines()[0] == message


@jitorch.jit.script
def _softmax_last(x):
    return F.softmax(x, -1)


@jitorch.jit.script
def _log_softmax_3(x):
    return F.log_softmax(x, 3)


def test_softmax_checks_dtype_and_dim_in_every_tier_and_compiles_otherwise():
    before = dict(jitorch.jit.stats().interpreted_reasons)
    _softmax_last(jitorch.randn(2, 3))  # the checks fold away: compiled
    assert jitorch.jit.stats().interpreted_reasons == before
    cases = [(_softmax_last, lambda x: F.softmax(x, -1), jitorch.arange(6).reshape(2, 3),
              NotImplementedError, "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
             (_log_softmax_3, lambda x: F.log_softmax(x, 3), jitorch.randn(2, 3), IndexError,
              "Dimension out of range (expected to be in range of [-2, 1], but got 3)")]
    for scripted, eager, x, exc, message in cases:
        with pytest.raises(exc) as e:
            eager(x)
        assert str(e.value) == message
        with pytest.raises(exc) as s:  # was a float result for the int input (no check)
            scripted(x)
        assert str(s.value).splitlines()[0] == message


@jitorch.jit.script
def _cos(a, b):
    return F.cosine_similarity(a, b)


def test_cosine_similarity_refuses_integer_inputs_compiled_as_eager():
    x = jitorch.arange(6).reshape(2, 3)
    message = "expected common dtype to be floating point, yet common dtype is Long"
    with pytest.raises(RuntimeError) as e:
        F.cosine_similarity(x, x)
    assert str(e.value) == message
    with pytest.raises(RuntimeError) as s:
        _cos(x, x)
    assert str(s.value).splitlines()[0] == message
