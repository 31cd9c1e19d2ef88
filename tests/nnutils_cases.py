"""The cases of tests/test_nn_utils_parametrize.py, written once against a library module `T`
(PyTorch or jitorch): tests/gen_nnutils_refs.py runs them with PyTorch and stores the results in
tests/nnutils_refs.json; the tests run them with jitorch and compare.

Each case returns {name: value}: arrays as nested lists, strings (state-dict keys, error
messages) as they are. Inputs come from NumPy's seeded generator, never the library's, and the
power-iteration buffers are set before use, so both libraries see the same numbers.
"""
import warnings

import numpy as np


def _t(T, a):
    return T.tensor(np.asarray(a, dtype=np.float64))


def _np(t):
    return t.detach().numpy().tolist()


def _linear(T, rng, out_f=4, in_f=3):
    m = T.nn.Linear(in_f, out_f).double()
    with T.no_grad():
        m.weight.copy_(_t(T, rng.randn(out_f, in_f)))
        m.bias.copy_(_t(T, rng.randn(out_f)))
    return m


def _conv(T, rng):
    m = T.nn.Conv2d(3, 4, 2).double()
    with T.no_grad():
        m.weight.copy_(_t(T, rng.randn(4, 3, 2, 2)))
        m.bias.copy_(_t(T, rng.randn(4)))
    return m


def _err(fn):
    try:
        fn()
    except Exception as e:  # the type and message, as the test compares them
        return f"{type(e).__name__}: {e}"
    return "no error"


def matrix_exp(T):
    rng = np.random.RandomState(0)
    a = _t(T, rng.randn(3, 3)).requires_grad_()
    b = _t(T, rng.randn(2, 2, 2) * 0.5)
    ga = _t(T, rng.randn(3, 3))
    e = T.matrix_exp(a)
    (g,) = T.autograd.grad(e, a, ga)
    x, y = _t(T, rng.randn(3, 4)), _t(T, rng.randn(4))
    A, tau = _t(T, rng.randn(4, 3)), _t(T, rng.rand(3) + 0.5)
    return {"exp": _np(e), "batched": _np(T.linalg.matrix_exp(b)), "grad": _np(g),
            "dist2": _np(T.dist(x, y)), "dist1": _np(T.dist(x, y, 1)),
            "dist_inf": _np(x.dist(y, float("inf"))),
            "householder": _np(T.linalg.householder_product(A, tau)),
            "err_int": _err(lambda: T.matrix_exp(T.ones(2, 2, dtype=T.long))),
            "err_shape": _err(lambda: T.matrix_exp(T.ones(2, 3)))}


