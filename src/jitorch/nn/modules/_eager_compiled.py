"""Eager calls of the library's own layers served by their compiled composites.

Owns the decision, at an eager (not scripted, not traced) call of `nn.RNN` / `nn.LSTM` /
`nn.GRU`, `nn.MultiheadAttention`, `nn.TransformerEncoderLayer` or `nn.TransformerDecoderLayer`,
the norms and the losses whose composite compiles, to run the call as one scripted "flat"
function of its inputs and parameters instead of one eager op at a time, the flat sources of
the attention and Transformer layers (`_Flat`) and of the norms and losses (`functional`), and
the table of those functions (`_script`: one per source; recurrent layers find theirs by
configuration, `_BY_CONFIG`, the norms and losses by configuration and argument types,
`_BY_CALL`, without rebuilding the source).

Recurrent layers run the whole sequence as one call instead of one Python step per time
step. Where it serves the configuration (no projection, no dropout between layers in training)
and its loops are loaded, that call is the fused implementation of `_rnn_fused.py` (one
autograd node; PyTorch's structure: one input-projection matmul, one gate matmul and one gate
pass per step, weight gradients one matmul over the sequence); until its loops are
loaded (from the disk cache, after jitorch's compile worker compiled them; in the call under
`JITORCH_COMPILE=sync`) the scripted function below serves. Otherwise the function is the layer's "flat" twin
(`_rnn_script.source(m, "flat")`: `(input, h0[, c0], *parameters)`, dropout baked in for the
training mode), scripted once per configuration (mode, layers, directions, bias, projection,
batch_first, dropout in training) and shared by every instance with it; the `ScriptFunction`
specialises it per shape class (dtypes, ranks, requires_grad: sizes never compile again) and
follows `@script`'s rules: the first call of a new shape class runs interpreted while the
compile worker builds the program (`JITORCH_COMPILE=sync`: compiled in the call), later calls
run the compiled forward and, under autograd, its compiled backward as one node on the tape.
Each function is named `nn.<Layer>[eager]` in `jitorch.jit.stats()["functions"]`.

The layer's own checks and defaults (`_prepare_call`, `_finish_call`) run eagerly around the
call, so arguments, error types and messages are the eager form's. Anything that needs the
eager ops themselves keeps the eager path: `jit.trace` recording, a dispatch mode
(`__torch_dispatch__`-style, vmap), autocast, tensor subclasses, dtypes other than float32 /
float64, devices other than the CPU, an open forward-AD dual level (scripted functions carry no
tangents), and empty sequences or batches. A PackedSequence input is served by the fused loops
where they serve the configuration and are loaded (each step runs the sequences still running:
`_rnn_fused.py`), else by the layer's eager packed loop (there is no scripted packed
composite). `JITORCH_EAGER_COMPILED_LAYERS=0` switches it off.

The attention and Transformer layers' flat source writes the forward out with the call's
configuration as literals (sizes, eps, norm_first, relu/gelu, batch_first, training-mode
dropout probabilities, which masks are given, need_weights, is_causal, batched or not) and
every parameter an argument: `F.multi_head_attention_forward` (its composite compiles),
`F.layer_norm`, `F.linear`, `F.dropout` (the Philox mask: the same random stream as eager).
The eager path keeps a call whose arguments MultiheadAttention rejects (it raises the eager
error), a submodule with a hook or of another type (a replaced `linear1`, an activation
module), in-place dropout, bias_k / bias_v / add_zero_attn, masks of another float dtype,
empty inputs, and everything `_eligible` refuses.

The norms and losses (`functional`) are modules whose forward is one functional call with
constant configuration: `def forward(<tensors>): return F.<fn>(<tensors>, <literals>)`, e.g.
`F.layer_norm(input=input, weight=weight, bias=bias, normalized_shape=(5, ), eps=1e-05)`, an
absent optional tensor written as None. Served: nn.LayerNorm, nn.GroupNorm, nn.RMSNorm (eps=None
written as the dtype's eps), nn.BatchNorm1d/2d/3d where the call updates no running statistics
(evaluation mode, or training with track_running_stats=False: in training with running
statistics `F.batch_norm` updates them in place, outside the script subset, so that call keeps
the eager path), and the losses nn.L1Loss, MSELoss, SmoothL1Loss, HuberLoss, BCEWithLogitsLoss,
SoftMarginLoss, HingeEmbeddingLoss, MarginRankingLoss, CosineEmbeddingLoss, PoissonNLLLoss,
MultiLabelSoftMarginLoss and KLDivLoss (not reduction="mean", which warns at every call). Values
equal under == write the same source (beta=1 and beta=1.0 compute alike in these calls). The
module's own checks run first
(eager); then the eager path keeps calls whose first `same` tensors differ in shape (a loss
then warns and broadcasts), empty inputs, configuration values without a literal (a non-finite
float), everything `_eligible` refuses, and any call the compiled function raises on (the eager
form then raises its own error: these functions write nothing, so the rerun is safe). The
other losses keep the eager path: CrossEntropyLoss and NLLLoss are fused eager ops already
(`_nll_loss_fused`); BCELoss (its input-range check is data-dependent and compiled code does
not make it), GaussianNLLLoss (likewise for `var`, and its variance shapes), TripletMarginLoss
(a plain Python function over `pairwise_distance`: a Python op in scripted code, nothing to
gain) and CTCLoss.
"""
from __future__ import annotations

