"""jitorch.optim: optimizer trajectories vs PyTorch 2.13 (numbers computed with PyTorch and
embedded), scripted step == eager functional step, param groups, state_dict round trips, hooks
and PyTorch's argument errors."""
import copy

import numpy as np
import pytest

import jitorch
from jitorch import optim
from jitorch.optim import functional as F
from jitorch.optim import optimizer as O

# 10 steps on f(a, b) = (1-a0)^2 + 100 (a1-a0^2)^2 + sum(b^2) + sum(b*a0), a=[-1, 1.5],
# b=[[.5,-.25],[.3,.1]]; values from torch.optim (PyTorch 2.13, CPU default path).
REFERENCE = [('SGD', {'lr': 0.001}, [-1.1777880191802979, 1.3937946557998657],
  [[0.5016223788261414, -0.23351192474365234], [0.3055865168571472, 0.10955074429512024]]),
 ('SGD', {'lr': 0.001, 'momentum': 0.9, 'dampening': 0.1, 'weight_decay': 0.1},
  [-0.9451938271522522, 1.1653971672058105],
  [[0.5032633543014526, -0.1880476027727127], [0.3189138174057007, 0.13456420600414276]]),
 ('SGD', {'lr': 1e-05, 'momentum': 0.9, 'nesterov': True, 'maximize': True},
  [-0.898222029209137, 1.5531517267227173],
  [[0.5000119805335999, -0.2506968379020691], [0.29982298612594604, 0.09963396191596985]]),
 ('Adam', {'lr': 0.01}, [-1.0970715284347534, 1.403340458869934],
  [[0.5489072799682617, -0.1502297818660736], [0.3989984691143036, 0.19954814016819]]),
 ('Adam', {'lr': 0.01, 'amsgrad': True, 'weight_decay': 0.1, 'maximize': True},
  [-0.8989862203598022, 1.6011970043182373],
  [[0.39840173721313477, -0.3501860797405243], [0.19943122565746307, -0.00032588187605142593]]),
 ('Adam',
  {'lr': 0.01,
   'betas': (0.8, 0.9),
   'eps': 0.001,
   'weight_decay': 0.1,
   'decoupled_weight_decay': True},
  [-1.0865241289138794, 1.3889760971069336],
  [[0.5431641340255737, -0.148304283618927], [0.3952088952064514, 0.19791612029075623]]),
 ('AdamW', {'lr': 0.01}, [-1.096035122871399, 1.4018727540969849],
  [[0.5483882427215576, -0.1500282883644104], [0.39864933490753174, 0.19939948618412018]]),
 ('AdamW', {'lr': 0.01, 'amsgrad': True, 'weight_decay': 0.2},
  [-1.0765079259872437, 1.3742550611495972],
  [[0.5386099815368652, -0.1462395340204239], [0.39207226037979126, 0.19659659266471863]]),
 ('Adagrad', {'lr': 0.1}, [-1.1558383703231812, 1.339980959892273],
  [[0.5782124996185303, 0.19264551997184753], [0.5741059184074402, 0.48390743136405945]]),
 ('Adagrad',
  {'lr': 0.1,
   'lr_decay': 0.01,
   'weight_decay': 0.1,
   'initial_accumulator_value': 0.1,
   'eps': 0.0001,
   'maximize': True},
  [-0.4579765200614929, 2.09902024269104],
  [[0.9433056116104126, -0.7536624670028687], [-0.2065836787223816, -0.41037988662719727]]),
 ('RMSprop', {'lr': 0.01}, [-1.1557681560516357, 1.3398025035858154],
  [[0.5782767534255981, 0.19625169038772583], [0.574501633644104, 0.48634371161460876]]),
 ('RMSprop', {'lr': 0.01, 'alpha': 0.9, 'centered': True, 'momentum': 0.5, 'weight_decay': 0.1},
  [-1.1594903469085693, 1.3378946781158447],
  [[0.5522363781929016, 0.12635613977909088], [0.5587615370750427, 0.441556841135025]]),
 ('RMSprop', {'lr': 0.01, 'momentum': 0.3, 'maximize': True},
  [-0.24477939307689667, 2.390876054763794],
  [[1.421458125114441, -1.003931999206543], [-0.5531935095787048, -0.6918801069259644]]),
 ('Adadelta', {}, [-1.0319184064865112, 1.468366265296936],
  [[0.5150625109672546, -0.21648795902729034], [0.3328627943992615, 0.13330398499965668]]),
 ('Adadelta', {'lr': 0.5, 'rho': 0.8, 'eps': 0.0001, 'weight_decay': 0.1, 'maximize': True},
  [-0.8526663780212402, 1.6530636548995972],
  [[0.3199646472930908, -0.3808686435222626], [0.16298478841781616, -0.03293909877538681]]),
 ('Adamax', {}, [-1.0195610523223877, 1.480527639389038],
  [[0.5090921521186829, -0.2299794703722], [0.31983059644699097, 0.1199597641825676]]),
 ('Adamax', {'lr': 0.01, 'betas': (0.8, 0.9), 'weight_decay': 0.1, 'maximize': True},
  [-0.9053168892860413, 1.5933772325515747],
  [[0.41249868273735046, -0.34903156757354736], [0.2029525637626648, 0.001690954901278019]]),
 ('NAdam', {}, [-1.0159339904785156, 1.484104037284851],
  [[0.5080598592758179, -0.23387089371681213], [0.316050261259079, 0.11610410362482071]]),
 ('NAdam', {'lr': 0.01, 'weight_decay': 0.1, 'momentum_decay': 0.01},
  [-1.0741286277770996, 1.4266769886016846],
  [[0.5068308115005493, -0.17004485428333282], [0.3773159980773926, 0.17918454110622406]]),
 ('NAdam', {'lr': 0.01, 'weight_decay': 0.1, 'decoupled_weight_decay': True, 'maximize': True},
  [-0.9054099917411804, 1.5708825588226318],
  [[0.5990436673164368, -0.3284641206264496], [0.2142864316701889, 0.01747753657400608]]),
 ('RAdam', {}, [-1.1787736415863037, 1.3770781755447388],
  [[0.500857949256897, -0.24164605140686035], [0.3028651177883148, 0.10486143082380295]]),
 ('RAdam', {'lr': 0.001, 'weight_decay': 0.1}, [-1.178429365158081, 1.3762891292572021],
  [[0.5005984902381897, -0.2415226697921753], [0.30271458625793457, 0.10481058061122894]]),
 ('RAdam', {'lr': 0.001, 'weight_decay': 0.1, 'decoupled_weight_decay': True, 'maximize': True},
  [0.1772826462984085, 2.493292808532715],
  [[0.500917911529541, -0.2561720311641693], [0.29907819628715515, 0.09714250266551971]])]


