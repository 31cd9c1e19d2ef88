"""`F.scaled_dot_product_attention` and `F.multi_head_attention_forward`, composed of jitorch ops.

Semantics follow PyTorch's math reference (`torch/nn/functional.py`): in SDPA a boolean
`attn_mask` marks positions that MAY attend (True = keep); in multi-head attention boolean masks
mark positions that may NOT attend (True = masked), and float masks are added to the scores.
Fully masked rows give NaN, as PyTorch's math path does. Built from registry ops, so autograd
and tracing go through them.
"""
from __future__ import annotations

import math
from typing import Optional, Tuple

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from .._tensor import Tensor
from .._ops.composite import composite, expose
from .._ops.nn_activation import _max_shift
from .._ops.nn_misc import dropout as _dropout
from .._ops.ternary import where
from .. import _autocast

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _bool_to_neg_inf(mask: Tensor, dtype) -> Tensor:
    """Boolean 'masked' mask -> float mask with -inf where True, 0 elsewhere."""
    return _jt.zeros(tuple(mask.shape), dtype=dtype).masked_fill(mask, float("-inf"))


@_autocast.policy("lower")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(Q K^T * scale + bias) V over the last two dims; leading dims broadcast."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' must be Tensor, "
                            f"not {type(t).__name__}")
        if t.dim() < 2:
            raise RuntimeError(f"scaled_dot_product_attention(): {name} must be at least 2-D, "
                               f"got {t.dim()}-D")
    if query.size(-1) != key.size(-1):
        raise RuntimeError(f"scaled_dot_product_attention(): query and key must have the same "
                           f"embedding size, got query {list(query.shape)} and key "
                           f"{list(key.shape)}")
    if key.size(-2) != value.size(-2):
        raise RuntimeError(f"scaled_dot_product_attention(): key and value must have the same "
                           f"sequence length, got key {list(key.shape)} and value "
                           f"{list(value.shape)}")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    if enable_gqa and query.dim() >= 3 and key.size(-3) != query.size(-3):
        rep = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(rep, dim=-3)
        value = value.repeat_interleave(rep, dim=-3)
    scores = _jt.matmul(query, key.transpose(-2, -1)) * scale_factor
    if is_causal:
        keep = _jt.ones((L, S), dtype=_jt.bool).tril(0)
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == _jt.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    weights = scores.softmax(-1)
    if dropout_p > 0.0:
        weights = _dropout(weights, dropout_p, True)
    return _jt.matmul(weights, value)


def _check_mask(mask, name):
    """PyTorch's `_canonical_mask` accepts bool (True = masked) and float (added) masks."""
    if mask is not None and mask.dtype != _jt.bool and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")


def _mha_in_place(embed_dim, num_heads, add_zero_attn, dropout_p, training, separate,
                  has_bias_k, has_bias_v, has_static_k, has_static_v, layer):
    if has_bias_k or has_bias_v or add_zero_attn:
        return "bias_k / bias_v / add_zero_attn"  # rare variants: a Python call
    return None  # (attention dropout compiles: F.dropout's mask, jitorch/_philox.py)


@composite(static=("embed_dim_to_check", "num_heads", "add_zero_attn", "dropout_p", "training",
                   "use_separate_proj_weight", "bias_k?", "bias_v?", "static_k?", "static_v?",
                   "_layer"),
           script_unsupported=_mha_in_place,
           static_fallback={"_layer": "MultiheadAttention"})
