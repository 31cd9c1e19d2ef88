"""The rest of `jitorch.nn.functional`'s core: linear, dropout, one_hot and embedding.

linear and dropout are composites of registry ops (matmul + add, which eager's common call runs
as the one op `_linear_fused`; the input times a random
mask, `_dropout_mask`, drawn from the default generator's Philox stream: jitorch/_philox.py). one_hot and embedding are primitives: one_hot is an integer
op without gradient, embedding a gather of rows whose VJP scatters the gradient back and leaves
the `padding_idx` row without gradient (PyTorch's `embedding_backward`).
"""
from __future__ import annotations

import numpy as np

from typing import Optional

from .._tensor import Tensor
from . import infer
from .composite import composite, expose
from .registry import FAST_TYPES, OPS, _mode_state, _modes_on, _pt_name, defop
from .batching import LEADING, RANDOM_SAME
from .. import _dtype as dt
from .. import _autocast
from ..autograd.graph import SUM_DTYPES, plain_grad
from .linalg import _matmul

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_ONE_HOT = "the class count may come from the data (num_classes=-1): no CPU lowering yet"

__all__: list = []  # reached through jitorch.nn.functional


@composite()
def _linear():
    def body(input, weight, bias: Optional[Tensor] = None):
        out = input.matmul(weight.t())  # a 1-D weight: its t() is itself
        if bias is not None:
            out = out + bias
        return out
    return body


# Eager F.linear as one op: the composite records matmul, t and add (~5.6 us on 4x4, PyTorch
# ~3). The common eager call (float32/float64 tensors of one dtype, a 2-D weight whose columns
# match the input's last dim, a 1-D bias of its rows or none, no dispatch mode such as a tracer
# or vmap) runs `_linear_fused`: the composite's NumPy arithmetic, one autograd node. Scripted
# and traced code keep the composite; any other call (errors included) runs its body.
def _linear_fused_impl(input, weight, bias):
    out = np.matmul(input, weight.T)
    if bias is not None:
        out += bias  # out is a fresh array (a NumPy scalar never: input is at least 1-D)
    return out


def _linear_fused_vjp(g, input, weight, bias, needs_input_grad=(True, True, True)):
    if plain_grad(g) and g._data.ndim == 2 and input._data.ndim == 2:
        # a first-order backward of a 2-D input on the CPU (nothing records or watches): the
        # three ops below as their impls compute them (matmul's, sum's), without dispatch
        ga, d = g._data, g._dtype
        return (Tensor._make(_matmul(ga, weight._data), d) if needs_input_grad[0] else None,
                Tensor._make(_matmul(ga.T, input._data), d) if needs_input_grad[1] else None,
                None if bias is None or not needs_input_grad[2] else
                Tensor._make(_sum_impl()(ga, 0), d))
    # leading dims flattened (a 1-D input: one row); a 2-D input needs no reshape op
    g2 = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])
    gw = g2.t().matmul(input if input.ndim == 2 else input.reshape(-1, input.shape[-1])) \
        if needs_input_grad[1] else None
    return (g.matmul(weight) if needs_input_grad[0] else None, gw,
            None if bias is None or not needs_input_grad[2] else g2.sum(0))


def _sum_impl():
    return OPS["sum"].impl  # (read at call time: sum may be declared after this module)


def _linear_fused_jvp(t_input, t_weight, t_bias, input, weight):
    y = t_input.matmul(weight.t()) + input.matmul(t_weight.t())
    return y if t_bias is None else y + t_bias


_linear_fused = defop("_linear_fused", _linear_fused_impl, tensors=("input", "weight", "bias"),
                      vjp=_linear_fused_vjp, jvp=_linear_fused_jvp, method=False,
                      function=False, batch=LEADING,
                      interpreted="eager form of F.linear; scripted code inlines the composite")
_FUSED_DTYPES = (dt.float32, dt.float64)