A0, B0 = [-1.0, 1.5], [[0.5, -0.25], [0.3, 0.1]]


def loss_fn(a, b):
    return (1 - a[0]) ** 2 + 100 * (a[1] - a[0] ** 2) ** 2 + (b ** 2).sum() + (b * a[0]).sum()


def make(name, kw):
    a = jitorch.tensor(A0, requires_grad=True)
    b = jitorch.tensor(B0, requires_grad=True)
    return a, b, getattr(optim, name)([a, b], **kw)


def train(opt, a, b, n):
    for _ in range(n):
        opt.zero_grad()
        loss_fn(a, b).backward()
        opt.step()


def close(x, ref, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.array(x.tolist()), np.array(ref), rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", REFERENCE, ids=lambda c: f"{c[0]}-{sorted(c[1])}")
def test_trajectory_matches_pytorch(case):
    name, kw, ref_a, ref_b = case
    a, b, opt = make(name, kw)
    train(opt, a, b, 10)
    close(a, ref_a)
    close(b, ref_b)


@pytest.mark.parametrize("case", REFERENCE[::3], ids=lambda c: f"{c[0]}-{sorted(c[1])}")
def test_state_dict_round_trip_continues_identically(case):
    name, kw, ref_a, ref_b = case
    a, b, opt = make(name, kw)
    train(opt, a, b, 4)
    sd = opt.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert sd["param_groups"][0]["params"] == [0, 1]
    a2 = a.detach().clone().requires_grad_(True)
    b2 = b.detach().clone().requires_grad_(True)
    opt2 = getattr(optim, name)([a2, b2], **kw)
    opt2.load_state_dict(copy.deepcopy(sd))
    train(opt, a, b, 6)
    train(opt2, a2, b2, 6)
    assert a2.tolist() == a.tolist() and b2.tolist() == b.tolist()
    close(a2, ref_a)
    close(b2, ref_b)


def test_adam_state_dict_format():
    a, b, opt = make("Adam", dict(lr=0.01, amsgrad=True))
    train(opt, a, b, 2)
    sd = opt.state_dict()
    assert list(sd["state"]) == [0, 1]
    st = sd["state"][1]
    assert list(st) == ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]
    assert st["step"].dtype == jitorch.float32 and st["step"].dim() == 0
    assert st["step"].item() == 2.0
    assert st["exp_avg"].shape == (2, 2)
    g = sd["param_groups"][0]
    assert g == {"lr": 0.01, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0,
                 "amsgrad": True, "maximize": False, "foreach": None, "capturable": False,
                 "differentiable": False, "fused": None, "decoupled_weight_decay": False,
                 "params": [0, 1]}


