"""nn.utils.rnn packing (issue 19): PackedSequence, pack_padded_sequence, pad_packed_sequence,
pack_sequence, unpad_sequence, unpack_sequence with PyTorch's values and errors; RNN, LSTM and
GRU on packed input (several layers, both directions, projections, given or default states)
against PyTorch's outputs, final states and gradients (tests/data/rnn_packed_refs.npz, made by
tests/gen_rnn_packed_refs.py), and gradients by finite differences."""
import os

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
from jitorch.autograd import gradcheck
from jitorch.nn.utils.rnn import (PackedSequence, invert_permutation, pack_padded_sequence,
                                  pack_sequence, pad_packed_sequence, pad_sequence,
                                  unpack_sequence, unpad_sequence)

from gen_rnn_packed_refs import CASES, run_case

REFS = np.load(os.path.join(os.path.dirname(__file__), "data", "rnn_packed_refs.npz"))


def _padded():
    return jitorch.arange(12.0).view(3, 2, 2)  # (T=3, B=2, 2)


def test_pack_and_pad_round_trip_with_pytorch_values():
    p = pack_padded_sequence(_padded(), [2, 3], enforce_sorted=False)
    assert isinstance(p, PackedSequence) and isinstance(p, tuple)
    assert p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    # PyTorch 2.13's values
    assert p.data.tolist() == [[2, 3], [0, 1], [6, 7], [4, 5], [10, 11]]
    assert p.batch_sizes.tolist() == [2, 2, 1] and p.batch_sizes.dtype is jitorch.int64
    assert p.sorted_indices.tolist() == [1, 0] and p.unsorted_indices.tolist() == [1, 0]
    padded, lengths = pad_packed_sequence(p, batch_first=True, padding_value=-1,
                                          total_length=4)
    assert padded.tolist() == [[[0, 1], [4, 5], [-1, -1], [-1, -1]],
                               [[2, 3], [6, 7], [10, 11], [-1, -1]]]
    assert lengths.tolist() == [2, 3]
    sorted_p = pack_padded_sequence(_padded(), jitorch.tensor([3, 2]))
    assert sorted_p.sorted_indices is None and sorted_p.unsorted_indices is None
    assert sorted_p.batch_sizes.tolist() == [2, 2, 1]
    back, lens = pad_packed_sequence(sorted_p)
    np.testing.assert_array_equal(back.numpy()[:, 0], _padded().numpy()[:, 0])
    assert back[2, 1].tolist() == [0, 0] and lens.tolist() == [3, 2]
    bf = pack_padded_sequence(_padded().transpose(0, 1), [3, 2], batch_first=True)
    assert bf.data.tolist() == sorted_p.data.tolist()


