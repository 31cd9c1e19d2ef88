"""`jitorch.func`: PyTorch's `torch.func` function transforms over functions of tensors.

Owns `functional_call` (the swap itself lives in `nn.utils.stateless`), `grad`,
`grad_and_value`, `vjp`, `jvp`, `jacrev`, `jacfwd`, `hessian` and `vmap`
(`_vmap.py`). The transforms are built on the eager tape (`autograd.grad`) and on forward
mode (`autograd.forward_ad`), not on functorch-style levels: each call makes fresh inputs that
require grad (connected to the caller's tensors when those require grad, so nesting
`grad(grad(f))` and training through a transform work), differentiates and hands back results
detached unless an outer gradient needs them. Arguments and outputs may be nests of
tuples/lists/dicts of tensors (`_pytree`).
"""
from __future__ import annotations

from .._tensor import Tensor
from ..autograd import engine, forward_ad, grad_mode
from ..nn.utils.stateless import functional_call_dicts
from ._pytree import tree_flatten, tree_unflatten

__all__ = ["functional_call", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd",
           "hessian", "vmap"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """`torch.func.functional_call`: call `module` with its parameters/buffers replaced by the
    given tensors (one dict, or a tuple/list of dicts with disjoint keys) for this call only."""
    return functional_call_dicts(module, parameter_and_buffer_dicts, args, kwargs,
                                 tie_weights=tie_weights, strict=strict)


# ----------------------------------------------------------------------------- helpers
def _check_argnums(argnums, nargs):
    if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    nums = (argnums,) if isinstance(argnums, int) else argnums
    if not nums:
        raise RuntimeError("argnums must be non-empty")
    for a in nums:
        if isinstance(a, bool) or not isinstance(a, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
    norm = tuple(a % nargs for a in nums)
    if len(set(norm)) != len(norm):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return norm


def _check_tensor(x):
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")


def _wrap_input(x):
    """A fresh tensor to differentiate against: connected to `x` when `x` is on an outer tape."""
    _check_tensor(x)
    if x.requires_grad and grad_mode.is_grad_enabled():
        return x.view_as(x)
    if x.dtype.is_floating_point or x.dtype.is_complex:
        if x._tangent is not None:  # a dual of an enclosing jvp/jacfwd: keep its tangent
            return x.view_as(x).requires_grad_(True)
        return x.detach().requires_grad_(True)
    raise RuntimeError("only Tensors of floating point dtype can require gradients")


def _outer_needs_graph(flat_inputs) -> bool:
    return grad_mode.is_grad_enabled() and any(x.requires_grad for x in flat_inputs)


def _grads(outputs, inputs, grad_outputs, create_graph, materialize=True, retain_graph=True):
    """autograd.grad over the outputs that require grad, with zeros (torch.func) or None
    (`materialize=False`, as torch.autograd.functional) for inputs they do not depend on."""
    outs = [o for o in outputs if o is not None and o.requires_grad]
    gos = [g for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not outs:
        return tuple(x.detach() * 0 if materialize else None for x in inputs)
    return engine.grad(outs, inputs, gos, retain_graph=retain_graph, create_graph=create_graph,
                       allow_unused=True, materialize_grads=materialize)


def _detach(x):
    d = x.detach()
    if x._tangent is not None:  # an enclosing jvp/jacfwd's tangent stays: only the tape is cut
        d = forward_ad.make_dual(d, x._tangent)
    return d


def _maybe_detach(tree, keep):
    if keep:
        return tree
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([_detach(x) if isinstance(x, Tensor) else x for x in leaves], spec)


def _split_aux(out, has_aux, api):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) "
                           "if has_aux is True")
    return out


# ----------------------------------------------------------------------------- grad
def grad_and_value(func, argnums=0, has_aux=False):
    """`torch.func.grad_and_value`: f -> (lambda *args: (grad, value)) (or ((grad, (value,
    aux)) with has_aux); `grad` mirrors the structure of `args[argnums]`."""
    api = "grad_and_value(f)(*args)"

    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        args = list(args)
        per_arg = []
        flat_orig = []
        for n in nums:
            leaves, spec = tree_flatten(args[n])
            for x in leaves:
                _check_tensor(x)
            flat_orig += leaves
            wrapped = [_wrap_input(x) for x in leaves]
            per_arg.append((wrapped, spec))
            args[n] = tree_unflatten(wrapped, spec)
        keep = _outer_needs_graph(flat_orig)
        with grad_mode.enable_grad():
            out = func(*args, **kwargs)
            value, aux = _split_aux(out, has_aux, api)
            if not isinstance(value, Tensor):
                raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got "
                                   f"{type(value)}")
            if value.dim() != 0:
                raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {value.dim()} dims. Maybe you wanted to use "
                                   "the vjp or jacrev APIs instead?")
            flat_in = [x for w, _ in per_arg for x in w]
            gs = list(_grads([value], flat_in, [None], create_graph=keep))
        results = []
        for wrapped, spec in per_arg:
            results.append(tree_unflatten(gs[:len(wrapped)], spec))
            gs = gs[len(wrapped):]
        g = results[0] if isinstance(argnums, int) else tuple(results)
        g = _maybe_detach(g, keep)
        value = _maybe_detach(value, keep)
        if has_aux:
            return g, (value, _maybe_detach(aux, keep))
        return g, value

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """`torch.func.grad`: the gradient of a scalar-valued `func` w.r.t. `args[argnums]`."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


# ----------------------------------------------------------------------------- vjp
def vjp(func, *primals, has_aux=False):
    """`torch.func.vjp`: -> (func(*primals), vjp_fn[, aux]); `vjp_fn(cotangents)` returns one
    gradient per primal (a tuple, nests as the primals); it may be called repeatedly."""
    api = "vjp(f, *primals)"
    flat_orig, pspec = tree_flatten(primals)
    for x in flat_orig:
        _check_tensor(x)
    keep = _outer_needs_graph(flat_orig)
    flat_in = [_wrap_input(x) for x in flat_orig]
    with grad_mode.enable_grad():
        out = func(*tree_unflatten(flat_in, pspec))
    out, aux = _split_aux(out, has_aux, api)
    flat_out, ospec = tree_flatten(out)
    for o in flat_out:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(o)}")

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        flat_ct, cspec = tree_flatten(cotangents)
        if cspec != ospec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function. cotangents: "
                               f"{cspec}, primal output: {ospec}")
        for i, (o, c) in enumerate(zip(flat_out, flat_ct)):
            _check_tensor(c)
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{c.shape} and output[{i}] has a shape of {o.shape}.")
        cg = (keep or any(c.requires_grad for c in flat_ct)) if create_graph is None \
            else create_graph
        with grad_mode.enable_grad():
            gs = _grads(flat_out, flat_in, flat_ct, create_graph=cg)
        return _maybe_detach(tree_unflatten(list(gs), pspec), cg)

    result = (_maybe_detach(out, keep), vjp_fn)
    return result + (_maybe_detach(aux, keep),) if has_aux else result


# ----------------------------------------------------------------------------- jvp
def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """`torch.func.jvp`: -> (func(*primals), J @ tangents[, aux]) by forward-mode AD."""
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    flat_p, pspec = tree_flatten(primals)
    flat_t, tspec = tree_flatten(tangents)
    if pspec != tspec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, tangents "
                           f"also must be. Got primals with structure {pspec} and tangents with "
                           f"structure {tspec}")
    for x in flat_p + flat_t:
        _check_tensor(x)
    if grad_mode._fwd_level[0]:
        raise NotImplementedError("jitorch.func.jvp: nested forward-mode transforms (jvp "
                                  "inside jvp/jacfwd or inside a dual_level) are not "
                                  "implemented")
    with forward_ad.dual_level():
        duals = [forward_ad.make_dual(p, t) for p, t in zip(flat_p, flat_t)]
        out = func(*tree_unflatten(duals, pspec))
        out, aux = _split_aux(out, has_aux, api)
        flat_out, ospec = tree_flatten(out)
        primal_out, tangent_out = [], []
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                                   f"unsupported type {type(o)}")
            t = forward_ad.unpack_dual(o).tangent
            tangent_out.append(t if t is not None else o.detach() * 0)
            primal_out.append(o)
    # leaving the level cleared every tangent; the outputs are plain tensors again
    result = (tree_unflatten(primal_out, ospec), tree_unflatten(tangent_out, ospec))
    return result + (aux,) if has_aux else result


# ----------------------------------------------------------------------------- jacobians
def _basis(numel, like):
    """Rows of the identity, each shaped like `like` (one VJP/JVP per row: no vmap)."""
    from .. import _creation
    eye = _creation.eye(numel, dtype=like.dtype)
    return [eye[i].reshape(like.shape) for i in range(numel)]


def _stack_jac(rows, out_shape, in_shape):
    from .. import _ops
    if not rows:
        from .. import _creation
        return _creation.zeros(tuple(out_shape) + tuple(in_shape))
    return _ops.stack(rows).reshape(tuple(out_shape) + tuple(in_shape))


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None):
    """`torch.func.jacrev`: the Jacobian by reverse mode, one VJP per output element; result
    shape `out.shape + arg.shape` (nests follow the outputs, then `argnums`)."""
    def wrapper(*args):
        nums = _check_argnums(argnums, len(args))
        diff = tuple(args[n] for n in nums)

        def f_diff(*d):
            full = list(args)
            for n, v in zip(nums, d):
                full[n] = v
            return func(*full)

        res = vjp(f_diff, *diff, has_aux=has_aux)
        out, fn = res[0], res[1]
        flat_out, ospec = tree_flatten(out)
        flat_in, ispec = tree_flatten(diff)
        per_out = []
        for k, o in enumerate(flat_out):
            rows = [[] for _ in flat_in]
            for e in _basis(o.numel(), o):
                ct = [e if j == k else x.detach() * 0 for j, x in enumerate(flat_out)]
                gs, _ = tree_flatten(fn(tree_unflatten(ct, ospec)))
                for i, g in enumerate(gs):
                    rows[i].append(g.reshape(-1))
            jac = [_stack_jac(r, o.shape, x.shape) for r, x in zip(rows, flat_in)]
            jac = tree_unflatten(jac, ispec)
            per_out.append(jac[0] if isinstance(argnums, int) else jac)
        result = tree_unflatten(per_out, ospec)
        return (result, res[2]) if has_aux else result

    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """`torch.func.jacfwd`: the Jacobian by forward mode, one JVP per input element."""
    def wrapper(*args):
        nums = _check_argnums(argnums, len(args))
        diff = tuple(args[n] for n in nums)
        flat_in, ispec = tree_flatten(diff)

        def f_diff(*d):
            full = list(args)
            for n, v in zip(nums, d):
                full[n] = v
            return func(*full)

        cols = []  # per input leaf: list of output-leaf tangents per basis element
        out = aux = ospec = None
        for i, x in enumerate(flat_in):
            _check_tensor(x)
            cols.append([])
            for e in _basis(x.numel(), x):
                tang = [e if j == i else y.detach() * 0 for j, y in enumerate(flat_in)]
                res = jvp(f_diff, diff, tree_unflatten(tang, ispec), has_aux=has_aux)
                out, t_out = res[0], res[1]
                aux = res[2] if has_aux else None
                flat_t, ospec = tree_flatten(t_out)
                cols[i].append(flat_t)
        if ospec is None:  # every input is empty: one call for the output's shape
            out = f_diff(*diff)
            out, aux = _split_aux(out, has_aux, "jacfwd(f)(*args)")
            ospec = tree_flatten(out)[1]
        flat_out = tree_flatten(out)[0]
        per_out = []
        for k, o in enumerate(flat_out):
            jac = []
            for i, x in enumerate(flat_in):
                from .. import _ops
                if cols[i]:
                    cols_k = [c[k].reshape(-1) for c in cols[i]]
                    j = _ops.stack(cols_k, dim=-1).reshape(tuple(o.shape) + tuple(x.shape))
                else:
                    j = _stack_jac([], o.shape, x.shape)
                jac.append(j)
            jac = tree_unflatten(jac, ispec)
            per_out.append(jac[0] if isinstance(argnums, int) else jac)
        result = tree_unflatten(per_out, ospec)
        return (result, aux) if has_aux else result

    return wrapper


def hessian(func, argnums=0):
    """`torch.func.hessian`: the Jacobian of the Jacobian (reverse over reverse here)."""
    return jacrev(jacrev(func, argnums), argnums)


from ._vmap import vmap  # noqa: E402  (after the transforms it composes with)