import math
import os

import jitorch as _jt
from ..._tensor import Tensor
from ..parameter import Parameter

ENV = "JITORCH_EAGER_COMPILED_LAYERS"
_FNS: dict = {}  # flat source -> ScriptFunction
_rt = None  # the runtime state read per call (imported at first use: no import cycle)


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip() != "0"


def _runtime():
    global _rt
    if _rt is None:
        from ... import _autocast
        from ..._ops.registry import _mode_state
        from ..._profiling import autocast_hook
        from ...autograd.grad_mode import _fwd_level
        from ...script.frontend.trace import _active_count
        _rt = (_active_count, _mode_state, autocast_hook, _autocast,
               (_jt.float32, _jt.float64), _fwd_level)
    return _rt


def _eligible(tensors) -> bool:
    tracers, modes, ac_hook, autocast, dtypes, fwd_ad = _runtime()
    if tracers[0] or modes.stack or fwd_ad[0] or \
            (ac_hook[0] is not None and autocast.active_on_thread()):
        return False
    t = tensors[0]
    if type(t) is not Tensor and type(t) is not Parameter:  # (a loss's input, unchecked)
        return False
    dt = t.dtype
    if dt not in dtypes:
        return False
    for t in tensors:
        ty = type(t)
        if ty is not Tensor and ty is not Parameter or t.dtype != dt or \
                t._device is not Tensor._device:
            return False
    return True


def _script(src: str, layer: str):
    """The ScriptFunction of flat source `src` (one per source: per configuration)."""
    sf = _FNS.get(src)
    if sf is None:
        from . import _rnn_script
        fn = _rnn_script._make(src, layer)
        sf = _jt.jit.script(fn)
        sf.name = sf.__name__ = f"nn.{layer}[eager]"
        _FNS[src] = sf
    return sf


_BY_CONFIG: dict = {}  # recurrent layer configuration (_rnn_config) -> its ScriptFunction


def _rnn_config(m) -> tuple:
    """Everything `_rnn_script.source(m, "flat")` and `_script`'s name read from `m`, so one
    key stands for one source (the dropout by repr: the source writes it so, and 1 == 1.0)."""
    return (type(m).__name__, m.mode, m.num_layers, m.bidirectional, m.bias, m.proj_size,
            m.batch_first, repr(m.dropout), m.dropout > 0, m.training,
            tuple(map(tuple, m._all_weights)))


def _function(m):
    """The flat function of recurrent layer `m`'s configuration; the source is built only at
    the configuration's first call (a per-call rebuild cost about as much as the call's own
    Python work)."""
    key = _rnn_config(m)
    sf = _BY_CONFIG.get(key)
    if sf is None:
        from . import _rnn_script
        sf = _BY_CONFIG[key] = _script(_rnn_script.source(m, "flat"), type(m).__name__)
    return sf