@pytest.mark.parametrize("name,kw", [
    ("SGD", dict(lr=0.001, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("RMSprop", dict(centered=True, momentum=0.5)),
    ("NAdam", dict(decoupled_weight_decay=True, weight_decay=0.1)),
    ("RAdam", dict(lr=0.001)),
])
def test_scripted_step_equals_eager_functional(name, kw):
    """The optimizer's compiled step updates params exactly like the eager functional call.
    (Needs in-place writes to argument tensors to be visible after a scripted call.)"""
    results = []
    for use_script in (False, "always"):
        O.USE_SCRIPT = use_script
        try:
            a, b, opt = make(name, kw)
            train(opt, a, b, 7)
        finally:
            O.USE_SCRIPT = True
        results.append((a.tolist(), b.tolist(), {k: v.tolist() if isinstance(v, jitorch.Tensor)
                                                 else v for k, v in opt.state[b].items()}))
    # compiled float32 code may round differently (contracted multiply-adds)
    for got, want in zip(results[1][:2], results[0][:2]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert results[1][2].keys() == results[0][2].keys()
    for k in results[0][2]:
        np.testing.assert_allclose(results[1][2][k], results[0][2][k], rtol=1e-5, atol=1e-7)
    assert type(opt)._fn.scripted  # a ScriptFunction per options tuple


def test_scripted_functional_updates_in_place():
    p = [jitorch.ones(3), jitorch.ones(2, 2)]
    g = [jitorch.full((3,), 0.5), jitorch.full((2, 2), 0.25)]
    bufs = [jitorch.zeros(3), jitorch.zeros(2, 2)]
    eager = [[x.clone() for x in lst] for lst in (p, g, bufs)]
    F.sgd(*eager, True, 0.1, 0.9, 0.0, 0.01, False, False)
    # the kernel of these options (first, momentum, no nesterov/maximize, weight decay)
    step = jitorch.script(F.SGD.kernel((True, True, False, False, True)))
    step(p, g, bufs, 0.1, 0.9, 0.0, 0.01)
    assert [x.tolist() for x in p] == [x.tolist() for x in eager[0]]
    assert [x.tolist() for x in bufs] == [x.tolist() for x in eager[2]]
    assert p[0].tolist() == pytest.approx([1 - 0.1 * 0.51] * 3)


def test_lr_change_does_not_recompile():
    O.USE_SCRIPT = "always"
    try:
        a, b, opt = make("Adam", dict(lr=0.01))
        train(opt, a, b, 1)
        fn = optim.Adam._fn.scripted[(False, False, False, False)]
        n = fn.stats["specialisations"]
        for lr in (0.02, 0.005, 1e-4):
            opt.param_groups[0]["lr"] = lr
            train(opt, a, b, 1)
        assert fn.stats["specialisations"] == n
    finally:
        O.USE_SCRIPT = True


def test_fused_mode_uses_generated_code_or_records_why_not():
    a, b, opt = make("SGD", dict(lr=0.01, momentum=0.9, fused=True))
    train(opt, a, b, 3)
    step = optim.SGD._fn
    assert step._modes
    for key, mode in step._modes.items():
        assert mode == "script" or "only interprets" in step.fallbacks[key]
        if mode == "eager":  # the interpreter's reason is the runtime's own
            assert step.fallbacks[key].split("(", 1)[1][:-1] in step.why_interpreted.values()


def test_param_groups_and_add_param_group():
    a = jitorch.tensor([1.0, 2.0], requires_grad=True)
    b = jitorch.tensor([3.0], requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[0]["momentum"] == 0.9
    (a.sum() + 2 * b.sum()).backward()
    opt.step()
    assert a.tolist() == pytest.approx([0.9, 1.9]) and b.tolist() == pytest.approx([2.0])
    c = jitorch.zeros(2, requires_grad=True)
    opt.add_param_group({"params": [c], "momentum": 0.0})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["nesterov"] is False
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        opt.add_param_group({"params": [a * 2]})
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the "
                                        "params is int"):
        opt.add_param_group({"params": [1]})
    with pytest.raises(TypeError, match="param_group must be a dict, but got list"):
        opt.add_param_group([c])
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {jitorch.zeros(1, requires_grad=True)}})
    with pytest.warns(UserWarning, match="duplicate parameters"):
        d = jitorch.zeros(1, requires_grad=True)
        opt.add_param_group({"params": [d, d]})


def test_constructor_errors():
    p = [jitorch.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError, match="^Invalid learning rate: -1$"):
        optim.SGD(p, lr=-1)
    with pytest.raises(ValueError, match="^Invalid momentum value: -0.5$"):
        optim.SGD(p, momentum=-0.5)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero "
                                         "dampening"):
        optim.SGD(p, momentum=0.9, dampening=0.1, nesterov=True)
    with pytest.raises(ValueError, match="^Invalid beta parameter at index 1: 1.0$"):
        optim.Adam(p, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="^Invalid beta parameter at index 0: -0.1$"):
        optim.AdamW(p, betas=(-0.1, 0.9))
    with pytest.raises(ValueError, match="^Invalid epsilon value: -1e-08$"):
        optim.RAdam(p, eps=-1e-8)
    with pytest.raises(ValueError, match="^Invalid weight_decay value: -0.1$"):
        optim.NAdam(p, weight_decay=-0.1)
    with pytest.raises(ValueError, match="^Invalid momentum_decay value: -1$"):
        optim.NAdam(p, momentum_decay=-1)
    with pytest.raises(ValueError, match="^Invalid rho value: 1.5$"):
        optim.Adadelta(p, rho=1.5)
    with pytest.raises(ValueError, match="^Invalid alpha value: -1$"):
        optim.RMSprop(p, alpha=-1)
    with pytest.raises(ValueError, match="^Invalid lr_decay value: -1$"):
        optim.Adagrad(p, lr_decay=-1)
    with pytest.raises(ValueError, match="^Invalid initial_accumulator_value value: -1$"):
        optim.Adagrad(p, initial_accumulator_value=-1)
    with pytest.raises(ValueError, match="^optimizer got an empty parameter list$"):
        optim.Adam([])
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an "
                                        "iterable of Tensors or dicts"):
        optim.Adam(p[0])
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
        optim.Adam(p, fused=True, foreach=True)