def test_sequence_lists_and_conversions():
    seqs = [jitorch.tensor([1, 2, 3]), jitorch.tensor([4, 5]), jitorch.tensor([6])]
    p = pack_sequence(seqs)
    assert p.data.tolist() == [1, 4, 6, 2, 5, 3] and p.batch_sizes.tolist() == [3, 2, 1]
    assert [s.tolist() for s in unpack_sequence(p)] == [[1, 2, 3], [4, 5], [6]]
    q = pack_sequence([seqs[1], seqs[0], seqs[2]], enforce_sorted=False)
    assert [s.tolist() for s in unpack_sequence(q)] == [[4, 5], [1, 2, 3], [6]]
    padded = pad_sequence(seqs)
    assert [s.tolist() for s in unpad_sequence(padded, jitorch.tensor([3, 2, 1]))] == \
        [[1, 2, 3], [4, 5], [6]]
    assert padded.shape == (3, 3)  # not transposed in place
    d = q.double()
    assert d.data.dtype is jitorch.float64 and d.batch_sizes is q.batch_sizes
    assert d.to(jitorch.float64) is d and not d.is_cuda
    assert invert_permutation(jitorch.tensor([2, 0, 1])).tolist() == [1, 2, 0]
    again = PackedSequence(q.data, q.batch_sizes, q.sorted_indices)
    assert again.unsorted_indices.tolist() == q.unsorted_indices.tolist()


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: pack_padded_sequence(_padded(), [2, 3]), RuntimeError,
     "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can "
     "pass `enforce_sorted=False`"),
    (lambda: pack_sequence([jitorch.ones(1), jitorch.ones(2)]), RuntimeError,
     "must be sorted in decreasing order"),
    (lambda: pack_padded_sequence(_padded(), [3, 2, 1]), RuntimeError,
     r"Expected `len\(lengths\)` to be equal to batch_size, but got 3 \(batch_size=2\)"),
    (lambda: pack_padded_sequence(_padded(), [3, 0]), RuntimeError,
     "Length of all samples has to be greater than 0, but found an element in 'lengths' that "
     "is <= 0"),
    (lambda: pack_padded_sequence(_padded(), jitorch.tensor([[3, 2]])), RuntimeError,
     "'lengths' argument should be a 1D CPU int64 tensor, but got 2D cpu Long tensor"),
    (lambda: pad_packed_sequence(pack_padded_sequence(_padded(), [3, 2]), total_length=2),
     ValueError, "Expected total_length to be at least the length of the longest sequence in "
     "input, but got total_length=2 and max sequence length being 3"),
    (lambda: nn.LSTM(2, 3)(pack_padded_sequence(_padded(), [3, 2]),
                           (jitorch.zeros(1, 3, 3), jitorch.zeros(1, 3, 3))), RuntimeError,
     r"Expected hidden\[0\] size \(1, 2, 3\), got \[1, 3, 3\]"),
    (lambda: jitorch.jit.script(nn.GRU(2, 3))(pack_padded_sequence(_padded(), [3, 2])),
     NotImplementedError, "scripted GRU: PackedSequence input is not supported"),
])
def test_errors_as_pytorch(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


# values to 1e-10 and gradients to 1e-9 (relative); sizes and lengths exactly
_TOLERANCES = {"batch_sizes": None, "lengths": None, "loss": dict(rtol=1e-10, atol=0),
               "grad_x": dict(rtol=1e-9, atol=1e-12), "grad_h0": dict(rtol=1e-9, atol=1e-12),
               "grad_w_ih_l0": dict(rtol=1e-9, atol=1e-12)}


@pytest.mark.parametrize("name", list(CASES))
def test_recurrent_layers_on_packed_input_match_pytorch(name):
    got, packed, y = run_case(jitorch, name)
    assert isinstance(y, PackedSequence)
    assert y.sorted_indices is packed.sorted_indices
    ref = {k.split("/")[1]: REFS[k] for k in REFS.files if k.startswith(name + "/")}
    assert sorted(got) == sorted(ref)
    for key, value in got.items():
        tol = _TOLERANCES.get(key, dict(rtol=1e-10, atol=1e-12))
        if tol is None:
            np.testing.assert_array_equal(value, ref[key], err_msg=key)
        else:
            np.testing.assert_allclose(value, ref[key], err_msg=key, **tol)


def test_packed_states_are_each_sequence_run_alone():
    """A packed batch gives each sequence what running it alone (unpadded) gives."""
    jitorch.manual_seed(0)
    m = nn.GRU(2, 3, num_layers=2, bidirectional=True, dtype=jitorch.float64)
    seqs = [jitorch.randn(n, 2, dtype=jitorch.float64) for n in (2, 4, 3)]
    y, h = m(pack_sequence(seqs, enforce_sorted=False))
    for b, (s, out) in enumerate(zip(seqs, unpack_sequence(y))):
        y1, h1 = m(s.unsqueeze(1))
        np.testing.assert_allclose(out.detach().numpy(), y1[:, 0].detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(h[:, b].detach().numpy(), h1[:, 0].detach().numpy(),
                                   rtol=1e-12)


def test_packed_gradients_by_finite_differences():
    jitorch.manual_seed(0)
    m = nn.LSTM(2, 2, num_layers=2, bidirectional=True, dtype=jitorch.float64)
    x = jitorch.randn(3, 3, 2, dtype=jitorch.float64, requires_grad=True)

    def f(x):
        y, (h, c) = m(pack_padded_sequence(x, [2, 3, 1], enforce_sorted=False))
        return pad_packed_sequence(y)[0].sum(-1), h, c
    assert gradcheck(f, (x,))