def rnn(m, input: Tensor, states: tuple, batch_sizes=None):
    """The whole-sequence result `(output, h_n[, c_n])` of RNN/LSTM/GRU `m` on batched
    `input` (as given: batch-first when `m.batch_first`) and its checked initial states,
    computed by the compiled function; None where the eager loop must run it. With
    `batch_sizes` (a list of ints), `input` is a PackedSequence's data and the states are in
    its sorted order: served by the fused loops only (the result's output is packed rows)."""
    if not enabled() or input.size(0) == 0 or input.size(1) == 0:
        return None
    params = m._flat_weights
    tensors = (input,) + tuple(states) + tuple(params)
    if not _eligible(tensors):
        return None
    from . import _rnn_fused
    if _rnn_fused.supported(m, input._data.dtype):  # fused loops; else the scripted composite
        return _rnn_fused.run(m, input, states, params, batch_sizes)
    return None if batch_sizes is not None else _function(m)(*tensors)


# -- attention and Transformer layers ------------------------------------------------------
# The flat source of a call: the layer's forward written out with its configuration (sizes,
# flags, dropout probabilities in training mode, which masks are given) as literals and every
# parameter an argument, so instances of one configuration share one function.

class _Flat:
    """Collects the flat source of one call: its lines and argument names, the tensors to
    pass (inputs, then parameters in the order of first use) and the masks given."""

    def __init__(self):
        self.args, self.values, self.tensors, self.masks, self.lines = [], [], [], [], []
        self.seen: dict = {}

    def input(self, name: str, t) -> str:
        self.args.append(name)
        self.values.append(t)
        self.tensors.append(t)
        return name

    def mask(self, name: str, t) -> str:
        if t is None:
            return "None"
        self.args.append(name)
        self.values.append(t)
        self.masks.append(t)
        return name

    def param(self, mod, attr: str, prefix: str) -> str:
        d = mod._parameters  # (exact layer types only: no parametrized property in the way)
        t = d[attr] if attr in d else getattr(mod, attr)
        if t is None:
            return "None"
        name = prefix + attr
        if name not in self.seen:
            self.seen[name] = t
            self.args.append(name)
            self.values.append(t)
            self.tensors.append(t)
        return name

    def source(self, ret: str) -> str:
        return "\n".join([f"def forward({', '.join(self.args)}):"] +
                         ["    " + ln for ln in self.lines + [f"return {ret}"]]) + "\n"

    def dropout(self, x: str, d) -> None:
        if d.training and d.p > 0:
            self.lines.append(f"{x} = F.dropout({x}, {float(d.p)!r}, True)")

    def layer_norm(self, out: str, x: str, n, prefix: str) -> None:
        self.lines.append(f"{out} = F.layer_norm({x}, {tuple(n.normalized_shape)!r}, "
                          f"{self.param(n, 'weight', prefix)}, "
                          f"{self.param(n, 'bias', prefix)}, {float(n.eps)!r})")

    def linear(self, out: str, x: str, lin, prefix: str) -> None:
        self.lines.append(f"{out} = F.linear({x}, {self.param(lin, 'weight', prefix)}, "
                          f"{self.param(lin, 'bias', prefix)})")

    def attention(self, a, prefix: str, out: str, q: str, kv, batched: bool, mask: str,
                  kpm: str, need_weights: bool, average: bool, causal: bool,
                  weights: str = "_w") -> None:
        """`out, weights = a(q, k, v, ...)` as `MultiheadAttention.forward` computes it;
        `kv`: the key and value names (one name for both, or q's: self-attention)."""
        k, v = (kv, kv) if isinstance(kv, str) else kv
        if a.batch_first and batched:  # MultiheadAttention.forward's transposes
            self.lines.append(f"{prefix}q = {q}.transpose(0, 1)")
            names = {q: f"{prefix}q"}
            for n in (k, v):
                if n not in names:
                    names[n] = f"{prefix}kv{len(names)}"
                    self.lines.append(f"{names[n]} = {n}.transpose(0, 1)")
            q, k, v = names[q], names[k], names[v]
        sep = not a._qkv_same_embed_dim
        P = lambda attr: self.param(a, attr, prefix)  # noqa: E731
        self.lines.append(
            f"{out}, {weights} = F.multi_head_attention_forward({q}, {k}, {v}, {a.embed_dim}, "
            f"{a.num_heads}, {P('in_proj_weight')}, {P('in_proj_bias')}, None, None, False, "
            f"{float(a.dropout)!r}, {self.param(a.out_proj, 'weight', prefix + 'out_proj_')}, "
            f"{self.param(a.out_proj, 'bias', prefix + 'out_proj_')}, "
            f"training={bool(a.training)}, key_padding_mask={kpm}, "
            f"need_weights={bool(need_weights)}, attn_mask={mask}, "
            f"use_separate_proj_weight={sep}, q_proj_weight={P('q_proj_weight')}, "
            f"k_proj_weight={P('k_proj_weight')}, v_proj_weight={P('v_proj_weight')}, "
            f"average_attn_weights={bool(average)}, is_causal={bool(causal)}, "
            f"_layer={a._get_name()!r})")
        if a.batch_first and batched:
            self.lines.append(f"{out} = {out}.transpose(0, 1)")


