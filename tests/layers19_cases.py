"""The cases of tests/test_nn_layers19.py, importable without jitorch (tests/gen_nn_refs.py
evaluates them under PyTorch).

Each case is a constructor string evaluated against `L.nn`, the input shapes and, where the
call is not `m(*inputs)`, a call expression; `run(L, case)` is written once for both
libraries. Weights and inputs come from `_fill`.
"""
import numpy as np

CASES = [
    ("conv3d_groups", "Conv3d(2, 4, (2, 3, 2), stride=(1, 2, 1), padding=1, groups=2)",
     [(2, 2, 3, 5, 4)], None),
    ("conv3d_same_circular", "Conv3d(2, 3, 3, padding='same', padding_mode='circular', "
     "bias=False)", [(2, 3, 4, 3)], None),
    ("convt3d", "ConvTranspose3d(2, 4, 2, stride=2, padding=(0, 1, 0), output_padding=1, "
     "groups=2)", [(1, 2, 2, 3, 2)], None),
    ("maxpool3d", "MaxPool3d(2, stride=2, padding=1, ceil_mode=True)", [(2, 2, 3, 4, 5)], None),
    ("avgpool3d", "AvgPool3d(3, stride=2, padding=1, count_include_pad=False)",
     [(1, 2, 4, 5, 3)], None),
    ("adaptive_avg3d", "AdaptiveAvgPool3d((2, 3, None))", [(2, 3, 5, 4, 3)], None),
    ("adaptive_max3d", "AdaptiveMaxPool3d(2)", [(2, 5, 4, 3)], None),
    ("lppool1d", "LPPool1d(2, 3, stride=2)", [(2, 3, 8)], None),
    ("lppool2d", "LPPool2d(2, (2, 3))", [(2, 4, 5)], None),
    ("lppool3d", "LPPool3d(2, 2)", [(1, 2, 4, 4, 3)], None),
    ("bilinear", "Bilinear(3, 4, 5)", [(2, 3), (2, 4)], None),
    ("ctc_mean", "CTCLoss()", [(6, 2, 4)],
     "m(x.log_softmax(2), L.tensor([[1, 2, 2], [3, 1, 0]]), [6, 5], [3, 2])"),
    ("ctc_sum_blank", "CTCLoss(blank=3, reduction='none', zero_infinity=True)", [(5, 3, 4)],
     "m(x.log_softmax(2), L.tensor([1, 2, 0, 0, 1, 1, 1]), L.tensor([5, 4, 2]), "
     "L.tensor([2, 2, 3]))"),
    ("adaptive_softmax", "AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0)",
     [(5, 8)], "list(m(x, L.tensor([0, 4, 9, 2, 7]))) + [m.log_prob(x), m.predict(x)]"),
    ("lrn", "LocalResponseNorm(3, alpha=0.5, k=2.0)", [(2, 5, 3, 4)], None),
    ("lrn_3d", "LocalResponseNorm(2, beta=0.5)", [(2, 4, 5)], None),
    ("max_unpool2d", "MaxUnpool2d(2, stride=2)", [(1, 2, 5, 4)],
     "m(*L.nn.functional.max_pool2d(x, 2, return_indices=True), output_size=(5, 4))"),
    ("multi_margin", "MultiMarginLoss(p=2, margin=0.5, weight=L.tensor([1., 2, 3, 4]))",
     [(3, 4)], "m(x, L.tensor([1, 0, 3]))"),
    ("multilabel_margin", "MultiLabelMarginLoss(reduction='sum')", [(2, 4)],
     "m(x, L.tensor([[3, 0, -1, 1], [2, -1, 0, 0]]))"),
    ("triplet_distance", "TripletMarginWithDistanceLoss(margin=2.0, swap=True)",
     [(3, 4), (3, 4), (3, 4)], None),
    ("rrelu_eval", "RReLU(0.1, 0.3).eval()", [(2, 5)], None),
    ("fractional_max2d", "FractionalMaxPool2d(3, output_size=(4, 5), return_indices=True, "
     "_random_samples=L.tensor([[[0.1, 0.7], [0.5, 0.2]]]))", [(1, 2, 9, 8)], None),
    ("fractional_max3d", "FractionalMaxPool3d(2, output_ratio=0.5, "
     "_random_samples=L.tensor([[[0.2, 0.6, 0.9]]]))", [(1, 1, 6, 7, 5)], None),
    ("lazy_linear", "LazyLinear(4)", [(3, 5)], None),
    ("lazy_conv2d", "LazyConv2d(3, 2, padding=1)", [(1, 2, 4, 4)], None),
    ("lazy_convt1d", "LazyConvTranspose1d(4, 3, stride=2)", [(2, 3, 4)], None),
    ("lazy_batchnorm2d", "LazyBatchNorm2d()", [(2, 3, 2, 2)], None),
    ("lazy_instancenorm1d", "LazyInstanceNorm1d(affine=True)", [(2, 3, 4)], None),
]


def _fill(shape, seed):
    n = int(np.prod(shape)) if len(shape) else 1
    return (np.sin(np.arange(n) * 0.731 + seed * 1.3) * 0.4).reshape(shape).astype(np.float32)


def run(L, case):
    """Outputs and gradients of one case under library L (torch or jitorch)."""
    _, ctor, shapes, call = case
    m = eval("L.nn." + ctor)
    xs = [L.tensor(_fill(s, 100 + j)).requires_grad_() for j, s in enumerate(shapes)]
    if ctor.startswith("Lazy"):
        with L.no_grad():
            m(*xs)  # materialises the parameters from the input's sizes
    m.load_state_dict({k: L.tensor(_fill(tuple(v.shape), i)) if v.is_floating_point() else v
                       for i, (k, v) in enumerate(m.state_dict().items())})
    out = eval(call, {"L": L, "m": m, "x": xs[0]}) if call else m(*xs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    loss = sum((o * L.tensor(_fill(tuple(o.shape), 300 + i))).sum()
               for i, o in enumerate(outs) if o.is_floating_point())
    loss.backward()
    res = {"outs": [o.detach().double().numpy().ravel().tolist() for o in outs],
           "shapes": [list(o.shape) for o in outs],
           "grads": [x.grad.double().numpy().ravel().tolist() for x in xs],
           "param_grads": [p.grad.double().numpy().ravel().tolist() for p in m.parameters()
                           if p.grad is not None],
           "type": type(m).__name__}
    return res
