"""`jitorch.autograd.functional`: PyTorch's higher-level autograd API over functions of tensors.

Owns `vjp`, `jvp`, `jacobian`, `hessian`, `vhp` and `hvp` with PyTorch's conventions: `inputs`
is a Tensor or a tuple of Tensors and results mirror that structure (nested tuples for the
Jacobian of tuple outputs w.r.t. tuple inputs), `v` is checked against what it multiplies,
`strict=True` raises where an output is independent of an input (otherwise zeros stand in), and
results are detached unless `create_graph=True`.

The mechanisms are not re-implemented here: reverse mode is `jitorch.func._grads` (the eager
tape's `autograd.grad`, with `None` for unused inputs so strict mode can tell), forward-mode
Jacobians are `jitorch.func.jvp` (forward AD), and `vectorize=True` batches the per-row VJPs
(per-column JVPs) with `jitorch.func.vmap`. `jvp`/`hvp` use the double-backward trick, as
PyTorch's do, so their strict-mode checks and messages are PyTorch's.
"""
from __future__ import annotations

from .._tensor import Tensor
from . import grad_mode

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


# ----------------------------------------------------------------------------- structure
def _as_tuple(inp, arg_name, fn_name):
    """-> (was it a tuple, the tuple); every element must be a Tensor."""
    is_tuple = isinstance(inp, tuple)
    items = inp if is_tuple else (inp,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the {where} has type {type(el)}.")
    return is_tuple, items


def _unpack(res, was_tuple):
    """Undo `_as_tuple` on a result: `was_tuple` is one flag, or (outputs, inputs) flags for
    the nested results of jacobian/hessian."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            res = tuple(r[0] for r in res)
        return res if outer else res[0]
    return res if was_tuple else res[0]


def _preprocess(inputs, create_graph, need_graph):
    """Fresh tensors to differentiate against; with create_graph, views that stay connected to
    the caller's graph (so the result can be differentiated again)."""
    out = []
    for x in inputs:
        if create_graph and x.requires_grad:
            out.append(x.view_as(x))
        else:
            out.append(x.detach().requires_grad_(need_graph))
    return tuple(out)


def _postprocess(res, create_graph):
    if isinstance(res, Tensor):
        return res if create_graph else res.detach()
    return tuple(_postprocess(r, create_graph) for r in res)


def _validate_v(v, other, other_is_tuple):
    if len(v) != len(other):
        if other_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but "
                               f"got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, other)):
        if a.size() != b.size():
            where = f"Entry {i} in " if other_is_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {b.size()} but got "
                               f"{a.size()}.")


def _prepare_v(v, against, against_is_tuple, create_graph, fn_name, what):
    if v is None:
        if len(against) != 1 or against[0].numel() != 1:
            raise RuntimeError(f"The vector v can only be None if the {what} a single Tensor "
                               "with a single element.")
        return None
    _, v = _as_tuple(v, "v", fn_name)
    v = _preprocess(v, create_graph, need_graph=False)
    _validate_v(v, against, against_is_tuple)
    return v


_INDEPENDENT = {
    "hessian": "The hessian of the user-provided function with respect to input {i} is "
               "independent of the input. This is not allowed in strict mode. You should "
               "ensure that your function is thrice differentiable and that the hessian "
               "depends on the inputs.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided "
                "function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the "
                   "user-provided function. This is not allowed in strict mode.",
    "outputs": "Output {i} of the user-provided function does not require gradients. The "
               "outputs must be computed in a differentiable manner from the input when running "
               "in strict mode.",
}


def _check_requires_grad(tensors, kind, strict):
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_INDEPENDENT[kind].format(i=i))


_UNUSED = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
            "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
                         "in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward "
                         "mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """None (an input the outputs do not depend on) -> zeros, or strict mode's error."""
    out = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_UNUSED[stage].format(i=i))
            g = _zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        out.append(g)
    return tuple(out)