_LAYERS = None  # the layer classes the flat sources write out (imported at first use)


def _layer_types():
    global _LAYERS
    if _LAYERS is None:
        from .attention import MultiheadAttention
        from .dropout import Dropout
        from .linear import Linear, NonDynamicallyQuantizableLinear
        from .normalization import LayerNorm
        _LAYERS = (MultiheadAttention, NonDynamicallyQuantizableLinear, Linear, LayerNorm,
                   Dropout)
    return _LAYERS


def _plain_attention(a) -> bool:
    """`a` is a MultiheadAttention the flat source writes out (no bias_k/v, zero attention)."""
    mha, ndq = _layer_types()[:2]
    return type(a) is mha and a.bias_k is None and a.bias_v is None and \
        not a.add_zero_attn and type(a._modules["out_proj"]) is ndq


def _no_hooks(m) -> bool:
    """No hook on `m`'s submodules (their calls are what the flat function leaves out)."""
    for s in m._modules.values():
        if s is not None and (s._forward_hooks or s._forward_pre_hooks or s._backward_hooks or
                              s._backward_pre_hooks or s._modules and not _no_hooks(s)):
            return False
    return True


def _check_attention(a, q, k, v, kpm, mask, causal) -> bool:
    """Whether `a(q, k, v, ...)` passes MultiheadAttention's checks (a failing call keeps the
    eager path, which raises the eager error)."""
    from .._functional_attention import _check_args
    for t in (q, k, v):
        if type(t) is not Tensor and type(t) is not Parameter:
            return False
    if q.dim() not in (2, 3):
        return False
    if a.batch_first and q.dim() == 3:
        if k.dim() != 3 or v.dim() != 3:
            return False
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
    try:
        _check_args(q, k, v, a.embed_dim, a.num_heads, a.in_proj_weight, None, None, False,
                    kpm, mask, not a._qkv_same_embed_dim, a.k_proj_weight, a.v_proj_weight,
                    None, None, causal, a._get_name())
    except Exception:
        return False
    return True


def _run(fl: _Flat, layer: str, ret: str):
    tensors = fl.tensors
    if not _eligible(tensors):
        return None
    dt = tensors[0].dtype
    for t in fl.masks:
        if type(t) is not Tensor or t._device is not Tensor._device or \
                t.dtype is not _jt.bool and t.dtype != dt:
            return None
    return _script(fl.source(ret), layer)(*fl.values)


def attention(a, query, key, value, key_padding_mask, need_weights, attn_mask, average,
              is_causal):
    """`MultiheadAttention.forward`'s `(output, weights)` computed compiled; None where the
    eager path must run it (switched off, not eligible, or arguments it rejects)."""
    if not enabled() or not _plain_attention(a) or \
            not _check_attention(a, query, key, value, key_padding_mask, attn_mask, is_causal):
        return None
    if query.numel() == 0 or key.numel() == 0:
        return None
    fl = _Flat()
    q = fl.input("query", query)
    kv = q if key is query and value is query else \
        (fl.input("key", key), fl.input("value", value) if value is not key else "key")
    m = fl.mask("attn_mask", attn_mask)
    kp = fl.mask("key_padding_mask", key_padding_mask)
    fl.attention(a, "", "out", q, kv, query.dim() == 3, m, kp, need_weights, average,
                 is_causal, "w")
    return _run(fl, "MultiheadAttention", "out, w") if need_weights else \
        _ret_none(_run(fl, "MultiheadAttention", "out"))


