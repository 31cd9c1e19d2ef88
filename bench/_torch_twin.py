"""A jitorch module's PyTorch twin for the eager benchmarks (rnn_eager.py, transformer_eager.py,
eager_programs.py): the same initial weights, and a check that its step gives jitorch's output
and gradients, so that the timed steps compute the same thing."""
from __future__ import annotations

import numpy as np


def copy_weights(torch, src, dst) -> None:
    """`src`'s (jitorch) parameters into `dst` (PyTorch), in parameter order, names and shapes
    checked."""
    with torch.no_grad():
        for (n1, p), (n2, q) in zip(src.named_parameters(), dst.named_parameters()):
            assert n1 == n2 and tuple(p.shape) == tuple(q.shape), (n1, n2)
            q.copy_(torch.from_numpy(p.detach().numpy().copy()))


def check_step(tstep, tx, tm, out, grads, rtol: float, atol: float) -> None:
    """Run PyTorch's step once: its output equals jitorch's `out`, and the gradients of its
    input `tx` and of `tm`'s parameters equal jitorch's `grads` (in that order)."""
    np.testing.assert_allclose(tstep().detach().numpy(), out, rtol=rtol, atol=atol)
    tg = [tx.grad.numpy()] + [p.grad.numpy() for p in tm.parameters()]
    for a, b in zip(grads, tg):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3 * float(np.abs(b).max()))
