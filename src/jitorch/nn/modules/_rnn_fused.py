"""Fused whole-sequence forward and backward of `nn.RNN` / `nn.LSTM` / `nn.GRU`, as PyTorch's
fused CPU implementation runs them. The njit loops themselves are in _rnn_loops.py.

Owns `run(m, input, states)`: an eager call's `(output, h_n[, c_n])` computed as one autograd
node (`_Seq`), and `supported(m, dtype)`, whether it serves a call now (the configuration, and
`ready`: the loops are loaded from disk once per mode and dtype and process, after jitorch's
compile worker process compiled them into Numba's disk cache unless they are there already or
`JITORCH_COMPILE=sync`; the caller runs the scripted composite meanwhile). Per layer and direction:

- forward: GRU and RNN: the input projection of every time step is one matmul before the loop
  (`x @ W_ih^T`; the biases are added in the loop); then one njit loop (`_gru_fwd`,
  `_rnn_fwd`) does per step one gate matmul `h @ W_hh^T` and the gate nonlinearities in one
  pass, writing `h` into the preallocated output sequence (one array with h_0: `hs`) and the
  activated gates into preallocated saved buffers: nothing allocated per step. The LSTM's loop
  (`_lstm_fwd`) makes each step's gate inputs in one matmul, `[x_t, h_{t-1}, 1] @ [W_ih, W_hh,
  b_ih + b_hh]^T`, from one array `xh` of those rows (x, the ones and h_0 copied in by the
  loop, each step's h written into the next step's row): its gates are computed from cache, and
  the rows are what the weight gradients need. The loop copies the weights into that operand
  itself, transposed (from `_PACK_ROWS` batch rows up in contiguous column panels, `_panels`),
  and writes each step's product into the saved gate buffer, activated there in place;
- backward: one njit loop in reverse (`_gru_bwd`, `_rnn_bwd`) computes the gate gradients of
  every step into a `[T, B, G]` buffer and carries `dh` through `dG @ W_hh`; the weight
  gradients are then one matmul each over the whole sequence (`dG^T @ h_prev`, h_prev a slice
  of `hs`; `dG^T @ x`), the biases one sum, the input gradient one matmul (`dG @ W_ih`). The
  LSTM's loop (`_lstm_bwd`) writes the gate gradients of `_BLOCK_ROWS` batch rows of steps at
  a time into a ring buffer and, after each block, while it is in cache, accumulates all three
  weight gradients in one product (`dG_blk^T @ xh_blk`, xh the forward's `[x, h_prev, 1]`
  rows) and writes the block's input gradient (`dG_blk @ W_ih`): dG (3.3 MB at T=50, B=64,
  H=64) is never written out to memory and read back.

A PackedSequence input (`run(..., batch_sizes)`) runs in the same padded (T, B, F) layout: its
rows are scattered into a zeroed buffer (step t's are batch rows 0 .. batch_sizes[t] - 1: the
sequences sorted by decreasing length) and every loop is handed `bs`, how many rows run at each
step (B at every step for a padded batch). The per-step matmuls and gate passes take the
running rows only; the others carry their states through the step (out[t] holds them), so h_n
is out[last] as in the padded case: each sequence's state at its own length going forward, h0
kept until its last step going backward (`_rnn_loops.py`). Their gate gradients are zero, so
the whole-sequence weight and input gradient products need no change. The output and input
gradient are gathered back into packed order; the caller (`RNNBase._forward_packed`) permutes
the states in and out for unsorted batches, as for the eager packed loop.

The large arrays (projections, gates, states, outputs, gradients) come from a per-thread pool
(`_empty`) and are handed out again once nothing references them: the tape goes with the saved
tensors, so the engine's release after backward frees its arrays for the next call. What
only one njit loop call or one matmul uses (the LSTM's packed weight operands, its dW product
before the gradients are copied out of it) is one per-thread scratch array per shape
(`_scratch`), refilled by every call.

The math is the eager loop's (`rnn._recur`): gates i, f, g, o (LSTM), r, z, n with
`n = tanh(i_n + r * (W_hn h + b_hn))` (GRU). Layers, directions and batch_first are arranged in
numpy around the loops. Not served here (the caller runs the scripted composite instead):
projections (`proj_size`), dropout between layers in training mode (the random stream is the
eager `F.dropout`'s), dtypes other than float32/float64 (the caller's `_eligible`). Under
`create_graph=True` the backward runs the eager loop again on the saved inputs and
differentiates that tape (as a compiled program's node does); saved inputs changed in place
raise eager's error.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from ..._tensor import Tensor
from ... import autograd as _autograd
from ...autograd import grad_mode
from ...autograd.function import Function
from ...script.targets.cpu import blas
from . import _rnn_loops
from ._rnn_loops import _gru_bwd, _gru_fwd, _lstm_bwd, _lstm_fwd, _mm, _rnn_bwd, _rnn_fwd
from ...script.runtime.worker_loops import WorkerLoops


# --- large arrays: reused rather than fresh pages -------------------------------------------
# malloc maps a multi-megabyte array afresh and unmaps it when it is freed, so every call pays
# one page fault per 4 KiB it writes: 0.67 ms per 3.2 MB measured (2-core Sapphire Rapids), a
# third of an LSTM step at batch 64. Each thread keeps the large arrays it made (up to
# _POOL_BYTES) and hands one out again once nothing else references it: no view, no tensor, no
# autograd tape (a saved tape is dropped when its node is released after backward).
_POOL = threading.local()
_POOL_MIN = 1 << 18  # smaller arrays come from malloc's free lists, without faults
_POOL_BYTES = 64 << 20


def _refs(pool: list, i: int) -> int:
    return sys.getrefcount(pool[i].base)


def _line_view(nbytes: int) -> np.ndarray:
    """A uint8 array of `nbytes` starting on a 64-byte cache line: a view of a fresh buffer
    (its `base`, which every array made from the view references)."""
    buf = np.empty(nbytes + 64, np.uint8)
    s = -buf.ctypes.data % 64
    return buf[s:s + nbytes]


_FREE_REFS = _refs([_line_view(0)], 0)  # the count of a buffer that only the pool holds


def _empty(shape: tuple, dtype) -> np.ndarray:
    """np.empty(shape, dtype), from this thread's pool where large; pooled arrays start on a
    64-byte cache line (`_aligned`: the LSTM's gates are its matmul's output)."""
    dtype = np.dtype(dtype)
    n = dtype.itemsize
    for k in shape:
        n *= k
    if n < _POOL_MIN:
        return np.empty(shape, dtype)
    pool = getattr(_POOL, "arrays", None)
    if pool is None:
        pool = _POOL.arrays = []
    for i in range(len(pool)):  # (at most twice the size: a small request keeps no big array)
        if n <= pool[i].size <= 2 * n and _refs(pool, i) == _FREE_REFS:
            return pool[i][:n].view(dtype).reshape(shape)
    a = _line_view(n)
    pool.append(a)
    total = sum(b.size for b in pool)
    while total > _POOL_BYTES:  # forget the oldest (one still in use lives on with its users)
        total -= pool.pop(0).size
    return a.view(dtype).reshape(shape)


def _contiguous(a: np.ndarray) -> np.ndarray:
    if a.flags.c_contiguous:
        return a
    c = _empty(a.shape, a.dtype)
    np.copyto(c, a)
    return c


# --- one layer and direction in numpy ------------------------------------------------------
# The weight operand of a per-step matmul in column panels as wide as blas.py's register tile
# (`_panels`), each contiguous, where the batch has at least _PACK_ROWS rows. The kernel reads
# B in place: a row-major (K, 4H) W^T puts each k row of a tile's columns 16 H bytes apart, so
# at 4H = 256 the rows of a panel share a few L1 sets and a row tile (six rows of the batch)
# may find the panel evicted; a contiguous (K, 64) panel stays in L1 across them. Measured one
# thread, (B, 97) @ (97, 256) per step (an LSTM step, input 32, hidden 64), W^T at an
# arbitrary offset: B=64 24.4 -> 20.1 us, B=48 17.7 -> 15.2, B=128 51 -> 44; on 64-byte lines
# (`_aligned`, as the loop gets it) B=64 19.0 -> 18.4 us; B=8 2.9 -> 3.4 and B=32 10 -> 11
# (one kernel call per panel instead of one: below this size they cost more than they save).
_PACK_ROWS = 48


def _panels(K: int, N: int, rows: int, dtype) -> np.ndarray:
    """The (panels, K, width) buffer `_lstm_fwd` packs the (K, N) weight operand into:
    contiguous column panels of the kernel's tile width (the last zero-padded) for `rows`-row
    products, else one panel (1, K, N)."""
    width = blas.VMAX * blas.VBITS // (8 * np.dtype(dtype).itemsize)
    if rows < _PACK_ROWS or N <= width:
        return _scratch((1, K, N), dtype)
    return _scratch((-(-N // width), K, width), dtype)


# The LSTM backward's block of steps (`_lstm_bwd`): about this many batch rows of gate
# gradients (1 KiB each at hidden 64) are consumed by the weight and input gradients while
# they are in cache. A forward+backward step at T=50, B=64, H=64, one thread (2-core AMD
# EPYC, loaded), best of 10: 8.98 ms against 9.27 with one block at the end; 128-512 rows
# alike (9.0-9.2).
_BLOCK_ROWS = 256

_SCRATCH_KEEP = 8  # shapes per thread (a model's layers and directions share a few)


def _scratch(shape: tuple, dtype) -> np.ndarray:
    """An `_aligned` array that only one njit loop call reads and writes (the weight operands
    the loops are handed: refilled by every call, referenced by nothing after it): this
    thread's one of that shape, reused. A fresh 64-100 KiB buffer a call cost 15-17 us in an
    LSTM step at batch 8 (cold malloc memory), against 2-5 us alone."""
    d = getattr(_POOL, "scratch", None)
    if d is None:
        d = _POOL.scratch = {}
    key = (shape, np.dtype(dtype))
    a = d.get(key)
    if a is None:
        if len(d) >= _SCRATCH_KEEP:
            d.clear()
        a = d[key] = _aligned(shape, dtype)
    return a


def _aligned(shape: tuple, dtype) -> np.ndarray:
    """np.empty(shape, dtype) starting on a 64-byte cache line: the
    weight operands of the per-step matmuls and their outputs. The kernel's B-row and C-tile
    vectors then never straddle two lines: (64, 97) @ (97, 256) per step measured 21.0 us
    aligned, 22.7-25.8 us at offsets of 16-48 bytes (unpacked; 20.4-22.1 in panels);
    (64, 256) @ (256, 64) (the LSTM's dh) 12.5 against 13.1-13.5."""
    dtype = np.dtype(dtype)
    n = dtype.itemsize
    for k in shape:
        n *= k
    return _line_view(n).view(dtype).reshape(shape)


def _cell_fwd(mode, x, h0, c0, w, rev, bs):
    """x (T, B, I) -> (out (T, B, H), h_n, c_n, saved); `bs[t]` rows run at step t (the
    loops' `bs`: the other rows carry their states)."""
    w_ih, w_hh = w[0], w[1]
    b_ih, b_hh = (w[2], w[3]) if len(w) > 2 else (None, None)
    T, B, _ = x.shape
    H = w_hh.shape[1]
    G = w_ih.shape[0]
    if b_ih is None:
        b_ih = b_hh = np.zeros(G, x.dtype)
    last = 0 if rev else T - 1
    if mode == "LSTM":  # [x_t, h_{t-1}, 1] @ [W_ih, W_hh, b]^T, one matmul (see the module doc)
        I = x.shape[2]
        xh = _empty((T, B, I + H + 1), x.dtype)
        out, acts, cs, tcs = _empty((T, B, H), x.dtype), _empty((T, B, G), x.dtype), \
            _empty((T, B, H), x.dtype), _empty((T, B, H), x.dtype)
        _lstm_fwd(x, h0, xh, w_ih, w_hh, b_ih, b_hh, _panels(I + H + 1, G, B, x.dtype), c0, rev,
                  bs, out, acts, cs, tcs)
        return out, out[last], cs[last], (xh, acts, cs, tcs)
    wihT, whhT = np.ascontiguousarray(w_ih.T), np.ascontiguousarray(w_hh.T)
    # h_0 and the outputs in one array, in the order of time the loop runs: the state each
    # step starts from (`hprev`) is then one contiguous slice, dW_hh one matmul
    hs = _empty((T + 1, B, H), x.dtype)
    hs[T if rev else 0] = h0
    out, hprev = (hs[:T], hs[1:]) if rev else (hs[1:], hs[:T])
    gi = _empty((T, B, G), x.dtype)  # every step's projection, one matmul
    _mm(x.reshape(T * B, -1), wihT, gi.reshape(T * B, -1), False)
    if mode == "GRU":
        acts = _empty((T, B, 4 * H), x.dtype)
        _gru_fwd(gi, whhT, b_ih, b_hh, h0, rev, bs, out, acts)
        return out, out[last], None, (hprev, acts)
    _rnn_fwd(gi, whhT, b_ih + b_hh, h0, rev, mode == "RNN_RELU", bs, out)
    return out, out[last], None, (hprev,)


def _cell_bwd(mode, x, h0, c0, w, rev, bs, out, saved, dout, dhn, dcn, need_dx=True):
    """-> (dx (None unless need_dx), dh0, dc0, [dW_ih, dW_hh(, db_ih, db_hh)]): weight
    gradients one matmul each (the LSTM's one for all)."""
    w_ih, w_hh = w[0], w[1]
    T, B, _ = x.shape
    H = w_hh.shape[1]
    hprev, saved = saved[0], saved[1:]
    dc0 = None
    if mode == "LSTM":  # hprev: the forward's [x_t, h_{t-1}, 1] rows
        I, G = x.shape[2], saved[0].shape[2]
        tb = max(1, min(T, _BLOCK_ROWS // max(B, 1)))
        dG = _empty((tb, B, G), x.dtype)
        whh = _scratch(w_hh.shape, w_hh.dtype)
        np.copyto(whh, w_hh)
        # every weight gradient in one product: dG^T @ [x, h_prev, 1] = [dW_ih, dW_hh, db],
        # accumulated block by block in the loop (into this thread's scratch array: only the
        # copies below leave this function)
        dW = _scratch((G, I + H + 1), x.dtype)
        dx = _empty(x.shape, x.dtype) if need_dx else np.empty((0, I), x.dtype)
        dh0, dc0 = _lstm_bwd(dout, dhn, dcn, *saved, c0, whh, rev, bs, hprev, w_ih, dG, dW,
                             dx.reshape(-1, I))
        grads = [np.ascontiguousarray(dW[:, :I]), np.ascontiguousarray(dW[:, I:I + H])]
        if len(w) > 2:
            db = np.ascontiguousarray(dW[:, I + H])
            grads += [db, db.copy()]
        return (dx if need_dx else None), dh0, dc0, grads
    if mode == "GRU":
        dG, dGh = _empty((T, B, 3 * w_hh.shape[1]), x.dtype), \
            _empty((T, B, 3 * w_hh.shape[1]), x.dtype)
        dh0 = _gru_bwd(dout, dhn, saved[0], out, h0, w_hh, rev, bs, dG, dGh)
    else:
        dG = _empty(out.shape, x.dtype)
        dh0 = _rnn_bwd(dout, dhn, out, w_hh, rev, mode == "RNN_RELU", bs, dG)
        dGh = dG
    dG2, dGh2 = dG.reshape(T * B, -1), dGh.reshape(T * B, -1)
    grads = [dG2.T @ x.reshape(T * B, -1), dGh2.T @ hprev.reshape(T * B, H)]
    if len(w) > 2:
        ones = np.ones(T * B, x.dtype)  # (a gemv: faster than sum(0))
        db = ones @ dG2
        grads += [db, ones @ dGh2 if dGh is not dG else db.copy()]
    return _dx(dG2, w_ih, x, need_dx), dh0, dc0, grads


def _dx(dG2, w_ih, x, need):
    """The input gradient dG @ W_ih (one matmul over the whole sequence), None unless `need`."""
    if not need:
        return None
    dx = _empty(x.shape, x.dtype)
    np.matmul(dG2, w_ih, out=dx.reshape(dG2.shape[0], -1))
    return dx


# --- readiness: the loops compile (or load from disk) once per mode and dtype -------------------
_LOOPS = {"LSTM": (_lstm_fwd, _lstm_bwd), "GRU": (_gru_fwd, _gru_bwd)}


def _dispatchers(key: tuple) -> tuple:
    return (_mm,) + _LOOPS.get(key[0], (_rnn_fwd, _rnn_bwd))


def _warm(key: tuple) -> None:
    """Compile (or load) the loops of (mode, dtype name): one tiny forward and backward."""
    mode, dtype = key[0], np.dtype(key[1])
    T, B, H, G = 2, 1, 2, {"LSTM": 4, "GRU": 3}.get(mode, 1) * 2
    x, h0 = np.zeros((T, B, 1), dtype), np.zeros((B, H), dtype)
    w = [np.zeros((G, 1), dtype), np.zeros((G, H), dtype), np.zeros(G, dtype),
         np.zeros(G, dtype)]
    bs = np.full(T, B, np.int64)
    out, _, _, saved = _cell_fwd(mode, x, h0, h0, w, False, bs)
    _cell_bwd(mode, x, h0, h0, w, False, bs, out, saved, np.zeros_like(out), h0, h0)


def _sources() -> list:
    """The modules the loops' machine code comes from (their markers' key)."""
    from ...script.targets.cpu import fastmath
    return [__name__, _rnn_loops.__name__, blas.__name__, fastmath.__name__]


# ("LSTM", "float32") -> loaded in this process, or compiled by the compile worker meanwhile
# (script/runtime/worker_loops.py; `jit.stats()["fused_loops"]`)
LOOPS = WorkerLoops("rnn-fused", __name__, _dispatchers, _warm, _sources)
compile_in_worker = LOOPS.compile_in_worker  # (the compile worker's "call" job)


def ready(mode: str, dtype) -> bool:
    """Whether the loops of `mode` for `dtype` can run now: loaded, or loaded or compiled in
    the call where the disk cache has them or under `JITORCH_COMPILE=sync`; else compiled in
    jitorch's compile worker process while the caller runs the scripted composite (never a
    stall: script/runtime/worker_loops.py)."""
    return LOOPS.ready((mode, dtype.name))


# --- the whole layer stack as one autograd node ----------------------------------------------
def supported(m, dtype) -> bool:
    """Whether `run` serves layer `m` on `dtype` data now (see the module doc)."""
    return m.proj_size == 0 and not (m.training and m.dropout > 0 and m.num_layers > 1) and \
        ready(m.mode, dtype)


def _packed_rows(sizes: list) -> tuple:
    """(bs, rows) of a PackedSequence's batch sizes: `bs` the loops' per-step row counts, `rows`
    each packed row's row in the flattened (T * B) padded layout (step t's rows are the
    batch's rows 0 .. sizes[t] - 1: the sequences sorted by decreasing length)."""
    bs = np.array(sizes, np.int64)
    T, B = len(sizes), sizes[0]
    starts = np.cumsum(bs) - bs
    rows = np.arange(int(bs.sum()), dtype=np.int64) + np.repeat(np.arange(T) * B - starts, bs)
    return bs, rows


def _scatter(data: np.ndarray, rows: np.ndarray, T: int, B: int) -> np.ndarray:
    """Packed rows (N, F) -> (T, B, F), the rows of steps not running zero."""
    out = _empty((T, B, data.shape[1]), data.dtype)
    out.fill(0)
    out.reshape(T * B, -1)[rows] = data
    return out


class _Seq(Function):
    @staticmethod
    def forward(ctx, m, lstm, sizes, x, h0, c0, *weights):
        """`sizes`: None (x a batch, batch-first as `m`), or a PackedSequence's batch sizes (x
        its data, states in the sorted order): run in the padded layout, the loops' `bs`."""
        ws = [np.ascontiguousarray(w._data) for w in weights]
        nd = 2 if m.bidirectional else 1
        per = len(ws) // (m.num_layers * nd)
        h0a = np.ascontiguousarray(h0._data)
        c0a = np.ascontiguousarray(c0._data) if lstm else None
        if sizes is None:
            xs = x._data.transpose(1, 0, 2) if m.batch_first else x._data
            layer_in = _contiguous(xs)
            T, B = layer_in.shape[:2]
            bs, rows = np.full(T, B, np.int64), None
        else:
            T, B = len(sizes), sizes[0]
            bs, rows = _packed_rows(sizes)
            layer_in = _scatter(x._data, rows, T, B)
        hn, cn, tape = [], [], []
        for layer in range(m.num_layers):
            outs = []
            for d in range(nd):
                k = layer * nd + d
                w = ws[k * per:(k + 1) * per]
                ck = c0a[k] if lstm else None
                out, h_last, c_last, saved = _cell_fwd(m.mode, layer_in, h0a[k], ck, w, d == 1,
                                                       bs)
                tape.append((layer_in, h0a[k], ck, w, d == 1, out, saved))
                outs.append(out)
                hn.append(h_last)
                cn.append(c_last)
            if nd == 1:
                layer_in = outs[0]
            else:
                layer_in = _empty(outs[0].shape[:2] + (nd * m.hidden_size,), h0a.dtype)
                np.concatenate(outs, 2, out=layer_in)
        if rows is not None:  # the running rows, in packed order
            y = layer_in.reshape(T * B, -1)[rows]
        else:
            y = layer_in.transpose(1, 0, 2) if m.batch_first else layer_in
        ctx.m, ctx.lstm, ctx.per, ctx.sizes, ctx.bs, ctx.rows = m, lstm, per, sizes, bs, rows
        # eager's checks (in-place changes, freed); the tape goes with the saved tensors, so
        # that releasing the node after backward gives its arrays back to the pool
        ctx.save_for_backward(x, h0, c0, *weights, tape)
        res = [Tensor._make(_contiguous(y)), Tensor._make(_stack(hn))]
        if lstm:
            res.append(Tensor._make(_stack(cn)))
        return tuple(res)

    @staticmethod
    def backward(ctx, dy, dhn, dcn=None):
        saved = ctx.saved_tensors
        if grad_mode.is_grad_enabled():  # create_graph=True: differentiable grads
            return _eager_backward(ctx.m, ctx.sizes, saved[:-1], (dy, dhn, dcn))
        m, lstm, tape = ctx.m, ctx.lstm, saved[-1]
        nd = 2 if m.bidirectional else 1
        H = m.hidden_size
        rows, bs = ctx.rows, ctx.bs
        T, B = len(bs), int(bs[0])
        if rows is not None:
            d_in = _scatter(dy._data, rows, T, B)
        else:
            d_in = _contiguous(dy._data.transpose(1, 0, 2) if m.batch_first else dy._data)
        dhna, dcna = dhn._data, dcn._data if lstm else None
        dh0, dc0 = np.empty_like(dhna), np.empty_like(dhna) if lstm else None
        wgrads = [None] * (len(tape) * ctx.per)
        for layer in reversed(range(m.num_layers)):
            dx = None
            for d in range(nd):
                k = layer * nd + d
                x, h0, c0, w, rev, out, saved = tape[k]
                dout = _contiguous(d_in[:, :, d * H:(d + 1) * H])
                dck = np.ascontiguousarray(dcna[k]) if lstm else None
                # the first layer's input gradient only where the input needs one
                g_x, g_h0, g_c0, gw = _cell_bwd(m.mode, x, h0, c0, w, rev, bs, out, saved,
                                                dout, np.ascontiguousarray(dhna[k]), dck,
                                                layer > 0 or ctx.needs_input_grad[3])
                dx = g_x if dx is None else np.add(dx, g_x, out=dx)  # (dx: this call's)
                dh0[k] = g_h0
                if lstm:
                    dc0[k] = g_c0
                wgrads[k * ctx.per:k * ctx.per + len(gw)] = gw
            d_in = dx
        if d_in is None:
            dxa = None
        elif rows is not None:
            dxa = d_in.reshape(T * B, -1)[rows]
        else:
            dxa = _contiguous(d_in.transpose(1, 0, 2) if m.batch_first else d_in)
        res = [None, None, None, None if dxa is None else Tensor._make(dxa),
               Tensor._make(dh0),
               Tensor._make(dc0) if lstm else None]
        return tuple(res + [Tensor._make(g) for g in wgrads])


def _stack(arrays: list) -> np.ndarray:
    """np.stack(arrays): one array copied directly (a third of np.stack's time)."""
    return arrays[0][None].copy() if len(arrays) == 1 else np.stack(arrays, 0)


def _eager_backward(m, sizes, saved, grads) -> tuple:
    """The grads of `_Seq.apply`'s arguments as differentiable tensors (create_graph=True): the
    layer's eager loop run again on the saved inputs, and its tape differentiated."""
    x, h0, c0 = saved[:3]
    lstm = c0 is not None
    if sizes is None:
        out, h_n, c_n = m._run(m._time_major(x), h0, c0)
        out = m._time_major(out)
    else:
        out, h_n, c_n = m._run(x, h0, c0, sizes)
    outs = [out, h_n] + ([c_n] if lstm else [])
    args = [x, h0, c0, *saved[3:]]
    wrt = [a for a in args if isinstance(a, Tensor) and a.requires_grad]
    got = iter(_autograd.grad(outs, wrt, list(grads[:len(outs)]), create_graph=True,
                              allow_unused=True))
    res = [next(got) if isinstance(a, Tensor) and a.requires_grad else None for a in args]
    return (None, None, None, *res)


def run(m, input: Tensor, states: tuple, params: list, batch_sizes=None) -> tuple:
    """`(output, h_n[, c_n])` of layer `m` on batched `input`, its checked states and its
    parameters (`m._flat_weights`, as the caller read them); with `batch_sizes` (a list of
    ints), `input` is a PackedSequence's data and the states are in its sorted order: the
    output is packed rows, the states each sequence's at its own length (counted in
    `jit.stats()["fused_layers"]` as "nn.<Layer>[packed]")."""
    from ...script.runtime import stats
    stats.record_fused_layer(f"nn.{type(m).__name__}" +
                             ("" if batch_sizes is None else "[packed]"))
    lstm = m.mode == "LSTM"
    c0 = states[1] if lstm else None
    return _Seq.apply(m, lstm, batch_sizes, input, states[0], c0, *params)
