"""`jitorch.testing.assert_close` and `make_tensor`: PyTorch's pairing rules, default
tolerances by dtype, NaN handling and message format (the expected texts are PyTorch 2.13's,
with jitorch's dtype and Size names)."""
import math

import numpy as np
import pytest

import jitorch
from jitorch.testing import assert_close, make_tensor

T = jitorch.tensor


def _msg(fn):
    with pytest.raises(AssertionError) as e:
        fn()
    return str(e.value)


def test_close_tensors_pass_with_dtype_tolerances():
    assert_close(T([1.0, 2.0]), T([1.0, 2.0 + 2e-6]))  # float32: atol 1e-5
    assert_close(T([1.0], dtype=jitorch.float16), T([1.0009765625], dtype=jitorch.float16))
    assert_close(1.0, 1.0 + 1e-9)
    assert_close([T([1.0]), {"a": T([2])}], [T([1.0]), {"a": T([2])}])
    assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    assert_close(None, None)
    assert_close(T([math.inf, -math.inf]), T([math.inf, -math.inf]))


def test_tensor_mismatch_message_is_pytorchs():
    assert _msg(lambda: assert_close(T([1.0, 2.0, 3.0]), T([1.0, 2.5, 3.1]))) == (
        "Tensor-likes are not close!\n\n"
        "Mismatched elements: 2 / 3 (66.7%)\n"
        "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 "
        "allowed)")
    assert _msg(lambda: assert_close(T([[1.0, 2.0], [3, 4]]), T([[1.0, 2.0], [3, 5]]))) == (
        "Tensor-likes are not close!\n\n"
        "Mismatched elements: 1 / 4 (25.0%)\n"
        "Greatest absolute difference: 1.0 at index (1, 1) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.20000000298023224 at index (1, 1) (up to 1.3e-06 "
        "allowed)")


def test_integer_tensors_compare_exactly():
    assert _msg(lambda: assert_close(T([1, 2]), T([1, 3]))) == (
        "Tensor-likes are not equal!\n\n"
        "Mismatched elements: 1 / 2 (50.0%)\n"
        "Greatest absolute difference: 1 at index (1,)\n"
        "Greatest relative difference: 0.3333333432674408 at index (1,)")


def test_scalars_and_zero_dim_tensors():
    assert _msg(lambda: assert_close(1.0, 1.1)) == (
        "Scalars are not close!\n\nExpected 1.1 but got 1.0.\n"
        "Absolute difference: 0.10000000000000009 (up to 1e-07 allowed)\n"
        "Relative difference: 0.09090909090909098 (up to 1e-07 allowed)")
    assert _msg(lambda: assert_close(T(1.0), T(1.5))).startswith(
        "Scalars are not close!\n\nExpected 1.5 but got 1.0.\nAbsolute difference: 0.5 (up to "
        "1e-05 allowed)")
    assert _msg(lambda: assert_close(1, 2)).startswith("Scalars are not equal!")
    assert _msg(lambda: assert_close(1, 1.0)) == (
        "The (d)types do not match: <class 'int'> != <class 'float'>.")
    assert _msg(lambda: assert_close(True, False)) == "Booleans mismatch: True is not False"
    assert _msg(lambda: assert_close(None, 1)) == "None mismatch: None is not 1"


def test_attributes_dtype_and_shape():
    assert _msg(lambda: assert_close(T([1.0]), T([1.0], dtype=jitorch.float64))) == (
        "The values for attribute 'dtype' do not match: jitorch.float32 != jitorch.float64.")
    assert_close(T([1.0, 2.0]), T([1.0, 2.0], dtype=jitorch.float64), check_dtype=False)
    assert_close(T([1, 2], dtype=jitorch.int32), T([1.0, 2.0]), check_dtype=False)
    # mixed dtypes compare with the looser dtype's tolerances (float16: rtol 1e-3)
    assert "(up to 0.001 allowed)" in _msg(lambda: assert_close(
        T([1.0], dtype=jitorch.float16), T([1.5]), check_dtype=False))
    assert _msg(lambda: assert_close(T([[1.0, 2.0]]), T([1.0, 2.0]))) == (
        "The values for attribute 'shape' do not match: jitorch.Size([1, 2]) != "
        "jitorch.Size([2]).")


def test_nan_needs_equal_nan():
    a = T([1.0, math.nan])
    assert "Greatest absolute difference: nan at index (1,)" in _msg(
        lambda: assert_close(a, a.clone()))
    assert_close(a, a.clone(), equal_nan=True)


def test_containers_name_the_failing_item():
    assert _msg(lambda: assert_close({"a": T([1.0])}, {"a": T([1.2])})).endswith(
        "The failure occurred for item ['a']")
    assert _msg(lambda: assert_close([T([1.0]), T([2.0])], [T([1.0]), T([2.1])])).endswith(
        "The failure occurred for item [1]")
    assert _msg(lambda: assert_close([1, 2], [1, 2, 3])) == (
        "The length of the sequences mismatch: 2 != 3")
    assert _msg(lambda: assert_close({"a": 1}, {"b": 1})) == (
        "The keys of the mappings do not match:\nMissing keys in the actual mapping: ['b']\n"
        "Additional keys in the actual mapping: ['a']")


def test_explicit_tolerances_and_messages():
    assert_close(T([1.0]), T([1.05]), rtol=0.0, atol=0.1)
    with pytest.raises(ValueError, match="must be either specified or omitted, but got no atol"):
        assert_close(T([1.0]), T([1.0]), rtol=1e-3)
    assert _msg(lambda: assert_close(T([1.0]), T([2.0]), msg="custom")) == "custom"
    assert _msg(lambda: assert_close(T([1.0]), T([2.0]), msg=lambda m: "X" + m)).startswith(
        "XTensor-likes are not close!")


def test_unpairable_inputs_raise_type_error():
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs"):
        assert_close(T([1.0]), 1.0)
    with pytest.raises(TypeError, match="No comparison pair"):
        assert_close("a", "a")


def test_make_tensor():
    jitorch.manual_seed(0)
    x = make_tensor(3, 4, dtype=jitorch.float32, low=-1, high=2)
    assert x.shape == (3, 4) and x.dtype is jitorch.float32
    assert float(x.min()) >= -1 and float(x.max()) < 2
    i = make_tensor((50,), dtype=jitorch.int64, low=0, high=3)
    assert set(i.tolist()) <= {0, 1, 2}
    b = make_tensor((5,), dtype=jitorch.bool, device="cpu")
    assert b.dtype is jitorch.bool
    z = make_tensor((20,), dtype=jitorch.int32, exclude_zero=True)
    assert 0 not in z.tolist()
    g = make_tensor(2, dtype=jitorch.float64, requires_grad=True)
    assert g.requires_grad
    c = make_tensor(2, dtype=jitorch.complex64)
    assert c.dtype is jitorch.complex64
    with pytest.raises(ValueError, match="must be less than or equal"):
        make_tensor(2, dtype=jitorch.float32, low=2, high=1)