def _zeros_like(t, requires_grad=False):
    from .._creation import zeros_like
    z = zeros_like(t)
    return z.requires_grad_(True) if requires_grad else z


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad over the outputs that require grad; None for unused inputs."""
    from ..func import _grads
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    return _grads(outputs, inputs, grad_outputs, create_graph, materialize=False,
                  retain_graph=create_graph if retain_graph is None else retain_graph)


def _outputs(func, inputs, fn_name, strict):
    is_tuple, outs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)
    _check_requires_grad(outs, "outputs", strict)
    return is_tuple, outs


def _single_output(outs_is_tuple, outs, fn_name):
    if outs_is_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")


# ----------------------------------------------------------------------------- vjp / jvp
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """`torch.autograd.functional.vjp`: -> (func(inputs), v^T J)."""
    with grad_mode.enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _preprocess(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _outputs(func, inputs, "vjp", strict)
        v = _prepare_v(v, outputs, out_tuple, create_graph, "vjp",
                       "user-provided function returns")
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        res = _grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "back")
    return (_unpack(_postprocess(outputs, create_graph), out_tuple),
            _unpack(_postprocess(res, create_graph), in_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """`torch.autograd.functional.jvp`: -> (func(inputs), J v), by the double-backward trick."""
    with grad_mode.enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _preprocess(inputs, create_graph, need_graph=True)
        v = _prepare_v(v, inputs, in_tuple, create_graph, "jvp",
                       "input to the user-provided function is")
        out_tuple, outputs = _outputs(func, inputs, "jvp", strict)
        # u -> J^T u is linear in u; differentiating it w.r.t. u at any u gives J v
        dummies = tuple(_zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _grad(outputs, inputs, dummies, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        res = _grad(grad_inputs, dummies, v, create_graph=create_graph)
        res = _fill_in_zeros(res, outputs, strict, create_graph, "back_trick")
    return (_unpack(_postprocess(outputs, create_graph), out_tuple),
            _unpack(_postprocess(res, create_graph), out_tuple))


# ----------------------------------------------------------------------------- jacobian
def _standard_basis(tensors):
    """One identity block per tensor, stacked: chunk k is (total, numel_k) with ones where
    row r is tensor k's element r - offset_k."""
    from .. import _creation
    numels = [t.numel() for t in tensors]
    total = sum(numels)
    eye = _creation.eye(total, dtype=tensors[0].dtype)
    chunks, start = [], 0
    for t, n in zip(tensors, numels):
        chunks.append(eye[:, start:start + n].to(t.dtype))
        start += n
    return chunks, numels


def _jac_reverse_vectorized(outputs, inputs, create_graph):
    from ..func import vmap
    chunks, numels = _standard_basis(outputs)
    flat_outputs = tuple(o.reshape(-1) for o in outputs)

    def rows(*cotangents):
        gs = _grad(flat_outputs, inputs, cotangents, create_graph=create_graph,
                   retain_graph=True)
        return tuple(_zeros_like(x) if g is None else g for g, x in zip(gs, inputs))

    per_input = vmap(rows)(*chunks)  # each (total, *input.shape)
    jac = []
    for o_idx, out in enumerate(outputs):
        start = sum(numels[:o_idx])
        jac.append(tuple(
            per_input[i][start:start + numels[o_idx]].reshape(out.shape + x.shape)
            for i, x in enumerate(inputs)))
    return tuple(jac)


