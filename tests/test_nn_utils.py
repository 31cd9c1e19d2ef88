"""jitorch.nn.utils: clip_grad_norm_/clip_grad_value_, parameters_to_vector/vector_to_parameters,
rnn.pad_sequence (expected values and messages produced by PyTorch 2.13)."""
import re

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
from jitorch.nn import utils as U
from jitorch.nn.utils.rnn import pad_sequence


def raises(exc, msg):
    return pytest.raises(exc, match="^" + re.escape(msg) + "$")


def params_with_grads():
    p = nn.Parameter(jitorch.ones(2))
    p.grad = jitorch.tensor([3.0, -4.0])
    q = nn.Parameter(jitorch.ones(1))
    q.grad = jitorch.tensor([12.0])
    return p, q


def test_clip_grad_norm():
    p, q = params_with_grads()
    r = nn.Parameter(jitorch.ones(1))  # no grad: skipped
    total = U.clip_grad_norm_([p, q, r], 1.0)
    assert total.item() == 13.0 and total.shape == ()
    assert np.allclose(p.grad.tolist(), [3 / 13, -4 / 13], atol=1e-6)
    assert np.allclose(q.grad.tolist(), [12 / 13], atol=1e-6)
    p, q = params_with_grads()
    assert U.clip_grad_norm_([p, q], 100.0, norm_type="inf").item() == 12.0
    assert p.grad.tolist() == [3.0, -4.0]  # never scaled up
    assert U.clip_grad_norm_([p, q], 1.0, norm_type=float("inf")).item() == 12.0
    assert np.allclose(p.grad.tolist(), [0.25, -1 / 3], atol=1e-6)
    p, q = params_with_grads()
    total = U.clip_grad_norm_((x for x in [p, q]), 2.0, norm_type=1, foreach=True)
    assert total.item() == 19.0
    assert np.allclose(p.grad.tolist(), [6 / 19, -8 / 19], atol=1e-6)
    assert U.clip_grad_norm_([], 1.0).item() == 0.0
    with pytest.warns(UserWarning, match=re.escape(
            "`parameters` is an empty generator, no gradient clipping will occur.")):
        U.clip_grad_norm_((x for x in []), 1.0)
    p.grad = jitorch.tensor([float("nan"), 1.0])
    with raises(RuntimeError, "The total norm of order 2.0 for gradients from `parameters` is "
                              "non-finite, so it cannot be clipped. To disable this error and "
                              "scale the gradients by the non-finite norm anyway, set "
                              "`error_if_nonfinite=False`"):
        U.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    assert np.isnan(U.clip_grad_norm_(p, 1.0).item())
    assert U.get_total_norm([jitorch.tensor([3.0, 4.0]), jitorch.tensor([12.0])]).item() == 13.0
    with pytest.warns(FutureWarning):
        p, q = params_with_grads()
        assert U.clip_grad_norm([p, q], 1.0).item() == 13.0


def test_clip_grad_norm_on_model():
    jitorch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 1))
    (m(jitorch.randn(8, 4)) * 100).sum().backward()
    grads = np.concatenate([p.grad.numpy().ravel() for p in m.parameters()])
    total = U.clip_grad_norm_(m.parameters(), 0.5)
    assert np.isclose(total.item(), np.linalg.norm(grads), rtol=1e-5)
    after = np.concatenate([p.grad.numpy().ravel() for p in m.parameters()])
    assert np.isclose(np.linalg.norm(after), 0.5, rtol=1e-4)
    assert not total.requires_grad


def test_clip_grad_value():
    p, q = params_with_grads()
    r = nn.Parameter(jitorch.ones(1))
    assert U.clip_grad_value_([p, q, r], 3.5) is None
    assert p.grad.tolist() == [3.0, -3.5] and q.grad.tolist() == [3.5]
    assert U.clip_grad_value_(p, 1, foreach=False) is None
    assert p.grad.tolist() == [1.0, -1.0]


def test_parameters_vector_round_trip():
    a = nn.Parameter(jitorch.arange(6.0).reshape(2, 3))
    b = nn.Parameter(jitorch.tensor([7.0]))
    v = U.parameters_to_vector([a, b])
    assert v.tolist() == [0, 1, 2, 3, 4, 5, 7] and v.requires_grad
    U.vector_to_parameters(v.detach() * 2, [a, b])
    assert a.tolist() == [[0, 2, 4], [6, 8, 10]] and b.tolist() == [14]
    assert isinstance(a, nn.Parameter) and a.requires_grad and a.shape == (2, 3)
    with raises(TypeError, "expected torch.Tensor, but got: list"):
        U.vector_to_parameters([1], [a])
    m = nn.Linear(3, 2)
    v = U.parameters_to_vector(m.parameters())
    assert v.shape == (8,)
    U.vector_to_parameters(jitorch.zeros(8), m.parameters())
    assert m.weight.abs().sum().item() == 0 and m.bias.abs().sum().item() == 0