def weight_norm(T):
    rng = np.random.RandomState(1)
    x = _t(T, rng.randn(5, 3))
    out = {}
    for dim in (0, None):
        m = T.nn.utils.parametrizations.weight_norm(_linear(T, rng), dim=dim)
        y = m(x)
        (y * _t(T, rng.randn(5, 4))).sum().backward()
        p = m.parametrizations.weight
        out[f"new{dim}"] = {"keys": sorted(m.state_dict()), "cls": type(m).__name__,
                            "y": _np(y), "g": _np(p.original0), "dg": _np(p.original0.grad),
                            "dv": _np(p.original1.grad)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            old = T.nn.utils.weight_norm(_linear(T, rng), dim=dim)
        y = old(x)
        (y * _t(T, rng.randn(5, 4))).sum().backward()
        out[f"old{dim}"] = {"keys": sorted(old.state_dict()), "y": _np(y),
                            "dg": _np(old.weight_g.grad), "dv": _np(old.weight_v.grad)}
        T.nn.utils.remove_weight_norm(old)
        out[f"old{dim}"]["removed"] = sorted(old.state_dict())
        out[f"old{dim}"]["w"] = _np(old.weight)
    # a state dict saved with the hook form loads into the parametrization
    src = T.nn.utils.weight_norm(_linear(T, rng))
    dst = T.nn.utils.parametrizations.weight_norm(_linear(T, rng))
    dst.load_state_dict(src.state_dict())
    out["compat"] = _np(dst.weight)
    out["err_twice"] = _err(lambda: T.nn.utils.weight_norm(src))
    out["err_remove"] = _err(lambda: T.nn.utils.remove_weight_norm(_linear(T, rng)))
    return out


def spectral_norm(T):
    rng = np.random.RandomState(2)
    x = _t(T, rng.randn(5, 3))
    u0, v0 = rng.randn(4), rng.randn(3)
    u0, v0 = u0 / np.linalg.norm(u0), v0 / np.linalg.norm(v0)
    out = {}
    m = T.nn.utils.parametrizations.spectral_norm(_linear(T, rng))
    sn = m.parametrizations.weight[0]
    with T.no_grad():
        sn._u.copy_(_t(T, u0))
        sn._v.copy_(_t(T, v0))
    y = m(x)
    (y * _t(T, rng.randn(5, 4))).sum().backward()
    out["new"] = {"keys": sorted(m.state_dict()), "y": _np(y), "u": _np(sn._u),
                  "v": _np(sn._v), "dw": _np(m.parametrizations.weight.original.grad)}
    m.eval()
    out["new"]["eval"] = _np(m(x))
    out["new"]["u_eval"] = _np(sn._u)
    old = T.nn.utils.spectral_norm(_linear(T, rng), n_power_iterations=3)
    with T.no_grad():
        old.weight_u.copy_(_t(T, u0))
        old.weight_v.copy_(_t(T, v0))
    y = old(x)
    (y * _t(T, rng.randn(5, 4))).sum().backward()
    out["old"] = {"keys": sorted(old.state_dict()), "y": _np(y), "u": _np(old.weight_u),
                  "dw": _np(old.weight_orig.grad)}
    T.nn.utils.remove_spectral_norm(old)
    out["old"]["removed"] = sorted(old.state_dict())
    out["old"]["w"] = _np(old.weight)
    out["err_iters"] = _err(lambda: T.nn.utils.parametrizations.spectral_norm(
        _linear(T, rng), n_power_iterations=0))
    out["err_dim"] = _err(lambda: T.nn.utils.parametrizations.spectral_norm(
        _linear(T, rng), dim=2))
    out["err_name"] = _err(lambda: T.nn.utils.parametrizations.spectral_norm(
        _linear(T, rng), name="nope"))
    return out


def orthogonal(T):
    rng = np.random.RandomState(3)
    out = {}
    for mp in ("matrix_exp", "cayley", "householder"):
        for shape in ((3, 3), (4, 3), (3, 4)):
            m = _linear(T, rng, *shape)
            T.nn.utils.parametrizations.orthogonal(m, orthogonal_map=mp)
            case = {"init": _np(m.weight), "keys": sorted(m.state_dict())}
            if shape == (3, 3):
                # a non-square base is completed with random columns: values after a step
                # depend on them
                with T.no_grad():
                    m.parametrizations.weight.original.add_(_t(T, rng.randn(*shape) * 0.2))
                w = m.weight
                (w * _t(T, rng.randn(*shape))).sum().backward()
                case["moved"] = _np(w)
                case["grad"] = _np(m.parametrizations.weight.original.grad)
            out[f"{mp}{shape}"] = case
    m = _linear(T, rng)
    T.nn.utils.parametrizations.orthogonal(m, orthogonal_map="householder",
                                           use_trivialization=False)
    out["no_trivialization"] = _np(m.weight)
    out["err_map"] = _err(lambda: T.nn.utils.parametrizations.orthogonal(
        _linear(T, rng), orthogonal_map="qr"))
    out["err_1d"] = _err(lambda: T.nn.utils.parametrizations.orthogonal(
        _linear(T, rng), name="bias"))
    return out


def parametrize(T):
    P = T.nn.utils.parametrize
    rng = np.random.RandomState(4)

    class Symmetric(T.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()

    class Scale(T.nn.Module):
        def forward(self, X):
            return 2 * X

        def right_inverse(self, X):
            return X / 2

    class Shift(T.nn.Module):  # no right_inverse: the original cannot be assigned
        def forward(self, X):
            return X + 1

    class Split(T.nn.Module):  # two originals: original0, original1
        def forward(self, a, b):
            return a + b

        def right_inverse(self, w):
            return w * 0.25, w * 0.75

    out = {}
    m = _linear(T, rng, 3, 3)
    P.register_parametrization(m, "weight", Symmetric())
    P.register_parametrization(m, "weight", Scale())
    out["two"] = _np(m.weight)
    out["keys"] = sorted(m.state_dict())
    out["cls"] = type(m).__name__
    out["is"] = [P.is_parametrized(m), P.is_parametrized(m, "weight"),
                 P.is_parametrized(m, "bias")]
    m.weight = _t(T, rng.randn(3, 3))  # through Scale's, then Symmetric's right_inverse
    out["assigned"] = _np(m.weight)
    with P.cached():
        out["cached_same"] = m.weight is m.weight
    out["uncached_same"] = m.weight is m.weight
    x = _t(T, rng.randn(2, 3))
    (m(x) * _t(T, rng.randn(2, 3))).sum().backward()
    out["grad"] = _np(m.parametrizations.weight.original.grad)
    P.remove_parametrizations(m, "weight")
    out["removed"] = [sorted(m.state_dict()), type(m).__name__, P.is_parametrized(m)]
    out["removed_w"] = _np(m.weight)

    m = _linear(T, rng, 3, 3)
    w0 = _np(m.weight)
    P.register_parametrization(m, "weight", Symmetric())
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    out["left_original"] = _np(m.weight)  # the right_inverse'd original: triu of w0
    out["w0"] = w0

    m = _linear(T, rng, 3, 3)
    P.register_parametrization(m, "weight", Split())
    out["split_keys"] = sorted(m.state_dict())
    out["split"] = _np(m.weight)
    out["err_leave"] = _err(lambda: P.remove_parametrizations(m, "weight",
                                                              leave_parametrized=False))
    P.remove_parametrizations(m, "weight")  # a new Parameter with the parametrized value
    out["split_removed"] = [sorted(m.state_dict()), type(m.weight).__name__, _np(m.weight)]

    class ToFloat(T.nn.Module):
        def forward(self, X):
            return X.float()

    out["err_dtype"] = _err(lambda: P.register_parametrization(_linear(T, rng), "weight",
                                                               ToFloat()))
    unsafe = P.register_parametrization(_linear(T, rng), "weight", ToFloat(), unsafe=True)
    out["unsafe_dtype"] = str(unsafe.weight.dtype).split(".")[-1]
    out["err_name"] = _err(lambda: P.register_parametrization(_linear(T, rng), "nope",
                                                              Scale()))
    out["err_remove"] = _err(lambda: P.remove_parametrizations(_linear(T, rng), "weight"))
    out["err_assign"] = _err(lambda: setattr(unsafe, "weight", _t(T, rng.randn(4, 3))))
    shifted = P.register_parametrization(_linear(T, rng), "weight", Shift())
    out["err_no_inverse"] = _err(lambda: setattr(shifted, "weight", _t(T, rng.randn(4, 3))))
    return out


def prune(T):
    import importlib
    pr = importlib.import_module(T.__name__ + ".nn.utils.prune")
    rng = np.random.RandomState(5)
    out = {}
    m = _conv(T, rng)
    pr.l1_unstructured(m, "weight", amount=0.3)
    out["keys"] = sorted(m.state_dict())
    out["hooks"] = [type(h).__name__ for h in m._forward_pre_hooks.values()]
    pr.ln_structured(m, "weight", amount=1, n=2, dim=0)
    pr.l1_unstructured(m, "weight", amount=5)
    out["container"] = [type(h).__name__ for h in m._forward_pre_hooks.values()]
    out["mask"] = _np(m.weight_mask)
    x = _t(T, rng.randn(2, 3, 5, 5))
    y = m(x)
    y.sum().backward()
    out["y"] = _np(y)
    out["grad"] = _np(m.weight_orig.grad)
    out["is_pruned"] = pr.is_pruned(m)
    pr.remove(m, "weight")
    out["removed"] = [sorted(m.state_dict()), pr.is_pruned(m), type(m.weight).__name__]
    out["w"] = _np(m.weight)
    a, b = _conv(T, rng), _linear(T, rng, 2, 3)
    pr.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=pr.L1Unstructured,
                           amount=20)
    out["global"] = [_np(a.weight_mask), _np(b.weight_mask)]
    c = _conv(T, rng)
    pr.custom_from_mask(c, "bias", _t(T, [1, 0, 1, 0]))
    pr.identity(c, "weight")
    out["custom"] = _np(c.bias)
    out["identity"] = _np(c.weight_mask)
    scores = _t(T, rng.rand(4, 3, 2, 2))
    d = _conv(T, rng)
    pr.ln_structured(d, "weight", amount=0.5, n=1, dim=1, importance_scores=scores)
    out["scored"] = _np(d.weight_mask)
    out["prune_fn"] = _np(pr.L1Unstructured(amount=2).prune(_t(T, [3, -1, 2, 0.5])))
    out["errors"] = [
        _err(lambda: pr.l1_unstructured(_conv(T, rng), "weight", amount=-1)),
        _err(lambda: pr.l1_unstructured(_conv(T, rng), "weight", amount=1.5)),
        _err(lambda: pr.l1_unstructured(_conv(T, rng), "weight", amount=100)),
        _err(lambda: pr.l1_unstructured(_conv(T, rng), "weight", amount="a")),
        _err(lambda: pr.ln_structured(_conv(T, rng), "bias", 1, 2, 0)),
        _err(lambda: pr.ln_structured(_conv(T, rng), "weight", 1, 2, 4)),
        _err(lambda: pr.global_unstructured([(_conv(T, rng), "weight")],
                                            pruning_method=pr.LnStructured, amount=1, n=2,
                                            dim=0))]
    return out


def fusion(T):
    rng = np.random.RandomState(6)
    out = {}

    def bn(cls, n):
        b = cls(n).double()
        with T.no_grad():
            b.running_mean.copy_(_t(T, rng.randn(n)))
            b.running_var.copy_(_t(T, rng.rand(n) + 0.5))
            b.weight.copy_(_t(T, rng.randn(n)))
            b.bias.copy_(_t(T, rng.randn(n)))
        return b.eval()

    c, b = _conv(T, rng).eval(), bn(T.nn.BatchNorm2d, 4)
    f = T.nn.utils.fuse_conv_bn_eval(c, b)
    x = _t(T, rng.randn(2, 3, 5, 5))
    out["conv"] = _np(f(x))
    out["conv_w"] = _np(f.weight)
    ct = T.nn.ConvTranspose2d(4, 3, 2).double().eval()
    with T.no_grad():
        ct.weight.copy_(_t(T, rng.randn(4, 3, 2, 2)))
        ct.bias.copy_(_t(T, rng.randn(3)))
    ft = T.nn.utils.fuse_conv_bn_eval(ct, bn(T.nn.BatchNorm2d, 3), transpose=True)
    out["convt"] = _np(ft(_t(T, rng.randn(1, 4, 3, 3))))
    lin = T.nn.Linear(3, 4, bias=False).double().eval()
    with T.no_grad():
        lin.weight.copy_(_t(T, rng.randn(4, 3)))
    fl = T.nn.utils.fuse_linear_bn_eval(lin, bn(T.nn.BatchNorm1d, 4))
    out["linear"] = _np(fl(_t(T, rng.randn(5, 3))))
    out["flags"] = [fl.bias.requires_grad, fl.weight.requires_grad, f.bias.requires_grad]
    out["err_train"] = _err(lambda: T.nn.utils.fuse_conv_bn_eval(c.train(), b))
    return out


CASES = {"matrix_exp": matrix_exp, "weight_norm": weight_norm, "spectral_norm": spectral_norm,
         "orthogonal": orthogonal, "parametrize": parametrize, "prune": prune, "fusion": fusion}