@_autocast.policy("lower")
def linear(input, weight, bias=None):
    """input @ weight.T + bias."""
    if (type(input) in FAST_TYPES and type(weight) in FAST_TYPES
            and (not _modes_on[0] or not _mode_state.stack)  # (the count: no thread-local read)
            and input._dtype in _FUSED_DTYPES and weight._dtype is input._dtype):
        ws = weight._data.shape
        if len(ws) == 2 and input._data.ndim and input._data.shape[-1] == ws[1] and (
                bias is None or type(bias) in FAST_TYPES and bias._dtype is input._dtype
                and bias._data.shape == ws[:1]):
            return _linear_fused(input, weight, bias)
    if not isinstance(input, Tensor):
        raise TypeError(f"linear(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return _linear.body()(input, weight, bias)


def _dropout_mask_impl(input, p):
    """A dropout mask shaped like `input`: 1 / (1 - p) where kept, else 0 (jitorch's Philox
    stream, jitorch/_philox.py), in input's dtype (the default dtype for non-float inputs);
    made on the host and moved to input's device when it lives elsewhere."""
    from .. import _philox
    d = dt.from_numpy_dtype(input.dtype)
    out_d = d if d.category == dt.FLOAT else dt.get_default_dtype()
    mask = _philox.dropout_mask(input.shape, float(p), out_d.np)
    if type(input) is not np.ndarray:  # a device array (CuPy): the mask goes there
        from .._device.backends import cuda_backend
        return cuda_backend().from_host(mask, input.device.id)
    return mask


def _dropout_mask_infer(a):
    t = a.tensor(0)
    if t.dtype is None or t.dtype.category != dt.FLOAT:
        raise infer.Unknown("_dropout_mask of a non-float input")
    return t


# the mask of F.dropout: a random op (the IR's purity rules keep every call: ir/util.py); one
# mask per call whatever the vmap batch (randomness="same"; "error" refuses it)
_dropout_mask = defop("_dropout_mask", _dropout_mask_impl, tensors=("input",), kind="other",
                      nondiff=True, method=False, function=False, infer=_dropout_mask_infer,
                      batch=RANDOM_SAME)


@composite(static=("p", "training", "inplace"))
def _dropout(p, training, inplace):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        def identity(input):
            return input
        return identity
    if p == 1:  # every element dropped (no draw), as PyTorch
        if inplace:
            def zero_(input):
                return input.mul_(0)
            return zero_

        def zero(input):
            return input * 0
        return zero
    if inplace:
        def body_(input):
            return input.mul_(_dropout_mask(input, p))
        return body_

    def body(input):
        return input * _dropout_mask(input, p)
    return body


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1 / (1 - p); the input
    itself when not training or p == 0. The mask comes from jitorch's Philox stream of the
    default generator (jitorch/_philox.py): scripted code, compiled or interpreted, draws the
    same masks as eager code after the same `manual_seed`."""
    return _dropout.body(p, training, inplace)(input)


expose(_linear, linear)
expose(_dropout, dropout)


# --- one_hot -----------------------------------------------------------------------------------
def _one_hot(tensor, num_classes=-1):
    input = tensor
    if input.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if input.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(input.max()) + 1
    if input.size:
        if input.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if input.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    return (input[..., None] == np.arange(num_classes)).astype(np.int64)


one_hot = defop("one_hot", _one_hot, tensors=("tensor",), kind="other", nondiff=True,
                method=False, function=False,
                interpreted=_ONE_HOT,
                batch=LEADING)


# --- embedding ---------------------------------------------------------------------------------
def _embedding(input, weight, padding_idx=None):
    if input.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got "
                           f"{_pt_name(dt.from_numpy_dtype(input.dtype))} instead (while "
                           f"checking arguments for embedding)")
    n = weight.shape[0]
    if input.size and (input.min() < -n or input.max() >= n):
        raise IndexError("index out of range in self")
    if input.size and input.min() < 0:
        raise IndexError("index out of range in self")
    return weight[input]


def _embedding_grad(g, input, weight_shape, padding_idx):
    if padding_idx is None and g._dtype in SUM_DTYPES and type(input) is Tensor and \
            plain_grad(g):
        # a first-order CPU backward: the index_add below as its impl sums the rows (np.add.at,
        # in index order), on the arrays without dispatch (the indices were checked forward)
        z = np.zeros(tuple(weight_shape), g._data.dtype)
        np.add.at(z, input._data.reshape(-1), g._data.reshape(-1, weight_shape[-1]))
        return Tensor._make(z, g._dtype)
    from .scatter_ops import index_add  # noqa: F401  (declares the op)
    from .._creation import zeros
    idx = input.reshape(-1).long()
    rows = g.reshape(-1, weight_shape[-1])
    if padding_idx is not None:
        keep = (idx != _pad_index(padding_idx, weight_shape[0])).unsqueeze(-1)
        rows = rows * keep.to(rows.dtype)
    return zeros(tuple(weight_shape), dtype=g.dtype).index_add(0, idx, rows)


def _pad_index(padding_idx, n):
    return padding_idx + n if padding_idx < 0 else padding_idx


def _embedding_vjp(g, input, weight_shape, padding_idx):
    return None, _embedding_grad(g, input, weight_shape, padding_idx)


def _embedding_jvp(t_weight, input, padding_idx):
    return embedding(input, t_weight, padding_idx)


embedding = defop("embedding", _embedding, tensors=("input", "weight"), kind="index",
                  vjp=_embedding_vjp, jvp=_embedding_jvp, method=False, function=False,
                  infer=infer.embedding,
                  batch=LEADING)


# --- pad ---------------------------------------------------------------------------------------
_PAD_HELP = ("\nSupported combinations for non-constant padding:\n"
             "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
             "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
             "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def pad(input, pad, mode="constant", value=None):
    """Pad the last len(pad) // 2 dims: pad = (last_lo, last_hi, 2nd_last_lo, ...); negative
    amounts crop. Modes: constant (value, default 0), reflect, replicate, circular. Composite:
    `cat` with constant blocks, or `index_select` with indices fixed by the shapes."""
    pads = [int(p) for p in pad]
    if len(pads) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pads) // 2
    if k > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pads)} and input of dimension "
                           f"{input.ndim}")
    if mode == "constant":
        return _pad_constant(input, pads, 0.0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(f"Padding size {len(pads)} is not supported for "
                                  f"{input.ndim}D input tensor." + _PAD_HELP)
    from .._creation import tensor
    if mode != "circular":  # PyTorch's size checks (1-D: at least one output element)
        out_shape = list(input.shape)
        for i in range(k):
            out_shape[input.ndim - 1 - i] += pads[2 * i] + pads[2 * i + 1]
        if k == 1 and out_shape[-1] < 1:
            raise RuntimeError(f"input (W: {input.shape[-1]}) is too small. Calculated output "
                               f"W: {out_shape[-1]}")
        if min(out_shape) < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension "
                               f"{min(out_shape)}: {out_shape}")
    x = input
    for i in range(k):
        dim = input.ndim - 1 - i
        lo, hi = pads[2 * i], pads[2 * i + 1]
        n = input.shape[dim]
        j = np.arange(-lo, n + hi)
        if mode == "reflect":
            if lo >= n or hi >= n:
                raise RuntimeError(f"Argument #4: Padding size should be less than the "
                                   f"corresponding input dimension, but got: padding ({lo}, "
                                   f"{hi}) at dimension {dim} of input {list(input.shape)}")
            j = np.abs(j)
            j = np.where(j > n - 1, 2 * (n - 1) - j, j)
        elif mode == "replicate":
            j = np.clip(j, 0, n - 1)
        else:  # circular crops first (negative amounts), then wraps within what is left
            lo_c, hi_c = max(-lo, 0), max(-hi, 0)
            m = n - lo_c - hi_c
            lo, hi = max(lo, 0), max(hi, 0)
            if lo > m or hi > m:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            j = np.mod(np.arange(-lo, m + hi), m) + lo_c
        x = x.index_select(dim, tensor(j.astype(np.int64), device=x.device))
    return x


def _pad_constant(input, pads, value):
    from .._creation import full
    from .join import cat
    x = input
    for i in range(len(pads) // 2):
        dim = input.ndim - 1 - i
        lo, hi = pads[2 * i], pads[2 * i + 1]
        n = x.shape[dim]
        if lo < 0 or hi < 0:
            start, stop = max(-lo, 0), n - max(-hi, 0)
            if stop < start:
                raise RuntimeError(f"The input size {n}, plus negative padding {lo} and {hi} "
                                   f"resulted in a negative output size, which is invalid. Check "
                                   f"dimension {dim} of your input.")
            x = x.narrow(dim, start, stop - start)
        parts = []
        for amount in (lo, hi):
            shape = list(x.shape)
            shape[dim] = max(amount, 0)
            parts.append(full(tuple(shape), value, dtype=x.dtype, device=x.device)
                         if amount > 0 else None)
        if parts[0] is not None or parts[1] is not None:
            x = cat([p for p in (parts[0], x, parts[1]) if p is not None], dim)
    return x