def test_pad_sequence():
    x = jitorch.tensor([1.0, 2, 3])
    y = jitorch.tensor([4.0, 5])
    assert pad_sequence([x, y]).tolist() == [[1, 4], [2, 5], [3, 0]]
    assert pad_sequence([x, y], batch_first=True, padding_value=-1,
                        padding_side="left").tolist() == [[1, 2, 3], [-1, 4, 5]]
    assert pad_sequence([jitorch.ones(2, 3), jitorch.ones(1, 3)], True).shape == (2, 2, 3)
    out = pad_sequence([x.long(), y])
    assert out.dtype is jitorch.int64 and out.tolist() == [[1, 4], [2, 5], [3, 0]]
    assert pad_sequence([x, y.long()]).dtype is jitorch.float32
    assert pad_sequence(jitorch.ones(2, 3, 4)).shape == (3, 2, 4)
    assert pad_sequence((x, y)).shape == (3, 2)
    # trailing dims broadcast to the first sequence's, like PyTorch's copy into the output
    assert pad_sequence([jitorch.ones(2, 3), jitorch.ones(2, 1)]).shape == (2, 2, 3)
    with raises(RuntimeError, "received an empty list of sequences"):
        pad_sequence([])
    with raises(RuntimeError, "Expected padding_side to be one of left or right, but got "
                              "middle."):
        pad_sequence([x, y], False, 0.0, "middle")
    with raises(RuntimeError, "The size of tensor a (2) must match the size of tensor b (3) at "
                              "non-singleton dimension 1"):
        pad_sequence([x, jitorch.ones(2, 3)])
    with raises(RuntimeError, "The size of tensor a (3) must match the size of tensor b (4) at "
                              "non-singleton dimension 1"):
        pad_sequence([jitorch.ones(2, 3), jitorch.ones(2, 4)])
    with raises(RuntimeError, "ArrayRef: invalid slice, N = 1; size = 0"):
        pad_sequence([jitorch.tensor(1.0)])
    xs = jitorch.tensor([1.0, 2, 3], requires_grad=True)
    pad_sequence([xs, xs[:1]]).sum().backward()
    assert xs.grad.tolist() == [2, 1, 1]


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2, bias=False)
        self.b = nn.Linear(2, 2, bias=False)
        self.b.weight = self.a.weight
        self.register_buffer("buf", jitorch.zeros(2))

    def forward(self, x):
        self.buf.add_(1)
        return self.a(x) + self.b(x) + self.buf


def test_functional_call():
    from jitorch.nn.utils.stateless import functional_call_dicts as fc
    m = Tied()
    x = jitorch.ones(1, 2)
    w = jitorch.ones(2, 2, requires_grad=True)
    out = fc(m, {"a.weight": w}, (x,))
    assert out.tolist() == [[5.0, 5.0]]  # tied: b.weight is w too; buf became 1
    out.sum().backward()
    assert w.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]] and m.a.weight.grad is None
    assert (fc(m, {"a.weight": w}, x, tie_weights=False) - m.b(x)).tolist() == [[4.0, 4.0]]
    with raises(ValueError, "functional_call got multiple values for keys ['a.weight', "
                            "'b.weight'], which are tied. Consider using tie_weights=False"):
        fc(m, {"a.weight": w, "b.weight": jitorch.zeros(2, 2)}, (x,))
    assert fc(m, {"a.weight": w, "b.weight": w}, (x,)).tolist() == [[7.0, 7.0]]
    with raises(RuntimeError, "Error(s) in reparametrizing for Tied:\n\tMissing key(s): 'buf'."):
        fc(m, {"a.weight": w}, (x,), strict=True)
    with raises(RuntimeError, "Error(s) in reparametrizing for Tied:\n\tUnexpected key(s): "
                              "'zz'."):
        fc(m, {"a.weight": w, "b.weight": w, "buf": jitorch.zeros(2), "zz": jitorch.zeros(1)},
           (x,), strict=True)
    d = {"buf": jitorch.zeros(2)}
    fc(m, d, (x,))
    assert d["buf"].tolist() == [1.0, 1.0] and m.buf.tolist() == [3.0, 3.0]
    with raises(ValueError, "['buf'] appeared in multiple dictionaries; behavior of functional "
                            "call is ambiguous"):
        fc(m, [{"buf": jitorch.zeros(2)}, {"buf": jitorch.ones(2)}], (x,))
    with raises(ValueError, "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple "
                            "of dicts, but got <class 'int'>"):
        fc(m, 3, (x,))
    with raises(ValueError, "Expected all elements of parameter_and_buffer_dicts to be "
                            "dictionaries"):
        fc(m, [3], (x,))
    out = fc(m, ({"a.weight": w}, {"buf": jitorch.zeros(2)}), kwargs={"x": x})
    assert out.tolist() == [[5.0, 5.0]]
    assert type(m.a.weight) is nn.Parameter and m.a.weight is m.b.weight  # restored
    with raises(TypeError, "3 is not an instance of torch.Tensor"):
        fc(m, {"a.weight": 3}, (x,))
    with raises(AttributeError, "Linear has no attribute `nope`"):
        fc(m, {"a.nope.weight": w}, (x,))
    assert m.a.weight is m.b.weight and isinstance(m.a.weight, nn.Parameter)
    with pytest.warns(FutureWarning, match="functional_call` is deprecated"):
        out = U.stateless.functional_call(m, {"a.weight": w}, (x,))
    assert out.tolist() == [[8.0, 8.0]]