def test_defaults_match_pytorch():
    p = [jitorch.zeros(2, requires_grad=True)]
    assert optim.SGD(p).defaults == {
        "lr": 0.001, "momentum": 0, "dampening": 0, "weight_decay": 0, "nesterov": False,
        "maximize": False, "foreach": None, "differentiable": False, "fused": None}
    assert optim.AdamW(p).defaults["weight_decay"] == 0.01
    assert optim.AdamW(p).defaults["decoupled_weight_decay"] is True
    assert optim.Adagrad(p).defaults == {
        "lr": 0.01, "lr_decay": 0, "eps": 1e-10, "weight_decay": 0,
        "initial_accumulator_value": 0, "foreach": None, "maximize": False,
        "differentiable": False, "fused": None}
    assert optim.RMSprop(p).defaults["alpha"] == 0.99
    assert optim.Adadelta(p).defaults["lr"] == 1.0 and optim.Adadelta(p).defaults["eps"] == 1e-6
    assert optim.Adamax(p).defaults["lr"] == 0.002
    assert optim.NAdam(p).defaults["momentum_decay"] == 0.004
    assert optim.RAdam(p).defaults["decoupled_weight_decay"] is False
    # Adagrad makes its state in the constructor, as PyTorch does
    ada = optim.Adagrad(p, initial_accumulator_value=0.5)
    assert ada.state[p[0]]["sum"].tolist() == [0.5, 0.5]
    assert ada.state[p[0]]["step"].item() == 0.0