def _jac_reverse_rows(outputs, inputs, create_graph, strict):
    from .. import _ops
    jac = []
    for i, out in enumerate(outputs):
        rows = [[] for _ in inputs]
        flat = out.reshape(-1)
        for j in range(out.numel()):
            gs = _grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
            for k, (g, x) in enumerate(zip(gs, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is "
                                           f"independent of input {k}. This is not allowed "
                                           "in strict mode.")
                    g = _zeros_like(x)
                elif strict and create_graph and not g.requires_grad:
                    raise RuntimeError(f"The jacobian of the user-provided function is "
                                       f"independent of input {i}. This is not allowed in "
                                       "strict mode when create_graph=True.")
                rows[k].append(g)
        jac.append(tuple(
            (_ops.stack(r) if r else _zeros_like(x).reshape((0,) + tuple(x.shape)))
            .reshape(out.shape + x.shape) for r, x in zip(rows, inputs)))
    return tuple(jac)


def _jac_forward(func, inputs, strict, vectorize):
    if strict:
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and '
                           '`strategy="forward-mode"` are not supported together (yet). Please '
                           'either set `strict=False` or `strategy="reverse-mode"`.')
    if not vectorize:  # as PyTorch: forward mode here is defined through vectorization
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian isonly implemented for `vectorize=True`.")
    from ..func import jvp as func_jvp, vmap
    in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs = tuple(x.detach() for x in inputs)
    flags, outputs = [], []

    def f(*xs):
        is_tuple, outs = _as_tuple(func(*xs), "outputs of the user-provided function",
                                   "jacobian")
        flags[:] = [is_tuple]
        return outs

    def column(*basis):  # one JVP per input element, batched by vmap
        tangents = tuple(e.reshape(x.shape) for e, x in zip(basis, inputs))
        primal, jv = func_jvp(f, inputs, tangents)
        outputs[:] = primal
        return jv

    chunks, numels = _standard_basis(inputs)
    cols = vmap(column)(*chunks)  # per output: (total input numel, *output.shape)
    jac = []
    for out, col in zip(outputs, cols):
        flat = col.reshape(col.shape[0], -1).t()  # (output numel, total input numel)
        row, start = [], 0
        for x, n in zip(inputs, numels):
            row.append(flat[:, start:start + n].reshape(tuple(out.shape) + tuple(x.shape)))
            start += n
        jac.append(tuple(row))
    return _unpack(tuple(jac), (flags[0], in_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """`torch.autograd.functional.jacobian`: J[i][j] has shape outputs[i].shape +
    inputs[j].shape (the tuple levels dropped where func/inputs are single Tensors)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, '
                             '"forward-mode" tends to be more performant. Otherwise, prefer to '
                             'use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` '
                                      'and `strategy="forward-mode"` are not supported together '
                                      '(yet). Please either set `create_graph=False` or '
                                      '`strategy="reverse-mode"`.')
        return _jac_forward(func, inputs, strict, vectorize)
    with grad_mode.enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _preprocess(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _outputs(func, inputs, "jacobian", strict)
        if vectorize:
            if strict:
                raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                                   "`vectorized=True` are not supported together. Please "
                                   "either set `strict=False` or `vectorize=False`.")
            jac = _jac_reverse_vectorized(outputs, inputs, create_graph)
        else:
            jac = _jac_reverse_rows(outputs, inputs, create_graph, strict)
    return _unpack(_postprocess(jac, create_graph), (out_tuple, in_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """`torch.autograd.functional.hessian` of a function returning one single-element Tensor:
    the Jacobian of its (graph-building) Jacobian; H[i][j] has shape inputs[i].shape +
    inputs[j].shape."""
    in_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_func(*xs):
        out = func(*xs)
        is_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if is_tuple:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def jac_func(*xs):
        if outer_jacobian_strategy == "forward-mode":
            xs = tuple(x.requires_grad_(True) if not x.requires_grad else x for x in xs)
        jac = jacobian(scalar_func, xs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _unpack(res, (in_tuple, in_tuple))


# ----------------------------------------------------------------------------- vhp / hvp
def _first_grads(func, inputs, v, create_graph, strict, fn_name):
    in_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _preprocess(inputs, create_graph, need_graph=True)
    v = _prepare_v(v, inputs, in_tuple, create_graph, fn_name,
                   "input to the user-provided function is")
    out_tuple, outputs = _outputs(func, inputs, fn_name, strict)
    _single_output(out_tuple, outputs, fn_name)
    jac = _grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return in_tuple, inputs, v, out_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """`torch.autograd.functional.vhp`: -> (func(inputs), v^T H)."""
    with grad_mode.enable_grad():
        in_tuple, inputs, v, out_tuple, outputs, jac = _first_grads(
            func, inputs, v, create_graph, strict, "vhp")
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        res = _grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "double_back")
    return (_unpack(_postprocess(outputs, create_graph), out_tuple),
            _unpack(_postprocess(res, create_graph), in_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """`torch.autograd.functional.hvp`: -> (func(inputs), H v), by the double-backward trick
    on top of the first gradient."""
    with grad_mode.enable_grad():
        in_tuple, inputs, v, out_tuple, outputs, jac = _first_grads(
            func, inputs, v, create_graph, strict, "hvp")
        dummies = tuple(_zeros_like(x, requires_grad=True) for x in inputs)
        double_back = _grad(jac, inputs, dummies, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        res = _grad(double_back, dummies, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "double_back_trick")
    return (_unpack(_postprocess(outputs, create_graph), out_tuple),
            _unpack(_postprocess(res, create_graph), in_tuple))
