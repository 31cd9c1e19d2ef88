"""The njit loops of the fused `nn.RNN` / `nn.LSTM` / `nn.GRU` (one layer, one direction), with
the small-matrix product they call per step (`_mm`) and their gate nonlinearities.

Owns the machine code of nn/modules/_rnn_fused.py, which arranges layers, directions, buffers
and autograd around these loops (its module doc says what each computes). Kept apart from it
because every loop is compiled into Numba's disk cache and the fused module's `_marker` hashes
this file's source: a change here must invalidate the markers, one there need not.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from ...script.kernels.cache_guards import guard_dispatcher
from ...script.targets.cpu.blas import mm_into_by_symbol as mm_into
# (the in-place intrinsics: no Numba function of their own to compile, fastmath.IN_PLACE)
from ...script.targets.cpu.fastmath import sigmoid_f32_ir as sigmoid_f32, tanh_f32_ir as tanh_f32

# IEEE-safe flags (fastmath.py's functions need them) and the numpy error model (vectorised
# divisions)
_JIT = dict(nogil=True, cache=True, fastmath={"reassoc", "contract"}, error_model="numpy")


def _sig(x):
    raise NotImplementedError("only callable from njit code")


def _tanh(x):
    raise NotImplementedError("only callable from njit code")


@overload(_sig, jit_options=_JIT)
def _sig_ov(x):  # float32: fastmath.py's vectorisable form; float64: libm
    if x == types.float32:
        return lambda x: sigmoid_f32(x)
    return lambda x: 1.0 / (1.0 + np.exp(-x))


@overload(_tanh, jit_options=_JIT)
def _tanh_ov(x):
    if x == types.float32:
        return lambda x: tanh_f32(x)
    return lambda x: np.tanh(x)


def _one(x):
    raise NotImplementedError("only callable from njit code")


@overload(_one, jit_options=_JIT)
def _one_ov(x):  # 1 in the array's dtype: float32 arithmetic stays float32 (vectorised)
    if x.dtype == types.float32:
        return lambda x: np.float32(1.0)
    return lambda x: 1.0


@njit(**_JIT)
def _mm(a, b, c, accumulate):
    """c (+)= a @ b in blocks of 32 rows: blas.py's register-tiled kernel serves up to 48 rows
    (BLAS above); 64 rows as two blocks of 32 measured 15.9 vs 18.3 us ((64, 64) @ (64, 256))
    and 13.9 vs 20.1 us ((64, 256) @ (256, 64)), one thread."""
    M = a.shape[0]
    if M <= 48:
        mm_into(a, b, c, accumulate)
        return
    for r in range(0, M, 32):
        mm_into(a[r:r + 32], b, c[r:r + 32], accumulate)


@njit(**_JIT)
def _carry(h, out, n):
    """Rows n.. of a step not running (see `bs` below): out = h, their state carried."""
    for b in range(n, h.shape[0]):
        hb, ob = h[b], out[b]
        for j in range(hb.shape[0]):
            ob[j] = hb[j]


@njit(**_JIT)
def _idle(dG, n):
    """Rows n.. of a step not running, backward: no gate gradients."""
    for b in range(n, dG.shape[0]):
        d = dG[b]
        for j in range(d.shape[0]):
            d[j] = 0


@njit(**_JIT)
def _pass(dG, dout, dh, n):
    """`_idle`, and their dh passes through (plus the step's output gradient: out[t] is their
    h)."""
    _idle(dG, n)
    for b in range(n, dG.shape[0]):
        dhb, dob = dh[b], dout[b]
        for j in range(dhb.shape[0]):
            dhb[j] += dob[j]


# --- the loops (one layer, one direction; `rev`: time runs T-1 .. 0) -------------------------
# `bs[t]`: how many batch rows run at step t (a PackedSequence's batch sizes, the sequences
# sorted by decreasing length; B at every step for a padded batch). Rows b >= bs[t] keep their
# state through step t (out[t, b] = their h before it, the LSTM's cs[t, b] their c): going
# forward a sequence that ended keeps its last state, so out[T - 1] holds each one's state at
# its own length; going backward (rev) one not yet started keeps h0 until its last step. Their
# gate gradients are zero and their dh passes through unchanged, so the whole-sequence weight
# and input gradient products over all T * B rows stay exact (every row they read must be
# finite, as 0 * NaN is not 0: the carried states and the caller's zeroed inputs are). The
# per-step matmuls read the running rows only; a padded batch calls none of `_carry`, `_idle`,
# `_pass`.
# Per step: one `_mm(h, W_hh^T, mm)` (LSTM: `_mm(xh[t], W^T, acts[t])`; targets/cpu/blas.py's
# small-M kernel or BLAS, called
# through its symbol, into a buffer made once), then 1-D loops over
# contiguous rows with few operands each, which LLVM vectorises (fastmath.py's float32
# sigmoid/tanh inline). `h` of step t is read back from out[t] (and the LSTM cell state from
# cs[t]): no per-step state copies. Each gate is a slice indexed from 0 (`a[2 * H:3 * H][j]`,
# never `a[2 * H + j]`): with an offset index LLVM cannot prove it non-negative, keeps Numba's
# wrap-around select and may leave the loop scalar (the LSTM's o-gate sigmoid loop over
# `range(3 * H, G)` measured 0.93 ms vs 0.10 ms sliced, T=50, B=64, H=64).
@njit(**_JIT)
def _lstm_fwd(x, h0, xh, w_ih, w_hh, b_ih, b_hh, wP, c0, rev, bs, out, acts, cs, tcs):
    """xh[t] = [x_t, h of the step before, 1] (filled in here, each step just before its matmul
    reads it; each step's h written into the row of the next step): one matmul per step with
    [W_ih, W_hh, b_ih + b_hh]^T computes all four gates' inputs, biases included (see the
    module doc), in column panels `wP[p]` (`_panels`: filled here from the weights, the last
    zero-padded), into acts[t], where the gates are then activated in place (saved for
    backward, as are the cell states `cs` and their tanh `tcs`: the backward reads the
    forward's tanh(c) rather than computing it again, bit for bit the same; T=50, B=64, H=64
    9.7-10.3 -> 9.0-9.6 ms a forward+backward step, one thread, loaded 2-core AMD EPYC)."""
    T, B, G = acts.shape
    H = G // 4
    I = x.shape[2]
    P = wP.shape[2]
    one = _one(x)
    # W^T in panels, in blocks of at most 64 columns row by row (contiguous writes, reads from
    # 64 rows of W): at 4H = 256 in one panel 11 us; a column at a time (its rows 1 KiB apart)
    # 47 us, whole rows 19; numpy's strided assignments took 22-60 (one thread, loaded machine)
    bw = min(P, 64)
    for g0 in range(0, G, bw):
        p, j0 = g0 // P, g0 % P
        w = min(bw, G - g0)
        for k in range(I + H + 1):
            row = wP[p, k, j0:j0 + w]
            if k < I:
                for j in range(w):
                    row[j] = w_ih[g0 + j, k]
            elif k < I + H:
                for j in range(w):
                    row[j] = w_hh[g0 + j, k - I]
            else:
                for j in range(w):
                    row[j] = b_ih[g0 + j] + b_hh[g0 + j]
    last = wP[wP.shape[0] - 1]
    for k in range(I + H + 1):  # the last panel's padding
        for j in range(G - (wP.shape[0] - 1) * P, P):
            last[k, j] = 0
    c = c0
    for s in range(T):
        t = T - 1 - s if rev else s
        tn = t - 1 if rev else t + 1  # the step after t
        nr = bs[t]
        for b in range(B):  # (every row: the weight gradients' product reads them all)
            row, xb = xh[t, b], x[t, b]
            for j in range(I):
                row[j] = xb[j]
            row[I + H] = one
            if s == 0:
                hx, hb = row[I:I + H], h0[b]
                for j in range(H):
                    hx[j] = hb[j]
        for p in range(wP.shape[0]):
            w = min(P, G - p * P)
            _mm(xh[t][:nr], wP[p][:, :w], acts[t][:nr, p * P:p * P + w], False)
        for b in range(nr):
            a = acts[t, b]
            a_s = a[:2 * H]  # i, f
            for j in range(2 * H):
                a_s[j] = _sig(a_s[j])
            a_g = a[2 * H:3 * H]
            for j in range(H):
                a_g[j] = _tanh(a_g[j])
            a_o = a[3 * H:]
            for j in range(H):
                a_o[j] = _sig(a_o[j])
            a_i, a_f = a[:H], a[H:2 * H]
            cb, cn, tn_, hn = c[b], cs[t, b], tcs[t, b], out[t, b]
            for j in range(H):
                v = a_f[j] * cb[j] + a_i[j] * a_g[j]
                cn[j] = v
                tv = _tanh(v)
                tn_[j] = tv
                hn[j] = a_o[j] * tv
            if 0 <= tn < T:
                hx = xh[tn, b][I:I + H]
                for j in range(H):
                    hx[j] = hn[j]
        for b in range(nr, B):  # not running at step t: h and c carried
            hp, cb, cn, hn = xh[t, b][I:I + H], c[b], cs[t, b], out[t, b]
            for j in range(H):
                hn[j] = hp[j]
                cn[j] = cb[j]
            if 0 <= tn < T:
                hx = xh[tn, b][I:I + H]
                for j in range(H):
                    hx[j] = hp[j]
        c = cs[t]


@njit(**_JIT)
def _lstm_bwd(dout, dhn, dcn, acts, cs, tcs, c0, whh, rev, bs, xh, w_ih, dG, dW, dx):
    """Returns (dh0, dc0). The gate-input gradients of TB steps at a time go into the ring
    `dG` (TB, B, G); each block, while in cache, is then consumed by the weight gradients
    (`dW` (+)= dG_blk^T @ the forward's [x, h_prev, 1] rows of those steps, `xh`) and the
    input gradient (`dx` rows of those steps = dG_blk @ W_ih; `dx` (T * B, I), or no rows:
    not needed)."""
    T, B, G = acts.shape
    TB = dG.shape[0]
    H = G // 4
    one = _one(acts)
    dh = dhn.copy()
    dc = dcn.copy()
    ring = dG.reshape(TB * B, G)
    rows = xh.reshape(T * B, xh.shape[2])
    for s0 in range(0, T, TB):
        n = min(TB, T - s0)
        lo = s0 if rev else T - s0 - n  # the block's steps: lo .. lo + n - 1
        for s in range(s0, s0 + n):
            t = s if rev else T - 1 - s
            tp = t + 1 if rev else t - 1  # the step before t in the forward's order
            cprev = cs[tp] if 0 <= tp < T else c0
            dGt = dG[t - lo]
            nr = bs[t]
            for b in range(nr):  # two passes: few operands each, so both vectorise
                a, d, tcb, cp, dcb, dhb, dob = acts[t, b], dGt[b], tcs[t, b], cprev[b], dc[b], \
                    dh[b], dout[t, b]
                a_i, a_f, a_g, a_o = a[:H], a[H:2 * H], a[2 * H:3 * H], a[3 * H:]
                d_i, d_f, d_g, d_o = d[:H], d[H:2 * H], d[2 * H:3 * H], d[3 * H:]
                for j in range(H):  # dc (into dc) and the o gate
                    dhv = dhb[j] + dob[j]
                    o = a_o[j]
                    tc = tcb[j]
                    dcb[j] += dhv * o * (one - tc * tc)
                    d_o[j] = dhv * tc * o * (one - o)
                for j in range(H):  # the i, f, g gates; dc of the step before
                    dcv = dcb[j]
                    i, f, g = a_i[j], a_f[j], a_g[j]
                    d_i[j] = dcv * g * i * (one - i)
                    d_f[j] = dcv * cp[j] * f * (one - f)
                    d_g[j] = dcv * i * (one - g * g)
                    dcb[j] = dcv * f
            if nr < B:  # not running: no gates, h passed through (c: dc untouched)
                _pass(dGt, dout[t], dh, nr)
            _mm(dGt[:nr], whh, dh[:nr], False)
        blk = ring[:n * B]
        # dW: BLAS (the small-M kernel measured 200 us against OpenBLAS's 156, 256 block rows,
        # one thread); dx: the kernel (54 us against 57)
        mm_into(blk.T, rows[lo * B:(lo + n) * B], dW, s0 > 0)
        if dx.shape[0]:
            _mm(blk, w_ih, dx[lo * B:(lo + n) * B], False)
    return dh, dc


@njit(**_JIT)
def _gru_fwd(gi, whhT, bih, bhh, h0, rev, bs, out, acts):
    """acts[t]: r, z, n and W_hn h + b_hn of each step."""
    T, B, G = gi.shape
    H = G // 3
    one = _one(gi)
    mm = np.empty((B, G), gi.dtype)
    bih_s, bhh_s, bih_n, bhh_n = bih[:2 * H], bhh[:2 * H], bih[2 * H:], bhh[2 * H:]
    h = h0
    for s in range(T):
        t = T - 1 - s if rev else s
        nr = bs[t]
        _mm(h[:nr], whhT, mm[:nr], False)
        for b in range(nr):
            a, x, m, hb, hn = acts[t, b], gi[t, b], mm[b], h[b], out[t, b]
            a_s, x_s, m_s = a[:2 * H], x[:2 * H], m[:2 * H]  # r, z
            for j in range(2 * H):
                a_s[j] = _sig(x_s[j] + bih_s[j] + m_s[j] + bhh_s[j])
            a_r, a_z, a_n, a_hn = a[:H], a[H:2 * H], a[2 * H:3 * H], a[3 * H:]
            x_n, m_n = x[2 * H:], m[2 * H:]
            for j in range(H):
                ghn = m_n[j] + bhh_n[j]
                n = _tanh(x_n[j] + bih_n[j] + a_r[j] * ghn)
                a_n[j] = n
                a_hn[j] = ghn
                z = a_z[j]
                hn[j] = (one - z) * n + z * hb[j]
        if nr < B:
            _carry(h, out[t], nr)
        h = out[t]


@njit(**_JIT)
def _gru_bwd(dout, dhn, acts, out, h0, whh, rev, bs, dGi, dGh):
    T, B, G = dGi.shape
    H = G // 3
    one = _one(acts)
    dh = dhn.copy()
    for s in range(T):
        t = s if rev else T - 1 - s
        tp = t + 1 if rev else t - 1
        hprev = out[tp] if 0 <= tp < T else h0
        nr = bs[t]
        for b in range(nr):
            a, di, dg, hp, dhb, dob = acts[t, b], dGi[t, b], dGh[t, b], hprev[b], dh[b], \
                dout[t, b]
            a_r, a_z, a_n, a_hn = a[:H], a[H:2 * H], a[2 * H:3 * H], a[3 * H:]
            di_r, di_z, di_n = di[:H], di[H:2 * H], di[2 * H:]
            dg_r, dg_z, dg_n = dg[:H], dg[H:2 * H], dg[2 * H:]
            for j in range(H):
                dhv = dhb[j] + dob[j]
                r, z, n, hn = a_r[j], a_z[j], a_n[j], a_hn[j]
                dnp = dhv * (one - z) * (one - n * n)
                drp = dnp * hn * r * (one - r)
                dzp = dhv * (hp[j] - n) * z * (one - z)
                di_r[j] = drp
                di_z[j] = dzp
                di_n[j] = dnp
                dg_r[j] = drp
                dg_z[j] = dzp
                dg_n[j] = dnp * r
                dhb[j] = dhv * z
        if nr < B:
            _pass(dGi[t], dout[t], dh, nr)
            _idle(dGh[t], nr)
        _mm(dGh[t][:nr], whh, dh[:nr], True)
    return dh


@njit(**_JIT)
def _rnn_fwd(gi, whhT, bias, h0, rev, relu, bs, out):
    T, B, H = gi.shape
    mm = np.empty((B, H), gi.dtype)
    h = h0
    for s in range(T):
        t = T - 1 - s if rev else s
        nr = bs[t]
        _mm(h[:nr], whhT, mm[:nr], False)
        for b in range(nr):
            x, m, hn = gi[t, b], mm[b], out[t, b]
            if relu:
                for j in range(H):
                    hn[j] = max(x[j] + m[j] + bias[j], 0.0)
            else:
                for j in range(H):
                    hn[j] = _tanh(x[j] + m[j] + bias[j])
        if nr < B:
            _carry(h, out[t], nr)
        h = out[t]


@njit(**_JIT)
def _rnn_bwd(dout, dhn, out, whh, rev, relu, bs, dG):
    T, B, H = out.shape
    one = _one(out)
    dh = dhn.copy()
    for s in range(T):
        t = s if rev else T - 1 - s
        nr = bs[t]
        for b in range(nr):
            d, v, dhb, dob = dG[t, b], out[t, b], dh[b], dout[t, b]
            if relu:
                for j in range(H):
                    d[j] = (dhb[j] + dob[j]) * (v[j] > 0)
            else:
                for j in range(H):
                    d[j] = (dhb[j] + dob[j]) * (one - v[j] * v[j])
        if nr < B:
            _pass(dG[t], dout[t], dh, nr)
        _mm(dG[t][:nr], whh, dh[:nr], False)
    return dh


# the loops call blas through a symbol: their disk cache must know it (numba_cache.EntryCache)
for _d in (_mm, _carry, _idle, _pass, _lstm_fwd, _lstm_bwd, _gru_fwd, _gru_bwd, _rnn_fwd,
           _rnn_bwd):
    guard_dispatcher(_d)
