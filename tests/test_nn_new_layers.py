"""The layers and functions issue 11 adds: interpolate / Upsample, PixelShuffle, InstanceNorm,
the padding layers, CosineSimilarity / PairwiseDistance, against PyTorch-generated numbers
(REFS at the bottom, from tests/gen_compat_refs.py) and PyTorch's errors.

Inputs are the deterministic `_input` formula, so the generator and the tests see the same
numbers without sharing a random generator.
"""
import math
import warnings

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
import jitorch.nn.functional as F


def _input(shape):
    n = int(np.prod(shape))
    return (np.sin(np.arange(n) * 0.37 + 0.1) * 2).reshape(shape)


# key -> (expression over F / nn / x, input shape); float64 inputs
CASES = {
    "nearest_scale": ("F.interpolate(x, scale_factor=2)", (1, 2, 3)),
    "nearest_frac": ("F.interpolate(x, scale_factor=1.7)", (1, 2, 5)),
    "nearest_size2d": ("F.interpolate(x, size=(5, 3))", (1, 1, 3, 4)),
    "nearest_exact": ("F.interpolate(x, size=(5, 3), mode='nearest-exact')", (1, 1, 3, 4)),
    "nearest_3d": ("F.interpolate(x, scale_factor=0.6)", (1, 1, 3, 4, 5)),
    "linear": ("F.interpolate(x, scale_factor=1.7, mode='linear')", (2, 1, 5)),
    "linear_ac": ("F.interpolate(x, size=8, mode='linear', align_corners=True)", (1, 2, 5)),
    "linear_down": ("F.interpolate(x, scale_factor=0.5, mode='linear')", (1, 1, 7)),
    "bilinear": ("F.interpolate(x, size=(7, 3), mode='bilinear')", (2, 1, 4, 5)),
    "bilinear_recompute": ("F.interpolate(x, scale_factor=1.3, mode='bilinear', "
                           "recompute_scale_factor=True)", (1, 2, 4, 5)),
    "bicubic": ("F.interpolate(x, scale_factor=(1.5, 2.3), mode='bicubic')", (1, 2, 4, 5)),
    "bicubic_ac": ("F.interpolate(x, scale_factor=(1.5, 2.3), mode='bicubic', "
                   "align_corners=True)", (1, 1, 4, 5)),
    "bicubic_down": ("F.interpolate(x, size=(5, 4), mode='bicubic')", (1, 1, 7, 9)),
    "trilinear": ("F.interpolate(x, size=(4, 6, 3), mode='trilinear')", (1, 1, 3, 4, 5)),
    "area": ("F.interpolate(x, size=(3, 4), mode='area')", (1, 2, 6, 7)),
    "area_empty": ("F.interpolate(x, scale_factor=0.58, mode='area')", (1, 1, 1)),
    # the CPU kernels' shortcuts: a linear-mode dim of unchanged size is copied (whatever the
    # scale); 2-D nearest copies / halves indices, 1-D nearest follows the formula
    "linear_same_size": ("F.interpolate(x, scale_factor=1.208, mode='linear')", (1, 1, 4)),
    "bilinear_same_dim": ("F.interpolate(x, scale_factor=1.39, mode='bilinear')", (1, 2, 3, 2)),
    "trilinear_same_dim": ("F.interpolate(x, scale_factor=1.38, mode='trilinear')",
                           (1, 1, 3, 5, 2)),
    "nearest2d_double": ("F.interpolate(x, scale_factor=2.03)", (1, 1, 1, 6)),
    "nearest1d_double": ("F.interpolate(x, scale_factor=2.0000001)", (1, 1, 7)),
    "bicubic_same_dim": ("F.interpolate(x, scale_factor=(1.3, 1.5), mode='bicubic')",
                         (1, 1, 2, 6)),
    "upsample_module": ("nn.Upsample(scale_factor=2, mode='bilinear')(x)", (1, 1, 2, 3)),
    "upsampling_bilinear2d": ("nn.UpsamplingBilinear2d(size=(4, 5))(x)", (1, 1, 2, 3)),
    "upsampling_nearest2d": ("nn.UpsamplingNearest2d(scale_factor=3)(x)", (1, 1, 2, 2)),
    "pixel_shuffle": ("nn.PixelShuffle(2)(x)", (2, 8, 2, 3)),
    "pixel_unshuffle": ("nn.PixelUnshuffle(2)(x)", (1, 2, 4, 6)),
    "instance_norm1d": ("nn.InstanceNorm1d(3)(x)", (2, 3, 5)),
    "instance_norm2d_unbatched": ("nn.InstanceNorm2d(2)(x)", (2, 3, 4)),
    "instance_norm3d": ("nn.InstanceNorm3d(2)(x)", (1, 2, 2, 3, 2)),
    "zeropad2d": ("nn.ZeroPad2d((1, 2, 0, 1))(x)", (1, 2, 3, 3)),
    "constantpad1d": ("nn.ConstantPad1d(2, 3.5)(x)", (1, 2, 3)),
    "constantpad3d": ("nn.ConstantPad3d((1, 0, 0, 1, 1, 1), -1.0)(x)", (1, 1, 2, 2, 2)),
    "reflectionpad1d": ("nn.ReflectionPad1d((2, 1))(x)", (1, 2, 4)),
    "reflectionpad2d": ("nn.ReflectionPad2d(2)(x)", (1, 1, 3, 4)),
    "reflectionpad3d": ("nn.ReflectionPad3d(1)(x)", (1, 1, 2, 3, 3)),
    "replicationpad2d": ("nn.ReplicationPad2d((1, 2, 2, 0))(x)", (1, 1, 3, 3)),
    "replicationpad3d": ("nn.ReplicationPad3d(1)(x)", (1, 1, 2, 2, 2)),
    "circularpad1d": ("nn.CircularPad1d((1, 2))(x)", (1, 2, 4)),
    "circularpad2d": ("nn.CircularPad2d(1)(x)", (1, 1, 3, 3)),
    "zeropad_negative": ("nn.ZeroPad2d((-1, 1, 0, -1))(x)", (1, 1, 3, 4)),
    "cosine_similarity": ("nn.CosineSimilarity(dim=-1)(x, x.flip(0) + 0.5)", (3, 4)),
    "pairwise_distance": ("nn.PairwiseDistance(p=1.5, keepdim=True)(x, x.flip(0))", (3, 4)),
    "pdist": ("F.pdist(x, p=1.5)", (4, 3)),
    "pdist2": ("F.pdist(x)", (5, 2)),
    "glu": ("nn.GLU(1)(x)", (2, 4, 3)),
    "prelu_channels": ("nn.PReLU(3).to(x.dtype)(x)", (2, 3, 4)),
    "prelu_fn": ("F.prelu(x, x[0, :, 0].abs())", (2, 3, 4)),
    "softmax2d": ("nn.Softmax2d()(x)", (2, 3, 2, 2)),
    "channel_shuffle": ("nn.ChannelShuffle(2)(x)", (1, 4, 2, 3)),
    "unfold": ("nn.Unfold(2, padding=1)(x)", (1, 2, 3, 4)),
    "fold": ("nn.Fold((3, 4), 2)(nn.Unfold(2)(x))", (1, 2, 3, 4)),
    "triplet": ("nn.TripletMarginLoss()(x, x.flip(0), x * 0.5 + 0.1)", (4, 3)),
    "triplet_swap": ("F.triplet_margin_loss(x, x.flip(0), x * 0.5 + 0.1, margin=0.5, p=1, "
                     "swap=True, reduction='none')", (4, 3)),
    "hinge": ("nn.HingeEmbeddingLoss(margin=0.7, reduction='sum')(x, x.flip(0).sign())",
              (3, 4)),
    "soft_margin": ("nn.SoftMarginLoss()(x, x.flip(0).sign())", (3, 4)),
    "poisson": ("nn.PoissonNLLLoss()(x, x.abs() * 2)", (3, 4)),
    "poisson_full": ("F.poisson_nll_loss(x.abs() + 0.1, (x * 3).abs().round(), log_input=False, "
                     "full=True, reduction='none')", (3, 4)),
    "gaussian": ("nn.GaussianNLLLoss()(x, x.flip(0), x.abs() + 0.1)", (3, 4)),
    "gaussian_homoscedastic": ("F.gaussian_nll_loss(x, x.flip(0), x[:, 0].abs() + 0.1, "
                               "full=True, reduction='none')", (3, 4)),
    "gaussian_float_var": ("F.gaussian_nll_loss(x, x * 0.5, 0.7, reduction='sum')", (3, 4)),
    "affine_grid": ("F.affine_grid(x.reshape(2, 2, 3), (2, 1, 3, 4), align_corners=False)",
                    (12,)),
    "affine_grid_ac": ("F.affine_grid(x.reshape(1, 2, 3), (1, 3, 2, 2), align_corners=True)",
                       (6,)),
    "grid_sample": ("F.grid_sample(x, F.affine_grid(torch.tensor([[[0.8, -0.3, 0.1], [0.2, 1.1, "
                    "-0.2]]], dtype=x.dtype), (1, 2, 3, 5), align_corners=False), "
                    "align_corners=False)", (1, 2, 3, 4)),
    "grid_sample_border_ac": ("F.grid_sample(x, x[:, :2].permute(0, 2, 3, 1) * 0.9, "
                              "padding_mode='border', align_corners=True)", (1, 2, 3, 4)),
    "grid_sample_nearest": ("F.grid_sample(x, x[:, :2].permute(0, 2, 3, 1) * 0.7, "
                            "mode='nearest', align_corners=False)", (1, 2, 3, 4)),
    "multilabel_soft_margin": ("nn.MultiLabelSoftMarginLoss(weight=x[0].abs())(x, "
                               "(x.flip(0) > 0).to(x.dtype))", (3, 4)),
}

