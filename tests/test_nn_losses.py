"""nn loss modules (issue 4): values and gradients vs PyTorch, buffers, reductions, errors.

Reference numbers were computed with PyTorch 2.13 from the same deterministic inputs (NumPy
sin ramps) and are embedded below (REF).
"""
import warnings

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn

# (constructor expression, inputs); `W(*shape)` is a positive weight tensor of the library.
# input kinds: x = float requiring grad, p = probability requiring grad, t = float target,
# pt = probability target, long / sign = literal targets
CASES = {
    "mse": ("nn.MSELoss()", [("x", (3, 4)), ("t", (3, 4))]),
    "mse_sum": ("nn.MSELoss(reduction='sum')", [("x", (3, 4)), ("t", (3, 4))]),
    "l1_none": ("nn.L1Loss(reduction='none')", [("x", (2, 3)), ("t", (2, 3))]),
    "smooth_l1": ("nn.SmoothL1Loss(beta=0.5)", [("x", (3, 4)), ("t", (3, 4))]),
    "huber": ("nn.HuberLoss(delta=0.7)", [("x", (3, 4)), ("t", (3, 4))]),
    "ce": ("nn.CrossEntropyLoss()", [("x", (3, 5)), ("long", [1, 0, 4])]),
    "ce_weight_ignore": ("nn.CrossEntropyLoss(weight=W(5), ignore_index=0)",
                         [("x", (4, 5)), ("long", [1, 0, 4, 2])]),
    "ce_smooth": ("nn.CrossEntropyLoss(weight=W(5), label_smoothing=0.1)",
                  [("x", (3, 5)), ("long", [1, 0, 4])]),
    "ce_4d": ("nn.CrossEntropyLoss(reduction='sum')",
              [("x", (2, 3, 2, 2)), ("long", [[[0, 1], [2, 1]], [[1, 1], [0, 2]]])]),
    "ce_probs": ("nn.CrossEntropyLoss()", [("x", (2, 4)), ("pt", (2, 4))]),
    "nll": ("nn.NLLLoss(weight=W(4))", [("x", (3, 4)), ("long", [3, 0, 1])]),
    "nll_ignore_none": ("nn.NLLLoss(ignore_index=1, reduction='none')",
                        [("x", (3, 4)), ("long", [3, 1, 1])]),
    "bce": ("nn.BCELoss()", [("p", (2, 3)), ("pt", (2, 3))]),
    "bce_weight": ("nn.BCELoss(weight=W(3), reduction='sum')", [("p", (2, 3)), ("pt", (2, 3))]),
    "bce_logits": ("nn.BCEWithLogitsLoss()", [("x", (2, 3)), ("pt", (2, 3))]),
    "bce_logits_pos": ("nn.BCEWithLogitsLoss(weight=W(3), pos_weight=W(3))",
                       [("x", (2, 3)), ("pt", (2, 3))]),
    "kl": ("nn.KLDivLoss(reduction='batchmean')", [("x", (2, 4)), ("pt", (2, 4))]),
    "kl_log_target": ("nn.KLDivLoss(reduction='sum', log_target=True)",
                      [("x", (2, 4)), ("t", (2, 4))]),
    "cosine": ("nn.CosineEmbeddingLoss(margin=0.2)",
               [("x", (3, 4)), ("x", (3, 4)), ("sign", [1.0, -1.0, -1.0])]),
    "margin_ranking": ("nn.MarginRankingLoss(margin=0.3, reduction='none')",
                       [("x", (4,)), ("x", (4,)), ("sign", [1.0, -1.0, 1.0, -1.0])]),
}


REPR_CASES = ["nn.MSELoss()", "nn.CrossEntropyLoss(label_smoothing=0.1)", "nn.HuberLoss()",
              "nn.BCEWithLogitsLoss()", "nn.KLDivLoss()", "nn.MarginRankingLoss(0.5)"]