def _ret_none(out):
    return None if out is None else (out, None)


def _plain_layer(m, attns) -> bool:
    """Layer `m` has the submodules its forward expects, written out by the flat source: no
    replaced or hooked submodule, relu/gelu, no in-place dropout, sizes that fit together."""
    _, _, Linear, LayerNorm, Dropout = _layer_types()
    if not (m._act_is_relu or m._act_is_gelu) or not _no_hooks(m):
        return False
    for a in attns:
        if not _plain_attention(a):
            return False
    e = attns[0].embed_dim
    mods = m._modules
    l1, l2 = mods["linear1"], mods["linear2"]
    if type(l1) is not Linear or type(l2) is not Linear or l1.in_features != e or \
            l2.in_features != l1.out_features or l2.out_features != e:
        return False
    for k in ("norm1", "norm2", "norm3"):
        n = mods.get(k, mods["norm1"])
        if type(n) is not LayerNorm or tuple(n.normalized_shape) != (e,):
            return False
    for k in ("dropout", "dropout1", "dropout2", "dropout3"):
        d = mods.get(k, mods["dropout"])
        if type(d) is not Dropout or d.inplace:
            return False
    return True


def _feed_forward(fl: _Flat, m, x: str, last_dropout) -> None:
    """`f = m._ff_block(x)`."""
    fl.linear("f", x, m.linear1, "linear1_")
    fl.lines.append("f = F.relu(f)" if m._act_is_relu else "f = F.gelu(f)")
    fl.dropout("f", m.dropout)
    fl.linear("f", "f", m.linear2, "linear2_")
    fl.dropout("f", last_dropout)


def _add_block(fl: _Flat, m, norm: str, block) -> None:
    """`x = x + block(norm(x))` (norm_first) or `x = norm(x + block(x))`; `block(fl, y)` writes
    the lines of its result `f` from input `y`."""
    n = getattr(m, norm)
    if m.norm_first:
        fl.layer_norm("y", "x", n, norm + "_")
        block(fl, "y")
        fl.lines.append("x = x + f")
    else:
        block(fl, "x")
        fl.lines.append("x = x + f")
        fl.layer_norm("x", "x", n, norm + "_")


def encoder_layer(m, src, src_mask, src_key_padding_mask, is_causal):
    """`TransformerEncoderLayer.forward` computed compiled; None where the eager path runs it."""
    a = m.self_attn
    if not enabled() or not _plain_layer(m, (a,)) or \
            not _check_attention(a, src, src, src, src_key_padding_mask, src_mask, is_causal) \
            or src.numel() == 0:
        return None
    fl = _Flat()
    fl.lines.append(f"x = {fl.input('src', src)}")
    mask = fl.mask("src_mask", src_mask)
    kpm = fl.mask("src_key_padding_mask", src_key_padding_mask)
    batched = src.dim() == 3

    def sa(fl, y):
        fl.attention(a, "self_attn_", "f", y, y, batched, mask, kpm, False, True, is_causal)
        fl.dropout("f", m.dropout1)
    _add_block(fl, m, "norm1", sa)
    _add_block(fl, m, "norm2", lambda fl, y: _feed_forward(fl, m, y, m.dropout2))
    return _run(fl, "TransformerEncoderLayer", "x")