def _mha(embed_dim, num_heads, add_zero_attn, dropout_p, training, separate, has_bias_k,
         has_bias_v, has_static_k, has_static_v, layer):
    """PyTorch's math path for sequence-first (L, N, E) or unbatched (L, E) inputs. Rank and
    dtype tests fold per specialisation; boolean masks (True = may NOT attend) become -inf
    scores, float masks are added."""
    if has_static_k or has_static_v:
        raise NotImplementedError(f"{layer}: static_k / static_v are not supported")
    if isinstance(embed_dim, bool) or not isinstance(embed_dim, int) or \
            isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads <= 0:
        raise TypeError(f"{layer}: embed_dim and num_heads must be positive ints")
    head_dim = embed_dim // num_heads
    bias_kv = has_bias_k and has_bias_v
    extra = int(bias_kv) + int(bool(add_zero_attn))  # key positions added to the source
    drop = bool(training) and dropout_p > 0.0

    def body(query, key, value, in_proj_weight: Optional[Tensor], in_proj_bias: Optional[Tensor],
             bias_k: Optional[Tensor], bias_v: Optional[Tensor], out_proj_weight: Tensor,
             out_proj_bias: Optional[Tensor], key_padding_mask: Optional[Tensor] = None,
             need_weights: bool = True, attn_mask: Optional[Tensor] = None,
             q_proj_weight: Optional[Tensor] = None, k_proj_weight: Optional[Tensor] = None,
             v_proj_weight: Optional[Tensor] = None, average_attn_weights: bool = True,
             is_causal: bool = False):
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use "
                               "the Transformer module method `generate_square_subsequent_mask` "
                               "to create this mask.")
        if query.size(-1) != embed_dim:
            raise AssertionError(f"{layer}: was expecting embedding dimension of {embed_dim}, "
                                 f"but got {query.size(-1)}")
        unbatched = query.dim() == 2
        if unbatched:
            query = query.unsqueeze(1)
            key = key.unsqueeze(1)
            value = value.unsqueeze(1)
        tgt_len = query.size(0)
        bsz = query.size(1)
        src_len = key.size(0)
        if separate:
            q = query.reshape(tgt_len * bsz, query.size(2)).matmul(q_proj_weight.t())
            k = key.reshape(src_len * bsz, key.size(2)).matmul(k_proj_weight.t())
            v = value.reshape(src_len * bsz, value.size(2)).matmul(v_proj_weight.t())
        else:  # in_proj_weight's three row blocks
            q = query.reshape(tgt_len * bsz, query.size(2)).matmul(
                in_proj_weight.narrow(0, 0, embed_dim).t())
            k = key.reshape(src_len * bsz, key.size(2)).matmul(
                in_proj_weight.narrow(0, embed_dim, embed_dim).t())
            v = value.reshape(src_len * bsz, value.size(2)).matmul(
                in_proj_weight.narrow(0, 2 * embed_dim, embed_dim).t())
        if in_proj_bias is not None:
            q = q + in_proj_bias.narrow(0, 0, embed_dim)
            k = k + in_proj_bias.narrow(0, embed_dim, embed_dim)
            v = v + in_proj_bias.narrow(0, 2 * embed_dim, embed_dim)
        if bias_kv:  # one more key position: the biases
            k = _jt.cat([k.reshape(src_len, bsz, embed_dim),
                         bias_k.expand(1, bsz, embed_dim)], 0).reshape(-1, embed_dim)
            v = _jt.cat([v.reshape(src_len, bsz, embed_dim),
                         bias_v.expand(1, bsz, embed_dim)], 0).reshape(-1, embed_dim)
        kv_len = src_len
        if bias_kv:
            kv_len = src_len + 1
        q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
        k = k.reshape(kv_len, bsz * num_heads, head_dim).transpose(0, 1)
        v = v.reshape(kv_len, bsz * num_heads, head_dim).transpose(0, 1)
        if add_zero_attn:  # and one of zeros
            k = _jt.cat([k, k.new_zeros((bsz * num_heads, 1, head_dim))], 1)
            v = _jt.cat([v, v.new_zeros((bsz * num_heads, 1, head_dim))], 1)
        if extra:
            src_len = src_len + extra
        # the scale from q's run-time size, as PyTorch computes it: a compile-time constant
        # would be a literal in the kernels of the product and its backward, which then differ
        # per head size (no model would share the warmed library's: script/runtime/warmup.py)
        scores = (q * math.sqrt(1.0 / float(q.size(-1)))).matmul(k.transpose(1, 2))
        if attn_mask is not None:  # bool: True = may NOT attend; float: added
            if extra:  # the added key positions are never masked
                if attn_mask.dim() == 2:
                    attn_mask = attn_mask.unsqueeze(0)
                attn_mask = _jt.cat([attn_mask, attn_mask.new_zeros(
                    (attn_mask.size(0), tgt_len, extra))], -1)
            if attn_mask.dtype == _jt.bool:
                scores = where(attn_mask, float("-inf"), scores)
            else:
                scores = scores + attn_mask
        if key_padding_mask is not None:
            if extra:
                key_padding_mask = _jt.cat([key_padding_mask.reshape(bsz, -1),
                                            key_padding_mask.new_zeros((bsz, extra))], -1)
            s4 = scores.reshape(bsz, num_heads, tgt_len, src_len)
            kpm = key_padding_mask.reshape(bsz, 1, 1, src_len)
            if key_padding_mask.dtype == _jt.bool:
                s4 = where(kpm, float("-inf"), s4)
            else:
                s4 = s4 + kpm
            scores = s4.reshape(bsz * num_heads, tgt_len, src_len)
        e = (scores - _max_shift(scores, -1, True)).exp()
        weights = e / e.sum(-1, True)
        if drop:
            weights = _dropout(weights, dropout_p, True)
        out = weights.matmul(v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim).matmul(
            out_proj_weight.t())
        if out_proj_bias is not None:
            out = out + out_proj_bias
        if unbatched:
            out = out.reshape(tgt_len, embed_dim)
        else:
            out = out.reshape(tgt_len, bsz, embed_dim)
        if need_weights:
            w4 = weights.reshape(bsz, num_heads, tgt_len, src_len)
            if average_attn_weights:
                w4 = w4.mean(1)
                if unbatched:
                    w4 = w4.reshape(tgt_len, src_len)
            elif unbatched:
                w4 = w4.reshape(num_heads, tgt_len, src_len)
            return out, w4
        return out, None
    return body


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False,
                                 _layer="multi_head_attention_forward"
                                 ) -> Tuple[Tensor, Optional[Tensor]]:
    """Sequence-first (L, N, E) or unbatched (L, E) multi-head attention (PyTorch's math)."""
    _check_args(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, bias_k,
                bias_v, add_zero_attn, key_padding_mask, attn_mask, use_separate_proj_weight,
                k_proj_weight, v_proj_weight, static_k, static_v, is_causal, _layer)
    body = _mha.body(embed_dim_to_check, num_heads, add_zero_attn, dropout_p, training,
                     use_separate_proj_weight, bias_k is not None, bias_v is not None,
                     False, False, _layer)
    return body(query, key, value, in_proj_weight, in_proj_bias, bias_k, bias_v,
                out_proj_weight, out_proj_bias, key_padding_mask, need_weights, attn_mask,
                q_proj_weight, k_proj_weight, v_proj_weight, average_attn_weights, is_causal)