STATE_CASES = ["nn.CrossEntropyLoss(weight=W(5))", "nn.CrossEntropyLoss()", "nn.NLLLoss(W(3))",
               "nn.BCELoss(weight=W(2))", "nn.BCEWithLogitsLoss(pos_weight=W(3))",
               "nn.BCEWithLogitsLoss(W(2), pos_weight=W(2))", "nn.MSELoss()"]


def data(shape, phase=0.1, scale=1.5):
    n = int(np.prod(shape)) if len(shape) else 1
    return (np.sin(np.arange(n) * 0.37 + phase) * scale).astype(np.float32).reshape(shape)


def make_case(lib_nn, lib, name):
    expr, specs = CASES[name]

    def W(*shape):
        return lib.tensor(np.abs(data(shape, phase=0.7)) + 0.2)

    m = eval(expr, {"nn": lib_nn, "W": W})
    inputs = []
    for k, spec in enumerate(specs):
        kind = spec[0]
        if kind in ("long", "sign"):
            inputs.append(lib.tensor(spec[1], dtype=lib.long if kind == "long" else None))
            continue
        arr = data(spec[1], phase=0.1 + 1.3 * k)
        if kind in ("p", "pt"):
            arr = (1 / (1 + np.exp(-arr))).astype(np.float32)
        t = lib.tensor(arr)
        inputs.append(t.requires_grad_() if kind in ("x", "p") else t)
    return m, inputs


def run_case(lib_nn, lib, name):
    m, inputs = make_case(lib_nn, lib, name)
    out = m(*inputs)
    c = lib.tensor(np.cos(np.arange(out.numel()) * 0.53 + 0.2).astype(np.float32)).reshape(
        tuple(out.shape))
    (out * c).sum().backward()
    res = {"out": out.detach().reshape(-1).tolist()}
    for k, t in enumerate(inputs):
        if t.requires_grad:
            res[f"g{k}"] = t.grad.reshape(-1).tolist()
    return res