def decoder_layer(m, tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                  memory_key_padding_mask, tgt_is_causal, memory_is_causal):
    """`TransformerDecoderLayer.forward` computed compiled; None where the eager path runs it."""
    a, c = m.self_attn, m.multihead_attn
    if not enabled() or not _plain_layer(m, (a, c)) or \
            not _check_attention(a, tgt, tgt, tgt, tgt_key_padding_mask, tgt_mask,
                                 tgt_is_causal) or \
            not _check_attention(c, tgt, memory, memory, memory_key_padding_mask, memory_mask,
                                 memory_is_causal) or tgt.numel() == 0 or memory.numel() == 0:
        return None
    fl = _Flat()
    fl.lines.append(f"x = {fl.input('tgt', tgt)}")
    mem = fl.input("memory", memory)
    masks = [fl.mask(n, t) for n, t in (
        ("tgt_mask", tgt_mask), ("memory_mask", memory_mask),
        ("tgt_key_padding_mask", tgt_key_padding_mask),
        ("memory_key_padding_mask", memory_key_padding_mask))]
    batched = tgt.dim() == 3

    def sa(fl, y):
        fl.attention(a, "self_attn_", "f", y, y, batched, masks[0], masks[2], False, True,
                     tgt_is_causal)
        fl.dropout("f", m.dropout1)

    def ca(fl, y):
        fl.attention(c, "multihead_attn_", "f", y, mem, batched, masks[1], masks[3], False,
                     True, memory_is_causal)
        fl.dropout("f", m.dropout2)
    _add_block(fl, m, "norm1", sa)
    _add_block(fl, m, "norm2", ca)
    _add_block(fl, m, "norm3", lambda fl, y: _feed_forward(fl, m, y, m.dropout3))
    return _run(fl, "TransformerDecoderLayer", "x")


# -- norms and losses: one functional call -------------------------------------------------
# A module whose forward is one `F.<fn>` call with constant configuration runs it as the flat
# function `def forward(<tensors>): return F.<fn>(<tensors>, <literals>)`, found per call by
# (module class, configuration values, argument types: None marks an absent optional tensor).

_BY_CALL: dict = {}  # that key -> the call's ScriptFunction, or None: the eager path serves it


def _literal(v):
    """Python source of configuration value `v`; None where the script cannot read it back
    (a non-finite float, another object)."""
    if v is None or isinstance(v, (bool, int, str)):
        return repr(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else None
    if isinstance(v, tuple):
        parts = [_literal(x) for x in v]
        return None if None in parts else "(" + "".join(p + ", " for p in parts) + ")"
    return None


def _call_function(m, fn: str, names: tuple, tensors: tuple, lits: tuple, values: tuple):
    """Scripts `F.<fn>(name=tensor..., lit=value...)` (tensors None: written as None)."""
    args = [n for n, t in zip(names, tensors) if t is not None]
    kw = [f"{n}={n if t is not None else 'None'}" for n, t in zip(names, tensors)]
    for n, v in zip(lits, values):
        src = _literal(v)
        if src is None:
            return None
        kw.append(f"{n}={src}")
    return _script(f"def forward({', '.join(args)}):\n    return F.{fn}({', '.join(kw)})\n",
                   type(m).__name__)


def functional(m, fn: str, names: tuple, tensors: tuple, lits: tuple = (), values: tuple = (),
               same: int = 0):
    """`F.<fn>` of `tensors` (its parameters `names`; None: an absent optional tensor) and
    configuration `values` (its parameters `lits`), computed by the call's compiled function;
    None where the eager path must run it: switched off, not `_eligible`, an empty input, the
    first `same` tensors not all of one shape (eager warns and broadcasts), a configuration
    value without a literal, or a call the compiled function rejects (the eager form then
    raises its own error). The source is built at the configuration's first call only."""
    if not enabled():
        return None
    given = [t for t in tensors if t is not None]
    if not _eligible(given):
        return None
    shape = given[0]._data.shape
    if not given[0]._data.size:
        return None
    for t in given[1:same]:
        if t._data.shape != shape:
            return None
    key = (type(m), values, tuple(map(type, tensors)))
    try:
        sf = _BY_CALL.get(key, _BY_CALL)
    except TypeError:  # an unhashable configuration value (a list set by hand): no literal
        return None
    if sf is _BY_CALL:
        sf = _BY_CALL[key] = _call_function(m, fn, names, tensors, lits, values)
    if sf is None:
        return None
    try:
        return sf(*given)
    except Exception:  # (no side effect: these functions only read their arguments)
        return None