def _check_args(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, bias_k,
                bias_v, add_zero_attn, key_padding_mask, attn_mask, use_separate_proj_weight,
                k_proj_weight, v_proj_weight, static_k, static_v, is_causal, _layer) -> None:
    """The argument checks of `multi_head_attention_forward` (PyTorch's errors), also run
    before an eager call served compiled (nn/modules/_eager_compiled.py)."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError(f"{_layer}: static_k / static_v are not supported")
    is_batched = query.dim() == 3
    if query.dim() not in (2, 3) or key.dim() != query.dim() or value.dim() != query.dim():
        raise AssertionError(f"{_layer}: query, key and value should be all 2-D (unbatched) or "
                             f"all 3-D (batched), got query {list(query.shape)}, key "
                             f"{list(key.shape)} and value {list(value.shape)}")
    q3 = query if is_batched else query.unsqueeze(1)
    k3 = key if is_batched else key.unsqueeze(1)
    v3 = value if is_batched else value.unsqueeze(1)
    tgt_len, bsz, embed_dim = q3.shape
    src_len = k3.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"{_layer}: was expecting embedding dimension of "
                             f"{embed_dim_to_check}, but got {embed_dim}")
    if k3.shape[:2] != v3.shape[:2]:
        raise AssertionError(f"{_layer}: key's sequence and batch dims {tuple(k3.shape[:2])} "
                             f"do not match value's {tuple(v3.shape[:2])}")
    if k3.shape[1] != bsz:
        raise AssertionError(f"{_layer}: query batch size {bsz} does not match key's "
                             f"{k3.shape[1]}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    _check_mask(key_padding_mask, "key_padding_mask")
    _check_mask(attn_mask, "attn_mask")
    if use_separate_proj_weight:
        w_k, w_v = k_proj_weight, v_proj_weight
    else:
        w_k = w_v = in_proj_weight
    for name, t, w in (("key", k3, w_k), ("value", v3, w_v)):
        if t.shape[-1] != w.shape[1]:
            raise AssertionError(f"{_layer}: {name} has embedding dimension {t.shape[-1]} but "
                                 f"the {name} projection expects {w.shape[1]} "
                                 f"({name} shape {list(t.shape)})")
    if attn_mask is not None:
        want = {2: (tgt_len, src_len), 3: (bsz * num_heads, tgt_len, src_len)}.get(
            attn_mask.dim())
        if want is None:
            raise RuntimeError(f"{_layer}: attn_mask's dimension {attn_mask.dim()} is not "
                               f"supported")
        if tuple(attn_mask.shape) != want:
            raise RuntimeError(f"{_layer}: The shape of the {attn_mask.dim()}D attn_mask is "
                               f"{tuple(attn_mask.shape)}, but should be {want}.")
    if key_padding_mask is not None:
        # checked as PyTorch does, after the added key positions (bias_k, add_zero_attn)
        extra = int(bias_k is not None and bias_v is not None) + int(bool(add_zero_attn))
        got = tuple(key_padding_mask.shape) if is_batched else \
            (1,) + tuple(key_padding_mask.shape)
        if extra and got:
            got = got[:-1] + (got[-1] + extra,)
        full = src_len + extra
        if got != (bsz, full):
            raise AssertionError(f"{_layer}: expecting key_padding_mask shape of "
                                 f"{(bsz, full)}, but got {got}")


expose(_mha, multi_head_attention_forward)
# outside what the composite compiles, scripted modules call this through the interpreter (a
# prim::PythonOp typed by the annotation)
multi_head_attention_forward._jitorch_ignore = True