# ---- REF BEGIN (generated with PyTorch 2.13; do not edit by hand) ----
REF = {'bce': {'g0': [-0.1819555, -0.1094039, -0.0230383, 0.09771971, 0.2428836, 0.3502673],
         'out': [0.6878894]},
 'bce_logits': {'g0': [-0.0452348, -0.02442318, -0.004279955, 0.01547456, 0.03622669, 0.05580257],
                'out': [0.6878893]},
 'bce_logits_pos': {'g0': [-0.06469582, -0.07195457, -0.04362759, 0.0136227, 0.04103128,
                           0.07684367],
                    'out': [1.154016]},
 'bce_weight': {'g0': [-1.273317, -0.9950072, -0.2332196, 0.6838385, 2.208979, 3.5458],
                'out': [6.067226]},
 'ce': {'g0': [0.02574348, -0.2829708, 0.06772098, 0.0901843, 0.09932207, -0.2040874, 0.0912722,
               0.05856268, 0.03438953, 0.01986303, 0.09212631, 0.06383046, 0.05262445, 0.05299194,
               -0.2615731],
        'out': [1.53472]},
 'ce_4d': {'g0': [-0.8119886, 0.29054, 0.4639879, 0.6360233, 0.6484692, -0.3866769, 0.4554295,
                  -0.6792774, 0.1635193, 0.09613691, -0.9194174, 0.0432542, 0.04482082, 0.03826668,
                  -0.9360539, 0.06239161, -0.847086, -0.7846166, 0.3103459, 0.4662704, 0.8022653,
                  0.7463499, 0.6257079, -0.528662],
           'out': [13.71682]},
 'ce_probs': {'g0': [-0.2261993, -0.1049419, 0.07261284, 0.2585283, -0.02480159, 0.01498617,
                     0.01516578, -0.005350223],
              'out': [3.448858]},
 'ce_smooth': {'g0': [0.02286214, -0.2840894, 0.0667237, 0.0916663, 0.1028373, -0.1485056,
                      0.07259899, 0.04317524, 0.02217659, 0.01055477, 0.09097009, 0.05965608,
                      0.04709756, 0.04762513, -0.2453489],
               'out': [1.609779]},
 'ce_weight_ignore': {'g0': [0.02526707, -0.2777341, 0.06646772, 0.08851533, 0.09748399, 0.0, 0.0,
                             0.0, 0.0, 0.0, 0.08531246, 0.05910943, 0.04873224, 0.04907255,
                             -0.2422267, 0.02004625, 0.03296278, -0.2997555, 0.09693518,
                             0.1498114],
                      'out': [1.822963]},
 'cosine': {'g0': [-0.08651142, -0.04970395, -0.006169297, 0.03820035, 0.0, 0.0, 0.0, 0.0,
                   -0.1139522, -0.07358681, -0.0232618, 0.03021159],
            'g1': [0.04592764, 0.01096116, -0.02548885, -0.05848907, 0.0, 0.0, 0.0, 0.0,
                   0.05323017, 0.01578337, -0.02379963, -0.06016146],
            'out': [0.243467]},
 'huber': {'g0': [-0.05717055, -0.05717055, -0.01196751, 0.04228805, 0.05717055, 0.05717055,
                  0.05717055, 0.05717055, 0.05717055, 0.05717055, 0.03846233, -0.01592586],
           'out': [0.4988446]},
 'kl': {'g0': [-0.3990325, -0.3984503, -0.3820433, -0.3469391, -0.291954, -0.225178, -0.1636275,
               -0.1200688],
        'out': [-3.375306]},
 'kl_log_target': {'g0': [-4.297527, -4.263976, -3.467247, -2.376221, -1.444545, -0.8332451,
                          -0.4913082, -0.3180721],
                   'out': [4.093376]},
 'l1_none': {'g0': [-0.9800666, -0.7451744, -0.3058169, -0.2174524, -0.6810559, -0.9577872],
             'out': [1.328424, 0.7910072, 0.146531, 0.5177776, 1.112007, 1.555732]},
 'margin_ranking': {'g0': [-0.9800666, 0.0, -0.3058169, -0.2174524],
                    'g1': [0.9800666, -0.0, 0.3058169, 0.2174524],
                    'out': [1.628424, 0.0, 0.446531, 0.8177776]},
 'mse': {'g0': [-0.2169907, -0.1292066, -0.02393502, 0.0845761, 0.1816402, 0.2541202, 0.2922062,
                0.2907435, 0.24993, 0.1752896, 0.07692465, -0.03185172],
         'out': [1.371477]},
 'mse_sum': {'g0': [-2.603889, -1.55048, -0.2872202, 1.014913, 2.179682, 3.049443, 3.506474,
                    3.488922, 2.99916, 2.103475, 0.9230958, -0.3822207],
             'out': [16.45773]},
 'nll': {'g0': [0.0, 0.0, 0.0, -0.3743025, -0.2634173, 0.0, 0.0, 0.0, 0.0, -0.3423468, 0.0, 0.0],
         'out': [-0.7901055]},
 'nll_ignore_none': {'g0': [0.0, 0.0, 0.0, -0.9800666, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                     'out': [-1.403424, 0.0, 0.0]},
 'smooth_l1': {'g0': [-0.08167222, -0.08167222, -0.02393502, 0.08167222, 0.08167222, 0.08167222,
                      0.08167222, 0.08167222, 0.08167222, 0.08167222, 0.07692465, -0.03185172],
               'out': [0.7923558]}}
REPRS = {'nn.BCEWithLogitsLoss()': 'BCEWithLogitsLoss()',
 'nn.CrossEntropyLoss(label_smoothing=0.1)': 'CrossEntropyLoss()',
 'nn.HuberLoss()': 'HuberLoss()',
 'nn.KLDivLoss()': 'KLDivLoss()',
 'nn.MSELoss()': 'MSELoss()',
 'nn.MarginRankingLoss(0.5)': 'MarginRankingLoss()'}
STATES = {'nn.BCELoss(weight=W(2))': [('weight', (2,), 'float32')],
 'nn.BCEWithLogitsLoss(W(2), pos_weight=W(2))': [('weight', (2,), 'float32'),
                                                 ('pos_weight', (2,), 'float32')],
 'nn.BCEWithLogitsLoss(pos_weight=W(3))': [('pos_weight', (3,), 'float32')],
 'nn.CrossEntropyLoss()': [],
 'nn.CrossEntropyLoss(weight=W(5))': [('weight', (5,), 'float32')],
 'nn.MSELoss()': [],
 'nn.NLLLoss(W(3))': [('weight', (3,), 'float32')]}
# ---- REF END ----


def W(*shape):
    return jitorch.ones(shape)


def _close(got, want, name, key):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{name}.{key}: shape {got.shape} vs {want.shape}"
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"{name}.{key}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_values_and_grads_match_pytorch(name):
    got = run_case(nn, jitorch, name)
    want = REF[name]
    assert sorted(got) == sorted(want)
    for key in want:
        _close(got[key], want[key], name, key)


@pytest.mark.parametrize("expr", REPR_CASES)
def test_loss_printed_form(expr):
    assert repr(eval(expr, {"nn": nn})) == REPRS[expr]


@pytest.mark.parametrize("expr", STATE_CASES)
def test_loss_buffers_in_state_dict(expr):
    sd = eval(expr, {"nn": nn, "W": W}).state_dict()
    got = [(k, tuple(v.shape), str(v.dtype).replace("jitorch.", "")) for k, v in sd.items()]
    assert got == [tuple(s) for s in STATES[expr]]


def test_weight_buffer_follows_dtype_conversion():
    m = nn.CrossEntropyLoss(weight=jitorch.ones(3)).double()
    assert m.weight.dtype == jitorch.float64
    x = jitorch.randn(2, 3, dtype=jitorch.float64)
    assert m(x, jitorch.tensor([0, 2])).dtype == jitorch.float64


def test_loss_modules_match_functional():
    x = jitorch.tensor(data((3, 4))).requires_grad_()
    t = jitorch.tensor(data((3, 4), phase=2.0))
    F = nn.functional
    assert jitorch.equal(nn.SmoothL1Loss(beta=0.5)(x, t), F.smooth_l1_loss(x, t, beta=0.5))
    assert jitorch.equal(nn.HuberLoss(reduction="none", delta=2.0)(x, t),
                         F.huber_loss(x, t, reduction="none", delta=2.0))
    y = jitorch.tensor([0, 3, 1])
    assert jitorch.equal(nn.CrossEntropyLoss(ignore_index=3)(x, y),
                         F.cross_entropy(x, y, ignore_index=3))


def test_legacy_size_average_reduce_flags():
    x = jitorch.tensor(data((2, 3)))
    t = jitorch.zeros(2, 3)
    with pytest.warns(UserWarning, match="please use reduction='sum' instead"):
        m = nn.MSELoss(size_average=False)
    assert m.reduction == "sum"
    _close(m(x, t).item(), float((data((2, 3)) ** 2).sum()), "mse", "legacy")
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert nn.L1Loss(reduce=False).reduction == "none"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert nn.NLLLoss().reduction == "mean"


def test_loss_errors():
    with pytest.raises(ValueError):
        nn.BCELoss()(jitorch.full((2,), 0.5), jitorch.full((3,), 0.5))
    with pytest.raises((ValueError, RuntimeError)):
        nn.MSELoss(reduction="bogus")(jitorch.ones(2), jitorch.ones(2))
    with pytest.raises((IndexError, RuntimeError)):
        nn.CrossEntropyLoss()(jitorch.randn(2, 3), jitorch.tensor([0, 3]))


def test_scripted_losses_match_eager():
    for name in ("ce_smooth", "bce_logits_pos"):
        m, inputs = make_case(nn, jitorch, name)
        want = m(*inputs)
        got = jitorch.jit.script(m)(*inputs)
        _close(got.tolist(), want.tolist(), name, "script")
