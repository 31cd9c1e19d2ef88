"""Casts and copies: to()/float()/..., clone, contiguous, copy_, fill_, zero_."""
import numpy as np
import pytest

import jitorch as torch


def test_to_dtype_and_shortcuts():
    x = torch.tensor([1.7, -2.2])
    assert x.to(torch.int32).dtype is torch.int32
    np.testing.assert_array_equal(x.long().numpy(), [1, -2])  # truncation like PyTorch
    assert x.double().dtype is torch.float64 and x.half().dtype is torch.float16
    assert x.bfloat16().dtype is torch.bfloat16 and x.bool().dtype is torch.bool
    assert x.to(x) is x and x.to(torch.float32) is x
    assert x.to("cpu") is x
    assert x.type() == "jitorch.FloatTensor"


def test_cast_is_differentiable():
    x = torch.tensor([1.5, 2.5], requires_grad=True)
    y = x.double() * 2
    y.sum().backward()
    assert x.grad.dtype is torch.float32
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_clone_copies_and_contiguous():
    x = torch.zeros(2, 3)
    c = x.clone()
    c.fill_(1)
    assert x.sum().item() == 0
    t = x.transpose(0, 1)
    assert not t.is_contiguous()
    tc = t.contiguous()
    assert tc.is_contiguous() and tc.shape == (3, 2)
    assert x.contiguous() is not None and np.shares_memory(x.contiguous().numpy(), x.numpy())


def test_copy_broadcasts_and_casts():
    x = torch.zeros(2, 3, dtype=torch.int64)
    x.copy_(torch.tensor([1.9, 2.1, -3.5]))
    np.testing.assert_array_equal(x.numpy(), [[1, 2, -3], [1, 2, -3]])
    with pytest.raises(RuntimeError):
        torch.zeros(2).copy_(torch.zeros(3))


def test_copy_is_differentiable_into_a_buffer():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    buf = torch.zeros(2)
    buf.copy_(w * 3)
    assert buf.requires_grad and buf.grad_fn is not None
    (buf * buf).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [18.0, 36.0])


def test_fill_and_zero():
    x = torch.ones(3)
    assert x.zero_() is x and x.sum().item() == 0
    x.fill_(2.5)
    np.testing.assert_allclose(x.numpy(), [2.5] * 3)
    with pytest.raises(RuntimeError, match="0-dimension"):
        x.fill_(torch.ones(2))


def test_device_argument():
    assert torch.zeros(2, device="cpu").device == torch.device("cpu")
    with pytest.raises(NotImplementedError, match="cuda"):
        torch.zeros(2, device="cuda")