def test_zero_grad_and_skipping_params_without_grad():
    a = jitorch.tensor([1.0, 2.0], requires_grad=True)
    b = jitorch.tensor([3.0], requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    (a * a).sum().backward()
    opt.step()
    assert b.tolist() == [3.0] and len(opt.state[b]) == 0
    assert opt.state[a]["step"].item() == 1.0
    opt.zero_grad(set_to_none=False)
    assert a.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert a.grad is None
    # b joins later: its own step count (a separate call with step=1)
    (a.sum() + b.sum()).backward()
    opt.step()
    assert opt.state[a]["step"].item() == 2.0 and opt.state[b]["step"].item() == 1.0
    assert b.tolist() == pytest.approx([2.9])


def test_closure_and_hooks():
    a = jitorch.tensor([1.0, -2.0], requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, args, kw: calls.append("pre"))
    opt.register_step_post_hook(lambda o, args, kw: calls.append("post"))

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 5.0 and calls == ["pre", "post"]
    assert a.tolist() == pytest.approx([0.8, -1.6])
    h1.remove()
    opt.step(closure)
    assert calls == ["pre", "post", "post"]


def test_repr_and_load_errors():
    a = jitorch.zeros(2, requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    assert repr(opt) == ("SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: "
                         "False\n    foreach: None\n    fused: None\n    lr: 0.1\n    "
                         "maximize: False\n    momentum: 0\n    nesterov: False\n    "
                         "weight_decay: 0\n)")
    other = optim.SGD([{"params": [a]}, {"params": [jitorch.zeros(1, requires_grad=True)]}])
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict(other.state_dict())
    two = optim.SGD([a, jitorch.zeros(1, requires_grad=True)])
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict(two.state_dict())


def test_complex_params_run_eagerly_like_view_as_real():
    z = jitorch.tensor([1 + 2j, -1 + 0.5j], requires_grad=False)
    r = jitorch.view_as_real(z).clone()
    z.grad = jitorch.tensor([0.5 - 1j, 0.25 + 0.25j])
    r.grad = jitorch.view_as_real(z.grad).clone()
    oz, orr = optim.Adam([z], lr=0.1), optim.Adam([r], lr=0.1)
    for _ in range(3):
        oz.step()
        orr.step()
    assert jitorch.view_as_real(z).tolist() == r.tolist()
    # the classes hand complex params over as real views: still the compiled path
    assert "complex" not in optim.Adam._fn.fallbacks


def test_compiled_step_falls_back_for_complex_and_records_why():
    step = O.CompiledStep(F.SGD)
    p = [jitorch.tensor([1 + 1j])]
    g = [jitorch.tensor([0.5 - 0.5j])]
    step((False, False, False, False, False), p, g, g, 0.1, 0.0, 0.0, 0.0)
    assert p[0].tolist() == pytest.approx([0.95 + 1.05j])
    assert "compiler" in step.fallbacks["complex"]


def test_checkpoint_through_jitorch_save_load():
    import io
    a, b, opt = make("RMSprop", dict(lr=0.01, centered=True, momentum=0.5))
    train(opt, a, b, 3)
    f = io.BytesIO()
    jitorch.save({"opt": opt.state_dict(), "a": a, "b": b}, f)
    f.seek(0)
    ck = jitorch.load(f)
    a2, b2 = ck["a"].requires_grad_(True), ck["b"].requires_grad_(True)
    opt2 = optim.RMSprop([a2, b2], lr=0.01, centered=True, momentum=0.5)
    opt2.load_state_dict(ck["opt"])
    assert list(opt2.state[b2]) == ["step", "square_avg", "momentum_buffer", "grad_avg"]
    train(opt, a, b, 3)
    train(opt2, a2, b2, 3)
    assert a2.tolist() == a.tolist() and b2.tolist() == b.tolist()
