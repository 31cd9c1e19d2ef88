"""Regenerates tests/data/rnn_packed_refs.npz from PyTorch (a developer tool, not a test: needs
torch installed).

    /work/torchvenv/bin/python tests/gen_rnn_packed_refs.py

For each case of CASES (a recurrent layer run on a PackedSequence of unsorted lengths), the
parameters, input and initial states come from the deterministic `_inputs` formula (NumPy, so
the test rebuilds them); the file records PyTorch's packed output, final states, padded output
and the gradients of a fixed loss with respect to the input, the initial state and the
first-layer weights.
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data", "rnn_packed_refs.npz")

# name: (mode, num_layers, bidirectional, batch_first, proj_size, lengths, with_hx)
CASES = {
    "lstm_2l_bi": ("LSTM", 2, True, False, 0, [3, 5, 1, 4], True),
    "lstm_proj_bf": ("LSTM", 1, True, True, 2, [2, 4, 4], False),
    "gru_2l_bi": ("GRU", 2, True, True, 0, [1, 3, 2], True),
    "rnn_relu_1l": ("RNN_RELU", 1, False, False, 0, [2, 5, 3], True),
}
INPUT, HIDDEN = 3, 4


def _inputs(case, param_shapes):
    """(parameters in order, padded input, h0, c0, loss weights) for one case, float64."""
    mode, layers, bi, batch_first, proj, lengths, _ = case
    rng = np.random.RandomState(sum(map(ord, mode)) + 7 * layers + len(lengths))
    params = [rng.uniform(-0.6, 0.6, s) for s in param_shapes]
    T, B = max(lengths), len(lengths)
    x = rng.standard_normal((B, T, INPUT) if batch_first else (T, B, INPUT))
    d = 2 if bi else 1
    h0 = rng.standard_normal((layers * d, B, proj or HIDDEN)) * 0.5
    c0 = rng.standard_normal((layers * d, B, HIDDEN)) * 0.5
    return params, x, h0, c0, rng


def run_case(lib, name):
    """Run case `name` with `lib` (torch here, jitorch in the test): the arrays the reference
    file records for it (keyed without the case prefix), the packed input and the output."""
    mode, layers, bi, batch_first, proj, lengths, with_hx = CASES[name]
    nn = lib.nn
    kw = dict(num_layers=layers, bidirectional=bi, batch_first=batch_first, dtype=lib.float64)
    if mode == "LSTM":
        m = nn.LSTM(INPUT, HIDDEN, proj_size=proj, **kw)
    elif mode == "GRU":
        m = nn.GRU(INPUT, HIDDEN, **kw)
    else:
        m = nn.RNN(INPUT, HIDDEN, nonlinearity="relu", **kw)
    params, x, h0, c0, _ = _inputs(CASES[name], [tuple(p.shape) for p in m.parameters()])
    with lib.no_grad():
        for p, v in zip(m.parameters(), params):
            p.copy_(lib.from_numpy(v))
    x = lib.from_numpy(x).requires_grad_()
    h0 = lib.from_numpy(h0).requires_grad_()
    c0 = lib.from_numpy(c0)
    packed = nn.utils.rnn.pack_padded_sequence(x, lib.tensor(lengths), batch_first=batch_first,
                                               enforce_sorted=False)
    hx = ((h0, c0) if mode == "LSTM" else h0) if with_hx else None
    y, state = m(packed, hx)
    h_n = state[0] if mode == "LSTM" else state
    padded, lens = nn.utils.rnn.pad_packed_sequence(y, batch_first=batch_first)
    wy = lib.from_numpy(np.cos(np.arange(padded.numel())).reshape(padded.shape))
    wh = lib.from_numpy(np.sin(np.arange(h_n.numel())).reshape(h_n.shape))
    loss = (padded * wy).sum() + (h_n * wh).sum()
    if mode == "LSTM":
        loss = loss + state[1].sum()
    loss.backward()
    out = {"data": y.data.detach().numpy(), "batch_sizes": y.batch_sizes.numpy(),
           "h_n": h_n.detach().numpy()}
    if mode == "LSTM":
        out["c_n"] = state[1].detach().numpy()
    out.update(padded=padded.detach().numpy(), lengths=lens.numpy(),
               loss=np.array(loss.item()), grad_x=x.grad.numpy())
    if with_hx:
        out["grad_h0"] = h0.grad.numpy()
    out["grad_w_ih_l0"] = m.weight_ih_l0.grad.numpy()
    return out, packed, y


def main():
    import torch
    out = {}
    for name in CASES:
        arrays, _, _ = run_case(torch, name)
        out.update({f"{name}/{key}": value for key, value in arrays.items()})
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT} ({len(out)} arrays)")


if __name__ == "__main__":
    main()