REPRS = {
    "upsample": "nn.Upsample(scale_factor=2)",
    "upsample_size": "nn.Upsample(size=(3, 4), mode='bilinear')",
    "upsample_tuple": "nn.Upsample(scale_factor=(2, 3), mode='nearest')",
    "upsampling_bilinear": "nn.UpsamplingBilinear2d(size=3)",
    "pixel_shuffle": "nn.PixelShuffle(3)",
    "pixel_unshuffle": "nn.PixelUnshuffle(2)",
    "instance_norm": "nn.InstanceNorm2d(3)",
    "instance_norm_affine": "nn.InstanceNorm1d(4, affine=True, track_running_stats=True)",
    "zeropad": "nn.ZeroPad2d((1, 2, 3, 4))",
    "fold": "nn.Fold((4, 5), 2)",
    "unfold": "nn.Unfold(2, padding=1)",
    "prelu": "nn.PReLU(3)",
    "glu": "nn.GLU()",
    "channel_shuffle": "nn.ChannelShuffle(2)",
    "triplet": "nn.TripletMarginLoss(margin=0.5, swap=True)",
    "constantpad": "nn.ConstantPad1d(2, 3.5)",
    "reflectionpad": "nn.ReflectionPad2d(1)",
    "replicationpad": "nn.ReplicationPad3d(1)",
    "circularpad": "nn.CircularPad2d(1)",
    "cosine": "nn.CosineSimilarity()",
    "pairwise": "nn.PairwiseDistance()",
    "batchnorm3d": "nn.BatchNorm3d(4)",
    "dropout3d": "nn.Dropout3d(0.3)",
}

# running statistics after two training calls (x, then 2x + 1), then eval output on x (float32)
STATS = {
    "in2d_track": ("nn.InstanceNorm2d(3, track_running_stats=True)", (2, 3, 2, 3)),
    "in1d_affine_momentum": ("nn.InstanceNorm1d(2, affine=True, track_running_stats=True, "
                             "momentum=0.3)", (3, 2, 4)),
}


def _eval(expr, x):
    return eval(expr, {"F": F, "nn": nn, "x": x, "torch": jitorch})


@pytest.mark.parametrize("key", sorted(CASES))
def test_matches_pytorch(key):
    expr, shape = CASES[key]
    got = _eval(expr, jitorch.tensor(_input(shape))).detach()
    np.testing.assert_allclose(got.numpy().ravel(), REFS[key], rtol=1e-7, atol=1e-8,
                               err_msg=expr)


@pytest.mark.parametrize("key", sorted(CASES))
def test_float32_agrees(key):
    """float32 runs in float32 (coordinates too), close to the float64 reference."""
    expr, shape = CASES[key]
    got = _eval(expr, jitorch.tensor(_input(shape)).float()).detach()
    assert got.dtype is jitorch.float32
    np.testing.assert_allclose(got.numpy().ravel(), REFS[key], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("key", sorted(REPRS))
def test_repr_matches_pytorch(key):
    assert repr(eval(REPRS[key], {"nn": nn})) == REFS["repr:" + key]


@pytest.mark.parametrize("key", sorted(STATS))
def test_instance_norm_running_stats(key):
    expr, shape = STATS[key]
    m = eval(expr, {"nn": nn})
    x = jitorch.tensor(_input(shape)).float()
    m(x)
    m(x * 2 + 1)
    got = np.concatenate([m.running_mean.numpy(), m.running_var.numpy()])
    np.testing.assert_allclose(got, REFS["stats:" + key], rtol=1e-5, atol=1e-6)
    m.eval()
    np.testing.assert_allclose(m(x).detach().numpy().ravel(), REFS["eval:" + key], rtol=1e-5,
                               atol=1e-5)


# --- gradients ---------------------------------------------------------------------------------
GRAD_CASES = ["bicubic", "bilinear", "linear_ac", "trilinear", "nearest_frac", "pixel_shuffle",
              "instance_norm1d", "reflectionpad2d", "circularpad1d", "cosine_similarity",
              "pairwise_distance", "nearest_exact", "pdist", "glu", "prelu_fn", "softmax2d",
              "channel_shuffle", "fold", "triplet_swap", "soft_margin", "poisson",
              "gaussian", "gaussian_homoscedastic", "multilabel_soft_margin", "affine_grid",
              "grid_sample"]


@pytest.mark.parametrize("key", GRAD_CASES)
def test_gradients_match_finite_differences(key):
    expr, shape = CASES[key]
    x = jitorch.tensor(_input(shape) * 0.7 + 0.05, requires_grad=True)
    assert jitorch.autograd.gradcheck(lambda t: _eval(expr, t), (x,), eps=1e-6, atol=1e-5,
                                      rtol=1e-3)


def test_grid_sample_gradient_in_the_grid():
    x = jitorch.tensor(_input((1, 2, 3, 4)))
    g = jitorch.tensor(_input((1, 2, 3, 2)) * 0.45 + 0.013, requires_grad=True)
    for pm, ac in (("zeros", False), ("border", True)):
        assert jitorch.autograd.gradcheck(
            lambda g: F.grid_sample(x, g, padding_mode=pm, align_corners=ac), (g,), eps=1e-6,
            atol=1e-5, rtol=1e-3)


def test_grid_sample_checks():
    x, g = jitorch.zeros(1, 1, 2, 2), jitorch.zeros(1, 1, 1, 2)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(x, g)
    _raises(NotImplementedError, "bicubic", lambda: F.grid_sample(x, g, mode="bicubic",
                                                                 align_corners=False))
    _raises(ValueError, "expected padding_mode", lambda: F.grid_sample(x, g, padding_mode="x",
                                                                      align_corners=False))
    _raises(ValueError, "Nx2x3", lambda: F.affine_grid(jitorch.zeros(1, 3, 3), (1, 1, 2, 2),
                                                       align_corners=False))


def test_instance_norm_affine_gradients():
    x = jitorch.tensor(_input((2, 3, 4)), requires_grad=True)
    w = jitorch.tensor([0.5, 1.5, -1.0], dtype=jitorch.float64, requires_grad=True)
    b = jitorch.tensor([0.1, 0.0, 0.3], dtype=jitorch.float64, requires_grad=True)
    assert jitorch.autograd.gradcheck(
        lambda x, w, b: F.instance_norm(x, weight=w, bias=b), (x, w, b), eps=1e-6, atol=1e-5,
        rtol=1e-3)


def test_super_resolution_net_trains():
    """A PixelShuffle upscaler (PyTorch's super-resolution example, small): a few SGD steps
    lower the loss."""
    jitorch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 3, padding=1),
                        nn.PixelShuffle(2))
    hr = jitorch.tensor(_input((4, 1, 8, 8))).float()
    lr = F.interpolate(hr, scale_factor=0.5, mode="bilinear", align_corners=False)
    opt = jitorch.optim.Adam(net.parameters(), lr=0.02)
    losses = []
    for _ in range(25):
        opt.zero_grad()
        loss = F.mse_loss(net(lr), hr)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0], losses


