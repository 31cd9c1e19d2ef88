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
from .._ops.nn_misc import dropout as _dropout, linear as _linear

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _bool_to_neg_inf(mask: Tensor, dtype) -> Tensor:
    """Boolean 'masked' mask -> float mask with -inf where True, 0 elsewhere."""
    return _jt.zeros(tuple(mask.shape), dtype=dtype).masked_fill(mask, float("-inf"))


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


def _canonical_mask(mask, name, dtype):
    """PyTorch's `_canonical_mask`: bool -> float (-inf where True); float kept; else error."""
    if mask is None:
        return None
    if mask.dtype == _jt.bool:
        return _bool_to_neg_inf(mask, dtype)
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


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
    if static_k is not None or static_v is not None:
        raise NotImplementedError(f"{_layer}: static_k / static_v are not supported")
    is_batched = query.dim() == 3
    if query.dim() not in (2, 3) or key.dim() != query.dim() or value.dim() != query.dim():
        raise AssertionError(f"{_layer}: query, key and value should be all 2-D (unbatched) or "
                             f"all 3-D (batched), got query {list(query.shape)}, key "
                             f"{list(key.shape)} and value {list(value.shape)}")
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"{_layer}: was expecting embedding dimension of "
                             f"{embed_dim_to_check}, but got {embed_dim}")
    if key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"{_layer}: key's sequence and batch dims {tuple(key.shape[:2])} "
                             f"do not match value's {tuple(value.shape[:2])}")
    if key.shape[1] != bsz:
        raise AssertionError(f"{_layer}: query batch size {bsz} does not match key's "
                             f"{key.shape[1]}")
    head_dim = embed_dim // num_heads
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    dtype = query.dtype
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", dtype)
    attn_mask = _canonical_mask(attn_mask, "attn_mask", dtype)

    # input projections
    if not use_separate_proj_weight:
        w_q, w_k, w_v = in_proj_weight.chunk(3, 0)
    else:
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias.chunk(3, 0)
    for name, t, w in (("key", key, w_k), ("value", value, w_v)):
        if t.shape[-1] != w.shape[1]:
            raise AssertionError(f"{_layer}: {name} has embedding dimension {t.shape[-1]} but "
                                 f"the {name} projection expects {w.shape[1]} "
                                 f"({name} shape {list(t.shape)})")
    q = _linear(query, w_q, b_q)
    k = _linear(key, w_k, b_k)
    v = _linear(value, w_v, b_v)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"{_layer}: The shape of the 2D attn_mask is "
                                   f"{tuple(attn_mask.shape)}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"{_layer}: The shape of the 3D attn_mask is "
                                   f"{tuple(attn_mask.shape)}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"{_layer}: attn_mask's dimension {attn_mask.dim()} is not "
                               f"supported")

    if bias_k is not None and bias_v is not None:
        k = _jt.cat([k, bias_k.expand(1, bsz, embed_dim)], 0)
        v = _jt.cat([v, bias_v.expand(1, bsz, embed_dim)], 0)
        if attn_mask is not None:
            attn_mask = _jt.cat([attn_mask, attn_mask.new_zeros(
                (attn_mask.shape[0], tgt_len, 1))], -1)
        if key_padding_mask is not None:
            key_padding_mask = _jt.cat([key_padding_mask, key_padding_mask.new_zeros(
                (bsz, 1))], -1)

    # (L, N, E) -> (N*H, L, hd)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        k = _jt.cat([k, k.new_zeros((bsz * num_heads, 1, head_dim))], 1)
        v = _jt.cat([v, v.new_zeros((bsz * num_heads, 1, head_dim))], 1)
        if attn_mask is not None:
            attn_mask = _jt.cat([attn_mask, attn_mask.new_zeros(
                (attn_mask.shape[0], tgt_len, 1))], -1)
        if key_padding_mask is not None:
            key_padding_mask = _jt.cat([key_padding_mask, key_padding_mask.new_zeros(
                (bsz, 1))], -1)
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"{_layer}: expecting key_padding_mask shape of "
                                 f"{(bsz, src_len)}, but got {tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(
            bsz, num_heads, 1, src_len).reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm

    if not training:
        dropout_p = 0.0
    scores = _jt.matmul(q * math.sqrt(1.0 / float(head_dim)), k.transpose(-2, -1))
    if attn_mask is not None:
        scores = scores + attn_mask
    weights = scores.softmax(-1)
    if dropout_p > 0.0:
        weights = _dropout(weights, dropout_p, True)
    out = _jt.matmul(weights, v)  # (N*H, L, hd)
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not is_batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(1)
    if not is_batched:
        weights = weights.squeeze(0)
    return out, weights


# scripted modules call this through the interpreter (a prim::PythonOp typed by the annotation)
multi_head_attention_forward._jitorch_ignore = True