def test_scripted_and_traced_modules_agree_with_eager():
    class Up(nn.Module):
        def __init__(self):
            super().__init__()
            self.pad = nn.ReflectionPad2d(1)
            self.norm = nn.InstanceNorm2d(2)

        def forward(self, x):
            y = F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
            return self.norm(self.pad(y))

    m = Up()
    x = jitorch.tensor(_input((1, 2, 3, 3))).float()
    want = m(x).numpy()
    np.testing.assert_allclose(jitorch.jit.script(m)(x).numpy(), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(jitorch.jit.trace(m, (x,))(x).numpy(), want, rtol=1e-6,
                               atol=1e-6)


SCRIPTED = {
    "instance_norm_affine": ("nn.InstanceNorm2d(4, affine=True)", [(2, 4, 3, 3)]),
    "instance_norm_unbatched": ("nn.InstanceNorm1d(4, track_running_stats=True)", [(4, 5)]),
    "prelu": ("nn.PReLU(4)", [(2, 4, 3)]),
    "upsample": ("nn.Upsample(scale_factor=2, mode='bicubic')", [(1, 2, 3, 3)]),
    "glu": ("nn.GLU(1)", [(2, 4, 3)]),
    "pad": ("nn.ReplicationPad3d(1)", [(1, 1, 2, 2, 2)]),
    "triplet": ("nn.TripletMarginLoss(swap=True)", [(3, 4), (3, 4), (3, 4)]),
    "gaussian_nll": ("nn.GaussianNLLLoss()", [(3, 4), (3, 4), (3, 4)]),
}


@pytest.mark.parametrize("key", sorted(SCRIPTED))
def test_scripted_module_agrees_with_eager(key):
    expr, shapes = SCRIPTED[key]
    m = eval(expr, {"nn": nn})
    args = [jitorch.tensor(_input(s) + i).float().abs() + 0.1 for i, s in enumerate(shapes)]
    want = m(*args)
    np.testing.assert_allclose(jitorch.jit.script(m)(*args).detach().numpy(),
                               want.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_instance_norm_converts_like_any_module():
    m = nn.InstanceNorm2d(3, affine=True, track_running_stats=True).double()
    assert m.weight.dtype is jitorch.float64 and m.running_mean.dtype is jitorch.float64
    assert m(jitorch.tensor(_input((3, 2, 2)))).shape == (3, 2, 2)


# --- errors (PyTorch's types and messages) ---------------------------------------------------
def _raises(exc, match, fn):
    with pytest.raises(exc, match=match):
        fn()


def test_interpolate_errors():
    x = jitorch.zeros(1, 1, 4)
    _raises(ValueError, "only one of size or scale_factor",
            lambda: F.interpolate(x, size=3, scale_factor=2))
    _raises(ValueError, "either size or scale_factor", lambda: F.interpolate(x))
    _raises(ValueError, "align_corners option can only be set",
            lambda: F.interpolate(x, size=3, align_corners=True))
    _raises(NotImplementedError, "Got 3D input, but bilinear mode needs 4D input",
            lambda: F.interpolate(x, size=3, mode="bilinear"))
    _raises(ValueError, "same number of spatial dimensions",
            lambda: F.interpolate(x, size=(3, 4)))
    _raises(NotImplementedError, "antialias",
            lambda: F.interpolate(jitorch.zeros(1, 1, 4, 4), size=2, mode="bilinear",
                                  antialias=True))


def test_deprecated_upsample_names_warn_and_agree():
    x = jitorch.tensor(_input((1, 1, 2, 3)))
    for name, want in (("upsample", F.interpolate(x, scale_factor=2)),
                       ("upsample_nearest", F.interpolate(x, scale_factor=2)),
                       ("upsample_bilinear", F.interpolate(x, scale_factor=2, mode="bilinear",
                                                           align_corners=True))):
        with pytest.warns(UserWarning, match=f"`nn.functional.{name}` is deprecated"):
            got = getattr(F, name)(x, scale_factor=2)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_pixel_shuffle_errors():
    _raises(RuntimeError, "divisible by the square of upscale_factor",
            lambda: F.pixel_shuffle(jitorch.zeros(1, 5, 2, 2), 2))
    _raises(RuntimeError, "at least 3 dimensions", lambda: F.pixel_shuffle(jitorch.zeros(4), 2))
    _raises(RuntimeError, "height to be divisible",
            lambda: F.pixel_unshuffle(jitorch.zeros(1, 1, 3, 4), 2))


def test_instance_norm_checks():
    _raises(ValueError, "expected 2D or 3D input", lambda: nn.InstanceNorm1d(2)(jitorch.zeros(2)))
    _raises(ValueError, "more than 1 spatial element",
            lambda: nn.InstanceNorm1d(2)(jitorch.zeros(3, 2, 1)))
    _raises(ValueError, "to match num_features",
            lambda: nn.InstanceNorm1d(3, affine=True)(jitorch.zeros(2, 2, 4)))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nn.InstanceNorm1d(3)(jitorch.zeros(2, 2, 4))
    assert any("does not match num_features" in str(m.message) for m in w)


def test_padding_errors():
    _raises(RuntimeError, "Padding size should be less than",
            lambda: nn.ReflectionPad1d(3)(jitorch.zeros(1, 1, 3)))
    _raises(ValueError, "expected 2D or 3D input",
            lambda: nn.CircularPad1d(1)(jitorch.zeros(3)))
    # negative padding that leaves nothing: PyTorch's checks (1-D: at least one element)
    _raises(RuntimeError, r"input \(W: 1\) is too small. Calculated output W: 0",
            lambda: nn.ReplicationPad1d((0, -1))(jitorch.zeros(1, 2, 1)))
    _raises(RuntimeError, "negative dimension -1",
            lambda: nn.ReflectionPad2d((0, 0, -2, -1))(jitorch.zeros(1, 1, 2, 3)))
    assert nn.ReflectionPad2d((0, 0, -1, -1))(jitorch.zeros(1, 1, 2, 3)).shape == (1, 1, 0, 3)


def test_distance_errors():
    _raises(RuntimeError, "must match the size",
            lambda: F.cosine_similarity(jitorch.zeros(2, 3), jitorch.zeros(2, 4)))
    _raises(RuntimeError, "cdist only supports at least 2D",
            lambda: jitorch.cdist(jitorch.zeros(3), jitorch.zeros(3)))
    _raises(RuntimeError, "same number of columns",
            lambda: jitorch.cdist(jitorch.zeros(2, 3), jitorch.zeros(2, 4)))
    _raises(RuntimeError, "non-negative p", lambda: jitorch.cdist(jitorch.zeros(2, 3),
                                                                jitorch.zeros(2, 3), p=-1))
    _raises(ValueError, "not a valid value for compute_mode",
            lambda: jitorch.cdist(jitorch.zeros(2, 3), jitorch.zeros(2, 3), compute_mode="x"))


@pytest.mark.parametrize("fn,shape,lead", [("dropout3d", (3, 4, 2, 2, 2), 2),
                                           ("dropout3d", (4, 2, 2, 2), 1),
                                           ("dropout1d", (3, 4, 5), 2), ("dropout1d", (4, 5), 1),
                                           ("dropout2d", (3, 4, 2, 2), 2)])
def test_channel_dropout_functions(fn, shape, lead):
    """Whole channels are zeroed or scaled by 1 / (1 - p); eval mode is the identity."""
    jitorch.manual_seed(0)
    x = jitorch.ones(*shape, dtype=jitorch.float64)
    y = getattr(F, fn)(x, 0.5, training=True).numpy()
    per_channel = y.reshape(int(np.prod(shape[:lead])), -1)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert (per_channel.min(1) == per_channel.max(1)).all()  # one decision per channel
    assert 0 < (per_channel[:, 0] == 0).sum() < per_channel.shape[0]
    assert getattr(F, fn)(x, 0.5, training=False) is x


def test_new_activation_and_loss_errors():
    _raises(RuntimeError, "Halving dimension must be even, but dimension 1 is size 3",
            lambda: F.glu(jitorch.zeros(2, 3), 1))
    _raises(RuntimeError, "Mismatch of parameter numbers and input channel size",
            lambda: F.prelu(jitorch.zeros(2, 3), jitorch.ones(2)))
    _raises(RuntimeError, "pdist only supports 2D tensors, got: 3D",
            lambda: F.pdist(jitorch.zeros(2, 2, 2)))
    _raises(RuntimeError, "Number of channels must be divisible by groups",
            lambda: F.channel_shuffle(jitorch.zeros(1, 5, 2), 2))
    _raises(ValueError, "expected margin to be greater than 0",
            lambda: nn.TripletMarginLoss(margin=0.0))
    _raises(RuntimeError, "same number of dimensions",
            lambda: F.triplet_margin_loss(jitorch.zeros(2, 3), jitorch.zeros(3),
                                          jitorch.zeros(2, 3)))
    _raises(ValueError, "var is of incorrect size",
            lambda: F.gaussian_nll_loss(jitorch.zeros(2, 3), jitorch.zeros(2, 3),
                                        jitorch.ones(3, 2)))
    _raises(ValueError, "var has negative entry",
            lambda: F.gaussian_nll_loss(jitorch.zeros(2, 3), jitorch.zeros(2, 3),
                                        -jitorch.ones(2, 3)))
    _raises(ValueError, "Softmax2d: expected input to be 3D or 4D",
            lambda: nn.Softmax2d()(jitorch.zeros(2, 2)))


def test_meshgrid_warns_without_indexing_and_checks():
    a, b = jitorch.arange(3), jitorch.arange(2)
    with pytest.warns(UserWarning, match="required to pass the indexing argument"):
        x, y = jitorch.meshgrid(a, b)
    assert x.shape == (3, 2) and y.shape == (3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x, y = jitorch.meshgrid([a, b], indexing="xy")
    assert x.shape == (2, 3)
    _raises(RuntimeError, "indexing must be one of", lambda: jitorch.meshgrid(a, indexing="x"))
    _raises(RuntimeError, "same dtype", lambda: jitorch.meshgrid(a, b.double(), indexing="ij"))
    _raises(RuntimeError, "0D or 1D", lambda: jitorch.meshgrid(jitorch.zeros(2, 2),
                                                             indexing="ij"))


def test_cholesky_solve_errors_and_gradient():
    _raises(RuntimeError, "at least 2 dimensions",
            lambda: jitorch.cholesky_solve(jitorch.zeros(3), jitorch.eye(3)))
    _raises(RuntimeError, "Incompatible matrix sizes",
            lambda: jitorch.cholesky_solve(jitorch.zeros(3, 2), jitorch.eye(4)))
    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    L = jitorch.tensor(np.linalg.cholesky(a), requires_grad=True)
    B = jitorch.tensor(_input((3, 2)), requires_grad=True)
    np.testing.assert_allclose(jitorch.cholesky_solve(B, L).detach().numpy(),
                               np.linalg.solve(a, _input((3, 2))), rtol=1e-12)
    assert jitorch.autograd.gradcheck(jitorch.cholesky_solve, (B, L), eps=1e-6, atol=1e-5,
                                      rtol=1e-3)


def test_range_objects_index_as_lists():
    x = jitorch.tensor(_input((5, 4)))
    np.testing.assert_array_equal(x[range(3)].numpy(), _input((5, 4))[[0, 1, 2]])
    np.testing.assert_array_equal(x[range(1, 5, 2), range(2)].numpy(),
                                  _input((5, 4))[[1, 3], [0, 1]])
    y = x.clone()
    y[range(2)] = 0.0
    assert float(y[:2].abs().sum()) == 0.0 and math.isclose(float(y[2:].sum()),
                                                            float(x[2:].sum()))


# --- generated by tests/gen_compat_refs.py with PyTorch (do not edit by hand) ----
REFS = {
    'nearest_scale':
        [0.199666833, 0.199666833, 0.905772571, 0.905772571, 1.48928624, 1.48928624, 1.871232,
        1.871232, 1.99991529, 1.99991529, 1.85791943, 1.85791943],
    'nearest_frac':
        [0.199666833, 0.199666833, 0.905772571, 0.905772571, 1.48928624, 1.48928624, 1.871232,
        1.99991529, 1.85791943, 1.85791943, 1.46446289, 1.46446289, 0.872798164, 0.872798164,
        0.163004304, -0.568851425],
    'nearest_size2d':
        [0.199666833, 0.905772571, 1.48928624, 0.199666833, 0.905772571, 1.48928624, 1.99991529,
        1.85791943, 1.46446289, 1.99991529, 1.85791943, 1.46446289, 0.163004304, -0.568851425,
        -1.22371578],
    'nearest_exact':
        [0.199666833, 1.48928624, 1.871232, 0.199666833, 1.48928624, 1.871232, 1.99991529,
        1.46446289, 0.872798164, 0.163004304, -1.22371578, -1.71295595, 0.163004304,
        -1.22371578, -1.71295595],
    'nearest_3d':
        [0.199666833, 0.905772571, 1.871232, 1.85791943, 1.46446289, 0.163004304],
    'linear':
        [0.199666833, 0.469648439, 0.885004755, 1.23185374, 1.54545473, 1.77012871, 1.91286483,
        1.98856089, 1.85791943, 1.70748016, 1.47603514, 1.13382672, 0.768416714, 0.350890914,
        -0.0737725498, -0.50427592],
    'linear_ac':
        [0.199666833, 0.603155826, 0.989131666, 1.32256805, 1.5984136, 1.81666832, 1.92638198,
        1.99991529, 1.85791943, 1.63308712, 1.37993936, 1.04184523, 0.669999918, 0.264403426,
        -0.150648152, -0.568851425],
    'linear_down':
        [0.552719702, 1.68025912, 1.92891736],
    'bilinear':
        [0.435035412, 1.48928624, 1.95702086, 0.896368211, 1.26911193, 1.1420493, 1.63450069,
        0.916833027, -0.161905203, 0.169985706, -0.548778699, -1.05142105, -1.35648131,
        -1.81438564, -1.55774192, -1.11396508, -0.566626238, 0.20386344, -0.962392435,
        0.213223388, 1.30486679, 1.91724777, 1.85283099, 1.05872547, 1.19881745, 0.75022432,
        0.00617508082, 0.0493289255, -1.01394635, -1.67790554, -0.97979855, -1.20344208,
        -0.953141615, -1.65183418, -0.954338105, 0.11899892, 0.0554120997, 0.790288903,
        1.21393121, 1.12244102, 1.88068078, 1.8982639],
    'bilinear_recompute':
        [0.199666833, 0.729246136, 1.24615554, 1.64843031, 1.90340283, 1.99991529, 1.36044365,
        1.31275276, 1.15737426, 0.898464598, 0.557049108, 0.20177859, 0.317101824,
        -0.0139094416, -0.371890296, -0.694719344, -0.956180548, -1.12761345, -1.2116304,
        -1.31928034, -1.33189929, -1.22449062, -1.00577671, -0.73095823, -1.18343116,
        -0.686094027, -0.0924176001, 0.506839881, 1.0630144, 1.4983487, 1.87599995, 1.96880755,
        1.9140445, 1.68712915, 1.30648866, 0.860514909, 0.667391593, 0.311290262, -0.0995831248,
        -0.499588047, -0.85624123, -1.12269894, -0.904469439, -1.07395994, -1.17303154,
        -1.16598586, -1.05339508, -0.872938845, -1.0918516, -0.815290751, -0.450910844,
        -0.0475994463, 0.361891659, 0.71303598, 0.929990747, 1.36300386, 1.72512278, 1.9301799,
        1.96152313, 1.84765651],
    'bicubic':
        [-0.0317149914, 0.149617617, 0.461484392, 0.881033139, 1.20710027, 1.4567385,
        1.75435341, 1.91808515, 2.09969504, 2.18161087, 2.23159133, 1.29966446, 1.33966383,
        1.42024478, 1.48507048, 1.50339472, 1.46705343, 1.39391921, 1.30603576, 1.12630196,
        0.945673865, 0.803376426, 1.61590717, 1.50084743, 1.31735659, 1.01728873, 0.744929773,
        0.474894943, 0.11655909, -0.138770195, -0.522433804, -0.817074371, -1.03603598,
        -0.691289316, -0.827231253, -1.06748315, -1.36684155, -1.58195524, -1.71908206,
        -1.86624988, -1.92113798, -1.93700608, -1.8896804, -1.84324472, -1.50098073,
        -1.48632971, -1.47464952, -1.40896263, -1.32114987, -1.19615761, -1.0129605,
        -0.857533672, -0.590810166, -0.356334412, -0.176473047, -1.26318098, -1.09299424,
        -0.811423675, -0.391496255, -0.0348744672, 0.2857034, 0.696029243, 0.966746447,
        1.34466717, 1.60910746, 1.80074371, 2.00428196, 2.0530775, 2.15515702, 2.22535334,
        2.23052687, 2.15689577, 2.02319575, 1.87624142, 1.58653421, 1.302498, 1.0797653,
        1.25378591, 1.16609318, 1.02644619, 0.797278144, 0.588788261, 0.381426716, 0.105960842,
        -0.0907471909, -0.386894385, -0.614833905, -0.784323026, -0.2804961, -0.431699627,
        -0.694517565, -1.03784499, -1.2971436, -1.4838313, -1.69939535, -1.80679411,
        -1.90659798, -1.92822807, -1.93388784, -1.94675947, -1.92946075, -1.91724416,
        -1.83598395, -1.72514255, -1.56535303, -1.33051221, -1.13043481, -0.786152674,
        -0.482763833, -0.249919726, -0.768847418, -0.651999702, -0.457789496, -0.17156177,
        0.0692515751, 0.282469639, 0.553738396, 0.730267589, 0.973184734, 1.13977716,
        1.25980162, 1.11491399, 1.25364759, 1.50252677, 1.79934671, 2.00208245, 2.11338355,
        2.2200871, 2.23724815, 2.18457183, 2.07401445, 1.97858318],
    'bicubic_ac':
        [0.199666833, 0.431622875, 0.725480649, 1.06709043, 1.27247241, 1.48928624, 1.69123548,
        1.80566028, 1.93054706, 1.97748627, 1.99991529, 1.54733403, 1.57658843, 1.5996855,
        1.57352652, 1.5281431, 1.41905614, 1.29580555, 1.16375421, 0.931092216, 0.718914634,
        0.54852266, 1.47377705, 1.31108703, 1.0901748, 0.777162554, 0.557531787, 0.260814358,
        -0.0385062642, -0.274066096, -0.625032408, -0.889186766, -1.08857064, -0.645417246,
        -0.850215, -1.10536296, -1.38563505, -1.54499966, -1.6943798, -1.8268483, -1.88272978,
        -1.91643337, -1.89065896, -1.85707517, -1.54090195, -1.57300984, -1.59980343,
        -1.57825121, -1.53581062, -1.43018753, -1.31028971, -1.18050137, -0.950826266,
        -0.740499665, -0.5713951, -1.18343116, -0.978956847, -0.707443114, -0.344465387,
        -0.0997505305, 0.213223388, 0.524069119, 0.755761497, 1.08771066, 1.32387269, 1.4983487],
    'bicubic_down':
        [0.267127268, 1.06847044, 1.13654621, 0.422852503, 0.590289368, 0.626768799,
        0.227536584, -0.322965567, -1.51724453, -1.98249076, -1.0740642, 0.560806807,
        0.401168781, 0.668709015, 0.474321086, -0.0434990796, 1.20854311, 0.859697914,
        -0.0919125344, -0.968292593],
    'trilinear':
        [0.435035412, 1.48928624, 1.95702086, 1.08090133, 1.1810422, 0.816060674, 1.20784007,
        0.39893921, -0.567073361, -0.867868656, -1.49649661, -1.53576874, -1.17459414,
        -0.878566088, -0.236537899, -0.962392435, 0.213223388, 1.30486679, 1.36141814,
        1.71650171, 1.39558624, 0.974991323, 0.636129358, 0.0467445816, 0.209499853,
        -0.615476434, -1.19806352, -1.30675876, -1.3004102, -0.781929288, -0.672597469,
        -0.108129689, 0.498922125, 0.340628475, 1.25538426, 1.67573998, 1.6657445, 1.20895259,
        0.276046511, 0.464099256, -0.147959203, -0.701747822, -0.824492243, -1.31730867,
        -1.29133774, -1.17227728, -0.567059375, 0.261479944, 0.0861909494, 0.667272658,
        0.985566586, 1.43160543, 1.71404237, 1.32144881, 1.24657236, 0.135821919, -1.02841841,
        -0.281477514, -0.909860628, -1.17991907, -1.54947219, -1.47261342, -0.815804606,
        -0.509251367, 0.459105582, 1.24665588, 0.848841647, 1.1891735, 1.06118066, 1.94687946,
        1.43631168, 0.360090328],
    'area':
        [0.535310468, 0.439454652, 0.137006572, -0.15226251, 0.245691941, 0.446328288,
        0.509583661, 0.389494095, -0.313816699, -0.0370851873, 0.322388251, 0.503395376,
        -0.528600868, -0.479760959, -0.218947393, 0.064321926, -0.162722329, -0.395424168,
        -0.51977154, -0.445408509, 0.381905043, 0.123282073, -0.249631906, -0.465862201],
    'area_empty':
        [],
    'linear_same_size':
        [0.199666833, 0.905772571, 1.48928624, 1.871232],
    'bilinear_same_dim':
        [0.199666833, 0.905772571, 0.946532749, 1.46490555, 1.64174024, 1.86725739, 1.99991529,
        1.85791943, 1.46446289, 0.872798164, 0.71074047, 0.037885992, -0.251016441,
        -0.910436588, -1.22371578, -1.71295595],
    'trilinear_same_dim':
        [0.199666833, 0.905772571, 0.956617355, 1.47245528, 1.64839529, 1.86708388, 1.98051484,
        1.82222663, 1.59250585, 1.10837064, 0.832595314, 0.172866842, -0.635796876,
        -0.631307212, -0.580374212, -0.482724702, -0.423716367, -0.237654634, -0.146992276,
        0.0877381982, 0.188704603, 0.386924852, 0.448347128, 0.562778652, -0.257862328,
        -0.556100349, -0.563790212, -0.755959659, -0.814503053, -0.856568438, -0.879979446,
        -0.748911402, -0.623984332, -0.364668813, -0.230981241, 0.0799807417, 1.87599995,
        1.99974342, 1.86240078, 1.68008875, 1.54363105, 1.04828868, 0.808253334, 0.0992758464,
        -0.236978181, -0.903538841, -1.13443455, -1.59285945],
    'nearest2d_double':
        [0.199666833, 0.199666833, 0.905772571, 0.905772571, 1.48928624, 1.48928624, 1.871232,
        1.871232, 1.99991529, 1.99991529, 1.85791943, 1.85791943, 0.199666833, 0.199666833,
        0.905772571, 0.905772571, 1.48928624, 1.48928624, 1.871232, 1.871232, 1.99991529,
        1.99991529, 1.85791943, 1.85791943],
    'nearest1d_double':
        [0.199666833, 0.199666833, 0.199666833, 0.905772571, 0.905772571, 1.48928624,
        1.48928624, 1.871232, 1.871232, 1.99991529, 1.99991529, 1.85791943, 1.85791943,
        1.46446289],
    'bicubic_same_dim':
        [0.045091779, 0.448094791, 1.06530274, 1.45686958, 1.8536653, 2.10431816, 2.21036163,
        2.1760186, 2.08945502, 1.06299469, 0.992837488, 0.834812409, 0.668740163, 0.426721979,
        0.151061059, -0.0807399325, -0.388754939, -0.571612545],
    'upsample_module':
        [0.199666833, 0.376193268, 0.729246136, 1.05165099, 1.34340782, 1.48928624, 0.617558126,
        0.757995657, 1.03887072, 1.27984232, 1.48091047, 1.58144454, 1.45334071, 1.52160044,
        1.65811989, 1.73622499, 1.75591575, 1.76576113, 1.871232, 1.90340283, 1.96774447,
        1.96441633, 1.8934184, 1.85791943],
    'upsampling_bilinear2d':
        [0.199666833, 0.552719702, 0.905772571, 1.19752941, 1.48928624, 0.756855223, 1.01367102,
        1.27048681, 1.44132539, 1.61216397, 1.31404361, 1.47462233, 1.63520105, 1.68512138,
        1.7350417, 1.871232, 1.93557365, 1.99991529, 1.92891736, 1.85791943],
    'upsampling_nearest2d':
        [0.199666833, 0.199666833, 0.199666833, 0.905772571, 0.905772571, 0.905772571,
        0.199666833, 0.199666833, 0.199666833, 0.905772571, 0.905772571, 0.905772571,
        0.199666833, 0.199666833, 0.199666833, 0.905772571, 0.905772571, 0.905772571,
        1.48928624, 1.48928624, 1.48928624, 1.871232, 1.871232, 1.871232, 1.48928624,
        1.48928624, 1.48928624, 1.871232, 1.871232, 1.871232, 1.48928624, 1.48928624,
        1.48928624, 1.871232, 1.871232, 1.871232],
    'pixel_shuffle':
        [0.199666833, 1.46446289, 0.905772571, 0.872798164, 1.48928624, 0.163004304,
        -1.97035556, 0.917902973, -1.9610768, 1.4983487, -1.68637548, 1.87599995, 1.871232,
        -0.568851425, 1.99991529, -1.22371578, 1.85791943, -1.71295595, -1.18343116, 1.99974342,
        -0.520314983, 1.85283099, 0.213223388, 1.45514658, 0.860514909, -1.95835546,
        0.149416581, -1.67900896, -0.581904581, -1.17241648, 1.50734157, 0.135821919,
        1.88068078, -0.594930714, 1.99947867, -1.24516227, -1.23446769, -0.507142929,
        -1.71995138, 0.22677004, -1.97264773, 0.929990747, 1.84765651, -1.72686695, 1.4457627,
        -1.97484829, 0.848191692, -1.95554318, -1.67156447, 1.88527427, -1.16134735, 1.99912108,
        -0.493947323, 1.84239622, -0.607929218, -1.1502243, -1.25579902, -0.480728779,
        -1.73370231, 0.253831122, 0.240306161, 1.43631168, 0.942035334, 0.835829085, 1.51626444,
        0.12222095, -1.97695713, 0.954036172, -1.95264008, 1.5251169, -1.66404235, 1.88978021,
        1.99867064, -1.26637745, 1.83705037, -1.74045716, 1.42679395, -1.97897417, -0.46748791,
        1.83161921, 0.267344295, 1.41720996, 0.965992704, 0.810988, 0.823427663, -1.9496463,
        0.108614305, -1.65644295, -0.620899489, -1.13904782, 1.53389853, 0.0950026157,
        1.89419839, -0.633840927, 1.99812738, -1.27689707],
    'pixel_unshuffle':
        [0.199666833, 1.48928624, 1.99991529, -1.97035556, -1.68637548, -0.520314983,
        0.905772571, 1.871232, 1.85791943, -1.9610768, -1.18343116, 0.213223388, 1.46446289,
        0.163004304, -1.22371578, 0.917902973, 1.87599995, 1.85283099, 0.872798164,
        -0.568851425, -1.71295595, 1.4983487, 1.99974342, 1.45514658, 0.860514909, -0.581904581,
        -1.71995138, 1.50734157, 1.99947867, 1.4457627, 0.149416581, -1.23446769, -1.97264773,
        1.88068078, 1.84765651, 0.848191692, -1.95835546, -1.17241648, 0.22677004, 0.135821919,
        -1.24516227, -1.97484829, -1.67900896, -0.507142929, 0.929990747, -0.594930714,
        -1.72686695, -1.95554318],
    'instance_norm1d':
        [-1.64182873, -0.581658207, 0.294448523, 0.86791453, 1.06112388, 1.25579815, 0.80663606,
        0.131203485, -0.679082943, -1.51455476, 1.79599001, -0.00759431662, -0.956498236,
        -0.922292051, 0.090394591, -1.42175696, -0.732873486, 0.0291686416, 0.761230592,
        1.36423121, 0.641418669, 0.938519703, 0.585791305, -0.36902639, -1.79670329, 1.57949229,
        0.63370494, -0.210227878, -0.838083819, -1.16488553],
    'instance_norm2d_unbatched':
        [-0.342077245, 0.246748207, 0.73334346, 1.05185013, 1.15915983, 1.0407487, 0.71264313,
        0.219250668, -0.37265033, -0.982948841, -1.52904382, -1.93702389, -1.42767185,
        -1.42158963, -1.24152319, -0.91184369, -0.477171693, 0.00366197996, 0.465578748,
        0.846060344, 1.09361037, 1.17472409, 1.07842314, 0.817741401],
    'instance_norm3d':
        [-0.342077245, 0.246748207, 0.73334346, 1.05185013, 1.15915983, 1.0407487, 0.71264313,
        0.219250668, -0.37265033, -0.982948841, -1.52904382, -1.93702389, -1.42767185,
        -1.42158963, -1.24152319, -0.91184369, -0.477171693, 0.00366197996, 0.465578748,
        0.846060344, 1.09361037, 1.17472409, 1.07842314, 0.817741401],
    'zeropad2d':
        [0.0, 0.199666833, 0.905772571, 1.48928624, 0.0, 0.0, 0.0, 1.871232, 1.99991529,
        1.85791943, 0.0, 0.0, 0.0, 1.46446289, 0.872798164, 0.163004304, 0.0, 0.0, 0.0, 0.0,
        0.0, 0.0, 0.0, 0.0, 0.0, -0.568851425, -1.22371578, -1.71295595, 0.0, 0.0, 0.0,
        -1.97035556, -1.9610768, -1.68637548, 0.0, 0.0, 0.0, -1.18343116, -0.520314983,
        0.213223388, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    'constantpad1d':
        [3.5, 3.5, 0.199666833, 0.905772571, 1.48928624, 3.5, 3.5, 3.5, 3.5, 1.871232,
        1.99991529, 1.85791943, 3.5, 3.5],
    'constantpad3d':
        [-1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, 0.199666833, 0.905772571,
        -1.0, 1.48928624, 1.871232, -1.0, -1.0, -1.0, -1.0, 1.99991529, 1.85791943, -1.0,
        1.46446289, 0.872798164, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0,
        -1.0, -1.0],
    'reflectionpad1d':
        [1.48928624, 0.905772571, 0.199666833, 0.905772571, 1.48928624, 1.871232, 1.48928624,
        1.46446289, 1.85791943, 1.99991529, 1.85791943, 1.46446289, 0.872798164, 1.46446289],
    'reflectionpad2d':
        [-1.22371578, -0.568851425, 0.163004304, -0.568851425, -1.22371578, -1.71295595,
        -1.22371578, -0.568851425, 1.46446289, 1.85791943, 1.99991529, 1.85791943, 1.46446289,
        0.872798164, 1.46446289, 1.85791943, 1.48928624, 0.905772571, 0.199666833, 0.905772571,
        1.48928624, 1.871232, 1.48928624, 0.905772571, 1.46446289, 1.85791943, 1.99991529,
        1.85791943, 1.46446289, 0.872798164, 1.46446289, 1.85791943, -1.22371578, -0.568851425,
        0.163004304, -0.568851425, -1.22371578, -1.71295595, -1.22371578, -0.568851425,
        1.46446289, 1.85791943, 1.99991529, 1.85791943, 1.46446289, 0.872798164, 1.46446289,
        1.85791943, 1.48928624, 0.905772571, 0.199666833, 0.905772571, 1.48928624, 1.871232,
        1.48928624, 0.905772571],
    'reflectionpad3d':
        [-1.9610768, -1.97035556, -1.9610768, -1.68637548, -1.9610768, -1.22371578,
        -0.568851425, -1.22371578, -1.71295595, -1.22371578, -1.9610768, -1.97035556,
        -1.9610768, -1.68637548, -1.9610768, -0.520314983, -1.18343116, -0.520314983,
        0.213223388, -0.520314983, -1.9610768, -1.97035556, -1.9610768, -1.68637548, -1.9610768,
        1.99991529, 1.871232, 1.99991529, 1.85791943, 1.99991529, 0.905772571, 0.199666833,
        0.905772571, 1.48928624, 0.905772571, 1.99991529, 1.871232, 1.99991529, 1.85791943,
        1.99991529, 0.872798164, 1.46446289, 0.872798164, 0.163004304, 0.872798164, 1.99991529,
        1.871232, 1.99991529, 1.85791943, 1.99991529, -1.9610768, -1.97035556, -1.9610768,
        -1.68637548, -1.9610768, -1.22371578, -0.568851425, -1.22371578, -1.71295595,
        -1.22371578, -1.9610768, -1.97035556, -1.9610768, -1.68637548, -1.9610768, -0.520314983,
        -1.18343116, -0.520314983, 0.213223388, -0.520314983, -1.9610768, -1.97035556,
        -1.9610768, -1.68637548, -1.9610768, 1.99991529, 1.871232, 1.99991529, 1.85791943,
        1.99991529, 0.905772571, 0.199666833, 0.905772571, 1.48928624, 0.905772571, 1.99991529,
        1.871232, 1.99991529, 1.85791943, 1.99991529, 0.872798164, 1.46446289, 0.872798164,
        0.163004304, 0.872798164, 1.99991529, 1.871232, 1.99991529, 1.85791943, 1.99991529],
    'replicationpad2d':
        [0.199666833, 0.199666833, 0.905772571, 1.48928624, 1.48928624, 1.48928624, 0.199666833,
        0.199666833, 0.905772571, 1.48928624, 1.48928624, 1.48928624, 0.199666833, 0.199666833,
        0.905772571, 1.48928624, 1.48928624, 1.48928624, 1.871232, 1.871232, 1.99991529,
        1.85791943, 1.85791943, 1.85791943, 1.46446289, 1.46446289, 0.872798164, 0.163004304,
        0.163004304, 0.163004304],
    'replicationpad3d':
        [0.199666833, 0.199666833, 0.905772571, 0.905772571, 0.199666833, 0.199666833,
        0.905772571, 0.905772571, 1.48928624, 1.48928624, 1.871232, 1.871232, 1.48928624,
        1.48928624, 1.871232, 1.871232, 0.199666833, 0.199666833, 0.905772571, 0.905772571,
        0.199666833, 0.199666833, 0.905772571, 0.905772571, 1.48928624, 1.48928624, 1.871232,
        1.871232, 1.48928624, 1.48928624, 1.871232, 1.871232, 1.99991529, 1.99991529,
        1.85791943, 1.85791943, 1.99991529, 1.99991529, 1.85791943, 1.85791943, 1.46446289,
        1.46446289, 0.872798164, 0.872798164, 1.46446289, 1.46446289, 0.872798164, 0.872798164,
        1.99991529, 1.99991529, 1.85791943, 1.85791943, 1.99991529, 1.99991529, 1.85791943,
        1.85791943, 1.46446289, 1.46446289, 0.872798164, 0.872798164, 1.46446289, 1.46446289,
        0.872798164, 0.872798164],
    'circularpad1d':
        [1.871232, 0.199666833, 0.905772571, 1.48928624, 1.871232, 0.199666833, 0.905772571,
        0.872798164, 1.99991529, 1.85791943, 1.46446289, 0.872798164, 1.99991529, 1.85791943],
    'circularpad2d':
        [0.163004304, 1.46446289, 0.872798164, 0.163004304, 1.46446289, 1.48928624, 0.199666833,
        0.905772571, 1.48928624, 0.199666833, 1.85791943, 1.871232, 1.99991529, 1.85791943,
        1.871232, 0.163004304, 1.46446289, 0.872798164, 0.163004304, 1.46446289, 1.48928624,
        0.199666833, 0.905772571, 1.48928624, 0.199666833],
    'zeropad_negative':
        [0.905772571, 1.48928624, 1.871232, 0.0, 1.85791943, 1.46446289, 0.872798164, 0.0],
    'cosine_similarity':
        [-0.818096053, 0.997899076, -0.946272201],
    'pairwise_distance':
        [5.54348831, 2.5198421e-06, 5.54348411],
    'pdist':
        [2.31813293, 2.05961193, 4.48919692, 2.37608754, 6.4411471, 4.16642331],
    'pdist2':
        [1.6109718, 2.03653582, 1.26522582, 1.47507968, 0.510802559, 0.998742374, 2.7772344,
        1.12123735, 3.04359307, 1.94220184],
    'glu':
        [0.16217226, 0.638866397, 0.805199113, 0.676453915, 0.454547154, 0.283854247,
        -1.40804491, -1.60284309, -1.46234218, -1.04233082, -0.449791048, 0.172879227],
    'prelu_channels':
        [0.199666833, 0.905772571, 1.48928624, 1.871232, 1.99991529, 1.85791943, 1.46446289,
        0.872798164, 0.163004304, -0.142212856, -0.305928945, -0.428238987, -0.492588891,
        -0.490269199, -0.421593871, -0.29585779, -0.130078746, 0.213223388, 0.917902973,
        1.4983487, 1.87599995, 1.99974342, 1.85283099, 1.45514658],
    'prelu_fn':
        [0.199666833, 0.905772571, 1.48928624, 1.871232, 1.99991529, 1.85791943, 1.46446289,
        0.872798164, 0.163004304, -0.0927252304, -0.199470939, -0.279219191, -0.393414656,
        -0.391561994, -0.336713253, -0.236291952, -1.04058589, 0.213223388, 0.917902973,
        1.4983487, 1.87599995, 1.99974342, 1.85283099, 1.45514658],
    'softmax2d':
        [0.124763695, 0.261771091, 0.489759238, 0.716221943, 0.754963928, 0.67831873,
        0.477751426, 0.263896309, 0.120272377, 0.0599101791, 0.0324893355, 0.0198817484,
        0.0191992393, 0.0160522927, 0.0204244006, 0.0337788046, 0.0818518771, 0.141196406,
        0.276167827, 0.493544675, 0.898948884, 0.842751302, 0.703407772, 0.472676521],
    'channel_shuffle':
        [0.199666833, 0.905772571, 1.48928624, 1.871232, 1.99991529, 1.85791943, -1.97035556,
        -1.9610768, -1.68637548, -1.18343116, -0.520314983, 0.213223388, 1.46446289,
        0.872798164, 0.163004304, -0.568851425, -1.22371578, -1.71295595, 0.917902973,
        1.4983487, 1.87599995, 1.99974342, 1.85283099, 1.45514658],
    'unfold':
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.199666833, 0.905772571, 1.48928624, 1.871232, 0.0,
        1.99991529, 1.85791943, 1.46446289, 0.872798164, 0.0, 0.163004304, -0.568851425,
        -1.22371578, -1.71295595, 0.0, 0.0, 0.0, 0.0, 0.0, 0.199666833, 0.905772571, 1.48928624,
        1.871232, 0.0, 1.99991529, 1.85791943, 1.46446289, 0.872798164, 0.0, 0.163004304,
        -0.568851425, -1.22371578, -1.71295595, 0.0, 0.0, 0.199666833, 0.905772571, 1.48928624,
        1.871232, 0.0, 1.99991529, 1.85791943, 1.46446289, 0.872798164, 0.0, 0.163004304,
        -0.568851425, -1.22371578, -1.71295595, 0.0, 0.0, 0.0, 0.0, 0.0, 0.199666833,
        0.905772571, 1.48928624, 1.871232, 0.0, 1.99991529, 1.85791943, 1.46446289, 0.872798164,
        0.0, 0.163004304, -0.568851425, -1.22371578, -1.71295595, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.97035556, -1.9610768, -1.68637548, -1.18343116, 0.0,
        -0.520314983, 0.213223388, 0.917902973, 1.4983487, 0.0, 1.87599995, 1.99974342,
        1.85283099, 1.45514658, 0.0, 0.0, 0.0, 0.0, 0.0, -1.97035556, -1.9610768, -1.68637548,
        -1.18343116, 0.0, -0.520314983, 0.213223388, 0.917902973, 1.4983487, 0.0, 1.87599995,
        1.99974342, 1.85283099, 1.45514658, 0.0, 0.0, -1.97035556, -1.9610768, -1.68637548,
        -1.18343116, 0.0, -0.520314983, 0.213223388, 0.917902973, 1.4983487, 0.0, 1.87599995,
        1.99974342, 1.85283099, 1.45514658, 0.0, 0.0, 0.0, 0.0, 0.0, -1.97035556, -1.9610768,
        -1.68637548, -1.18343116, 0.0, -0.520314983, 0.213223388, 0.917902973, 1.4983487, 0.0,
        1.87599995, 1.99974342, 1.85283099, 1.45514658, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    'fold':
        [0.199666833, 1.81154514, 2.97857248, 1.871232, 3.99983059, 7.43167772, 5.85785155,
        1.74559633, 0.163004304, -1.13770285, -2.44743156, -1.71295595, -1.97035556,
        -3.92215359, -3.37275097, -1.18343116, -1.04062997, 0.85289355, 3.67161189, 2.99669739,
        1.87599995, 3.99948683, 3.70566198, 1.45514658],
    'triplet':
        [2.95227305],
    'triplet_swap':
        [5.60255481, 2.20684359, 2.741669, 4.54748722],
    'hinge':
        [3.05224376],
    'soft_margin':
        [0.94769729],
    'poisson':
        [1.07853054],
    'poisson_full':
        [1.50475078, 2.75258616, 2.89340933, 4.46465468, 4.2139083, 4.49200012, 2.93155577,
        2.81961564, 0.263004304, 2.12504454, 3.35920784, 3.6090098],
    'gaussian':
        [1.25546686],
    'gaussian_homoscedastic':
        [0.31863927, 3.9446191, 12.5973352, 21.7508728, 1.28988704, 1.28988704, 1.28988704,
        1.28988704, 0.253701451, 4.38513915, 14.2440349, 24.6735664],
    'gaussian_float_var':
        [1.73844823],
    'affine_grid':
        [0.735687734, -0.878781434, 0.835521151, 0.0568345672, 0.935354568, 0.992450569,
        1.03518798, 1.92806657, 1.33953611, 0.454495428, 1.43936953, 1.39011143, 1.53920295,
        2.32572743, 1.63903636, 3.26134343, 1.9433845, 1.78777229, 2.04321791, 2.72338829,
        2.14305133, 3.65900429, 2.24288475, 4.59462029, -1.51720831, -0.470506858, -0.784976861,
        -0.754932571, -0.0527454173, -1.03935828, 0.679486027, -1.323784, -0.935342863,
        -1.28631738, -0.203111418, -1.57074309, 0.529120026, -1.8551688, 1.26135147,
        -2.13959452, -0.35347742, -2.1021279, 0.378754024, -2.38655361, 1.11098547, -2.67097933,
        1.84321691, -2.95540504],
    'affine_grid_ac':
        [0.383846836, -2.01322787, 0.783180502, 1.72923614, 2.19539198, 1.98660272, 2.59472564,
        5.72906673],
    'grid_sample':
        [0.280322474, 0.563610652, 0.91648849, 1.2757868, 0.974537627, 1.16049231, 1.45903001,
        1.50201954, 1.32735005, 0.943369157, 0.961798791, 0.392369443, -0.264272092,
        -0.970624384, -1.44717608, -0.706588911, -0.880662812, -0.981648631, -0.946221613,
        -0.616330949, -1.15951286, -0.668537367, -0.0360863951, 0.641741311, 1.32592599,
        0.829462446, 1.31963854, 1.6494612, 1.78276385, 1.55728707],
    'grid_sample_border_ac':
        [1.35481565, 1.76535395, 1.871232, 1.871232, 1.34034824, 0.376589238, -1.26332608,
        -1.55555639, -1.04039031, -0.372751104, 0.163004304, 0.163004304, -1.74968034,
        -1.32285086, -1.18343116, -1.18343116, 0.24251548, 1.49005817, 1.46265888, 1.5830906,
        1.89395827, 1.96658643, 1.87599995, 1.87599995],
    'grid_sample_nearest':
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    'multilabel_soft_margin':
        [1.28531279],
    'repr:upsample':
        "Upsample(scale_factor=2.0, mode='nearest')",
    'repr:upsample_size':
        "Upsample(size=(3, 4), mode='bilinear')",
    'repr:upsample_tuple':
        "Upsample(scale_factor=(2.0, 3.0), mode='nearest')",
    'repr:upsampling_bilinear':
        "UpsamplingBilinear2d(size=3, mode='bilinear')",
    'repr:pixel_shuffle':
        'PixelShuffle(upscale_factor=3)',
    'repr:pixel_unshuffle':
        'PixelUnshuffle(downscale_factor=2)',
    'repr:instance_norm':
        'InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, t'
        'rack_running_stats=False)',
    'repr:instance_norm_affine':
        'InstanceNorm1d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, tra'
        'ck_running_stats=True)',
    'repr:zeropad':
        'ZeroPad2d((1, 2, 3, 4))',
    'repr:fold':
        'Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride='
        '1)',
    'repr:unfold':
        'Unfold(kernel_size=2, dilation=1, padding=1, stride=1)',
    'repr:prelu':
        'PReLU(num_parameters=3)',
    'repr:glu':
        'GLU(dim=-1)',
    'repr:channel_shuffle':
        'ChannelShuffle(groups=2)',
    'repr:triplet':
        'TripletMarginLoss()',
    'repr:constantpad':
        'ConstantPad1d(padding=(2, 2), value=3.5)',
    'repr:reflectionpad':
        'ReflectionPad2d((1, 1, 1, 1))',
    'repr:replicationpad':
        'ReplicationPad3d((1, 1, 1, 1, 1, 1))',
    'repr:circularpad':
        'CircularPad2d((1, 1, 1, 1))',
    'repr:cosine':
        'CosineSimilarity()',
    'repr:pairwise':
        'PairwiseDistance()',
    'repr:batchnorm3d':
        'BatchNorm3d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_'
        'running_stats=True)',
    'repr:dropout3d':
        'Dropout3d(p=0.3, inplace=False)',
    'stats:in2d_track':
        [0.533157647, -0.0330205336, -0.172321916, 0.970728755, 1.47743928, 1.3090694],
    'eval:in2d_track':
        [-0.338479728, 0.378189117, 0.970431924, 1.35809159, 1.48869979, 1.34457982, 1.23198593,
        0.74522084, 0.161270455, -0.44083032, -0.979589999, -1.38208997, -1.57150137,
        -1.56339169, -1.32329977, -0.883720756, -0.304149836, 0.336970896, 0.390500963,
        0.979630053, 1.36293077, 1.48852551, 1.33941531, 0.935781598, 0.735115409, 0.150091782,
        -0.451569229, -0.988435686, -1.38784504, -1.59573948, -1.56101322, -1.31686127,
        -0.874093771, -0.292637259, 0.348810822, 0.963433564],
    'stats:in1d_affine_momentum':
        [0.518200457, 0.743986547, 1.41025686, 0.699738264],
    'eval:in1d_affine_momentum':
        [-0.268228322, 0.326363683, 0.817724288, 1.1393503, 1.50139189, 1.33164394, 0.861288786,
        0.153987005, -0.299100816, -0.915376186, -1.46681929, -1.87879479, -3.24484253,
        -3.23375034, -2.90536046, -2.30411887, -0.874504983, -0.256812721, 0.336578339,
        0.825355589, 1.35325813, 1.50118649, 1.32556093, 0.850151658],
}
