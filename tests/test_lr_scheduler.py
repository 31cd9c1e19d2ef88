"""jitorch.optim.lr_scheduler: every scheduler's lr sequence equals PyTorch 2.13's (sequences
computed with torch.optim.lr_scheduler and embedded), closed forms, state_dict, errors."""
import math
import warnings

import pytest

import jitorch
from jitorch import optim
from jitorch.optim import lr_scheduler as L

# Two param groups (lr 0.1 and 0.2; SGD momentum 0.9): get_last_lr() after construction and after
# each of 13 steps; "<name>_mom" is group 0's momentum after each step (OneCycleLR cycles it).
EXPECTED = {'step': [[0.1, 0.2], [0.1, 0.2], [0.1, 0.2], [0.05, 0.1], [0.05, 0.1], [0.05, 0.1],
          [0.025, 0.05], [0.025, 0.05], [0.025, 0.05], [0.0125, 0.025], [0.0125, 0.025],
          [0.0125, 0.025], [0.00625, 0.0125], [0.00625, 0.0125]],
 'multistep': [[0.1, 0.2], [0.1, 0.2], [0.03, 0.06], [0.03, 0.06], [0.03, 0.06],
               [0.0026999999999999997, 0.005399999999999999],
               [0.0026999999999999997, 0.005399999999999999],
               [0.0026999999999999997, 0.005399999999999999],
               [0.0026999999999999997, 0.005399999999999999],
               [0.0008099999999999998, 0.0016199999999999997],
               [0.0008099999999999998, 0.0016199999999999997],
               [0.0008099999999999998, 0.0016199999999999997],
               [0.0008099999999999998, 0.0016199999999999997],
               [0.0008099999999999998, 0.0016199999999999997]],
 'exp': [[0.1, 0.2], [0.09000000000000001, 0.18000000000000002],
         [0.08100000000000002, 0.16200000000000003], [0.07290000000000002, 0.14580000000000004],
         [0.06561000000000002, 0.13122000000000003], [0.05904900000000002, 0.11809800000000004],
         [0.05314410000000002, 0.10628820000000004], [0.04782969000000002, 0.09565938000000004],
         [0.043046721000000024, 0.08609344200000005],
         [0.03874204890000002, 0.07748409780000004], [0.03486784401000002, 0.06973568802000003],
         [0.03138105960900001, 0.06276211921800003],
         [0.028242953648100012, 0.056485907296200025],
         [0.025418658283290013, 0.050837316566580026]],
 'cos': [[0.1, 0.2], [0.09140576474687263, 0.18185661446562001],
         [0.06890576474687263, 0.13435661446562], [0.04109423525312736, 0.07564338553437999],
         [0.018594235253127367, 0.02814338553438], [0.01, 0.01],
         [0.018594235253127367, 0.02814338553437999], [0.04109423525312739, 0.07564338553438],
         [0.06890576474687267, 0.13435661446562006], [0.09140576474687269, 0.1818566144656201],
         [0.10000000000000006, 0.2000000000000001], [0.09140576474687272, 0.18185661446562015],
         [0.06890576474687268, 0.13435661446562008],
         [0.0410942352531274, 0.07564338553438005]],
 'warm': [[0.1, 0.2], [0.07525000000000001, 0.15025],
          [0.025750000000000012, 0.050750000000000024], [0.1, 0.2],
          [0.09336825748732973, 0.18666952767655168], [0.07525000000000001, 0.15025],
          [0.0505, 0.1005], [0.025750000000000012, 0.050750000000000024],
          [0.007631742512670284, 0.014330472323448348], [0.1, 0.2],
          [0.09831332840130888, 0.1966096197157623], [0.09336825748732973, 0.18666952767655168],
          [0.0855017856687341, 0.17085712472806147], [0.07525000000000001, 0.15025]],
 'lambda': [[0.1, 0.2], [0.05, 0.1], [0.03333333333333333, 0.06666666666666667], [0.025, 0.05],
            [0.020000000000000004, 0.04000000000000001],
            [0.016666666666666666, 0.03333333333333333],
            [0.014285714285714285, 0.02857142857142857], [0.0125, 0.025],
            [0.011111111111111112, 0.022222222222222223],
            [0.010000000000000002, 0.020000000000000004],
            [0.009090909090909092, 0.018181818181818184],
            [0.008333333333333333, 0.016666666666666666],
            [0.007692307692307693, 0.015384615384615385],
            [0.007142857142857143, 0.014285714285714285]],
 'mult': [[0.1, 0.2], [0.095, 0.19], [0.09025, 0.1805], [0.0857375, 0.171475],
          [0.08145062499999998, 0.16290124999999997],
          [0.07737809374999999, 0.15475618749999998],
          [0.07350918906249998, 0.14701837812499996],
          [0.06983372960937498, 0.13966745921874996],
          [0.06634204312890622, 0.13268408625781244], [0.0630249409724609, 0.1260498819449218],
          [0.05987369392383786, 0.11974738784767572],
          [0.05688000922764597, 0.11376001845529193],
          [0.05403600876626367, 0.10807201753252733],
          [0.05133420832795048, 0.10266841665590096]],
 'linear': [[0.025, 0.05], [0.035833333333333335, 0.07166666666666667],
            [0.046666666666666676, 0.09333333333333335],
            [0.057500000000000016, 0.11500000000000003],
            [0.06833333333333334, 0.1366666666666667],
            [0.07916666666666669, 0.15833333333333338],
            [0.09000000000000002, 0.18000000000000005],
            [0.09000000000000002, 0.18000000000000005],
            [0.09000000000000002, 0.18000000000000005],
            [0.09000000000000002, 0.18000000000000005],
            [0.09000000000000002, 0.18000000000000005],
            [0.09000000000000002, 0.18000000000000005],
            [0.09000000000000002, 0.18000000000000005],
            [0.09000000000000002, 0.18000000000000005]],
 'const': [[0.05, 0.1], [0.05, 0.1], [0.05, 0.1], [0.05, 0.1], [0.1, 0.2], [0.1, 0.2],
           [0.1, 0.2], [0.1, 0.2], [0.1, 0.2], [0.1, 0.2], [0.1, 0.2], [0.1, 0.2], [0.1, 0.2],
           [0.1, 0.2]],
 'onecycle': [[0.040000000000000036, 0.08000000000000007],
              [0.253326288150591, 0.506652576301182], [0.703688047535243, 1.407376095070486],
              [0.9907769345935507, 1.9815538691871013],
              [0.9836474969297887, 1.9672949938595774],
              [0.9190443762697106, 1.8380887525394212],
              [0.8117456539497631, 1.6234913078995261],
              [0.6726838364805451, 1.3453676729610902], [0.5160277246826726, 1.032055449365345],
              [0.35773877573965707, 0.7154775514793141],
              [0.21394481417223551, 0.42788962834447103],
              [0.0992967918932656, 0.1985935837865312],
              [0.025476024606159702, 0.050952049212319404], [4e-06, 8e-06]],
 'onecycle_mom': [0.92777851165098, 0.8808658283817454, 0.8509607359798385, 0.8516352568480485,
                  0.858095594755408, 0.8688255099070633, 0.8827317472789346, 0.8983974211214172,
                  0.9142263793315516, 0.9286058330061084, 0.9400706810933978,
                  0.9474527873505334, 0.95],
 'onecycle3': [[0.04, 0.04], [0.33999999999999997, 0.33999999999999997], [0.64, 0.64],
               [0.94, 0.94], [0.76, 0.76], [0.4600000000000001, 0.4600000000000001],
               [0.16000000000000014, 0.16000000000000014], [0.036364, 0.036364],
               [0.030304, 0.030304], [0.024244, 0.024244], [0.018184, 0.018184],
               [0.012124, 0.012124], [0.006064, 0.006064],
               [3.9999999999970615e-06, 3.9999999999970615e-06]],
 'onecycle3_mom': [0.91875, 0.8875, 0.85625, 0.875, 0.90625, 0.9375, 0.95, 0.95, 0.95, 0.95,
                   0.95, 0.95, 0.95],
 'seq': [[0.010000000000000002, 0.020000000000000004], [0.04, 0.08], [0.07, 0.14], [0.1, 0.2],
         [0.1, 0.2], [0.08000000000000002, 0.16000000000000003],
         [0.06400000000000002, 0.12800000000000003],
         [0.051200000000000016, 0.10240000000000003],
         [0.04096000000000002, 0.08192000000000003], [0.03276800000000001, 0.06553600000000002],
         [0.026214400000000013, 0.052428800000000025],
         [0.02097152000000001, 0.04194304000000002],
         [0.016777216000000008, 0.033554432000000016],
         [0.013421772800000007, 0.026843545600000015]],
 'chain': [[0.05, 0.1], [0.045000000000000005, 0.09000000000000001],
           [0.04050000000000001, 0.08100000000000002],
           [0.07290000000000002, 0.14580000000000004],
           [0.06561000000000002, 0.13122000000000003],
           [0.05904900000000002, 0.11809800000000004],
           [0.05314410000000002, 0.10628820000000004],
           [0.04782969000000002, 0.09565938000000004],
           [0.043046721000000024, 0.08609344200000005],
           [0.03874204890000002, 0.07748409780000004],
           [0.03486784401000002, 0.06973568802000003],
           [0.03138105960900001, 0.06276211921800003],
           [0.028242953648100012, 0.056485907296200025],
           [0.025418658283290013, 0.050837316566580026]],
 'plateau': [[0.1, 0.2], [0.1, 0.2], [0.1, 0.2], [0.05, 0.1], [0.05, 0.1], [0.05, 0.1],
             [0.05, 0.1], [0.05, 0.1], [0.025, 0.05], [0.025, 0.05], [0.025, 0.05],
             [0.02, 0.025]],
 'plateau_max': [[0.1], [0.010000000000000002], [0.010000000000000002], [0.0010000000000000002],
                 [0.0010000000000000002], [0.0010000000000000002]]}
CLOSED_FORM = {'step': [0.025, 0.1, 0.05, 0.0125, 0.1],
 'multistep': [0.0026999999999999997, 0.03, 0.0026999999999999997, 0.00081, 0.1],
 'exp': [0.04782969000000001, 0.08100000000000002, 0.05904900000000001, 0.031381059609000006,
         0.1],
 'cos': [0.041094235253127366, 0.06890576474687264, 0.01, 0.09140576474687268, 0.1],
 'linear': [0.09000000000000001, 0.04666666666666667, 0.07916666666666666, 0.09000000000000001,
            0.025],
 'const': [0.1, 0.05, 0.1, 0.1, 0.05],
 'warm': [0.025750000000000012, 0.025750000000000012, 0.07525000000000001, 0.09336825748732973,
          0.1]}


def make(groups=2):
    ps = [{"params": [jitorch.zeros(1, requires_grad=True)], "lr": 0.1 * (i + 1)}
          for i in range(groups)]
    return optim.SGD(ps, lr=0.1, momentum=0.9)


CASES = {
    "step": lambda o: L.StepLR(o, 3, gamma=0.5),
    "multistep": lambda o: L.MultiStepLR(o, [2, 5, 5, 9], gamma=0.3),
    "exp": lambda o: L.ExponentialLR(o, 0.9),
    "cos": lambda o: L.CosineAnnealingLR(o, T_max=5, eta_min=0.01),
    "warm": lambda o: L.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001),
    "lambda": lambda o: L.LambdaLR(o, lambda e: 1.0 / (e + 1)),
    "mult": lambda o: L.MultiplicativeLR(o, lambda e: 0.95),
    "linear": lambda o: L.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=6),
    "const": lambda o: L.ConstantLR(o, factor=0.5, total_iters=4),
    "onecycle": lambda o: L.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=14),
    "onecycle3": lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=14, three_phase=True,
                                        anneal_strategy="linear"),
    "seq": lambda o: L.SequentialLR(o, [L.LinearLR(o, 0.1, total_iters=3),
                                        L.ExponentialLR(o, 0.8)], milestones=[4]),
    "chain": lambda o: L.ChainedScheduler([L.ConstantLR(o, 0.5, total_iters=3),
                                           L.ExponentialLR(o, 0.9)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_sequence_matches_pytorch(name):
    o = make()
    s = CASES[name](o)
    seq, mom = [list(s.get_last_lr())], []
    for _ in range(13):
        o.step()
        s.step()
        seq.append(list(s.get_last_lr()))
        mom.append(o.param_groups[0]["momentum"])
    assert seq == EXPECTED[name]
    assert [g["lr"] for g in o.param_groups] == seq[-1]
    if name + "_mom" in EXPECTED:
        assert mom == EXPECTED[name + "_mom"]


def test_reduce_lr_on_plateau_matches_pytorch():
    o = make()
    s = L.ReduceLROnPlateau(o, factor=0.5, patience=1, cooldown=1, min_lr=[0.02, 0.0])
    seq = []
    for m in [5, 4, 4, 4, 4, 4, 3, 3.9999, 3.9999, 3.9999, 3.9999, 3.9999]:
        s.step(m)
        seq.append(list(s.get_last_lr()))
    assert seq == EXPECTED["plateau"]
    o = make(groups=1)
    s = L.ReduceLROnPlateau(o, mode="max", threshold_mode="abs", threshold=0.5, patience=0)
    seq = []
    for m in [1, 1.4, 2, 2.2, 2.6, 3.2]:
        s.step(jitorch.tensor(m))  # a 0-d tensor metric works (float(metrics))
        seq.append(list(s.get_last_lr()))
    assert seq == EXPECTED["plateau_max"]


@pytest.mark.parametrize("name", list(CLOSED_FORM))
def test_step_with_epoch_uses_closed_form(name):
    o = make(groups=1)
    s = CASES[name](o)
    vals = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for e in [7, 2, 5, 11, 0]:
            s.step(e)
            vals.append(s.get_last_lr()[0])
    assert vals == pytest.approx(CLOSED_FORM[name], rel=1e-12, abs=1e-15)


def test_epoch_argument_warns():
    s = L.StepLR(make(), 2)
    with pytest.warns(UserWarning, match="epoch parameter in `scheduler.step\\(\\)`"):
        s.step(3)


def test_state_dict_round_trip():
    o = make()
    s = L.CosineAnnealingLR(o, T_max=5, eta_min=0.01)
    for _ in range(3):
        o.step()
        s.step()
    sd = s.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 3 and sd["T_max"] == 5
    assert sorted(L.StepLR(make(), 3).state_dict()) == [
        "_get_lr_called_within_step", "_is_initial", "_last_lr", "_step_count", "base_lrs",
        "gamma", "last_epoch", "step_size"]
    o2 = make()
    o2.load_state_dict(o.state_dict())
    s2 = L.CosineAnnealingLR(o2, T_max=99)
    s2.load_state_dict(sd)
    for _ in range(4):
        for opt, sch in ((o, s), (o2, s2)):
            opt.step()
            sch.step()
        assert s2.get_last_lr() == s.get_last_lr()
    assert s2.get_last_lr() == EXPECTED["cos"][7]
    # schedulers holding lambdas save None for plain functions (as PyTorch)
    lam = L.LambdaLR(make(), [lambda e: 1.0, lambda e: 2.0])
    assert lam.state_dict()["lr_lambdas"] == [None, None]
    seq = L.SequentialLR(o, [L.ConstantLR(o), L.ExponentialLR(o, 0.5)], milestones=[2])
    assert len(seq.state_dict()["_schedulers"]) == 2


def test_resume_with_last_epoch_and_initial_lr():
    o = make()
    L.StepLR(o, 3)
    assert [g["initial_lr"] for g in o.param_groups] == [0.1, 0.2]
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups"):
        L.StepLR(make(), 3, last_epoch=4)


def test_scheduler_drives_compiled_optimizer_lr():
    x = jitorch.tensor([1.0, 2.0], requires_grad=True)
    o = optim.SGD([x], lr=1.0)
    s = L.StepLR(o, 1, gamma=0.5)
    want = [1.0, 2.0]
    for i in range(3):
        o.zero_grad()
        x.sum().backward()
        o.step()
        want = [w - 0.5 ** i for w in want]
        s.step()
    assert x.tolist() == want


def test_errors():
    o = make()
    with pytest.raises(TypeError, match="^int is not an Optimizer$"):
        L.StepLR(3, 2)
    with pytest.raises(ValueError, match="Constant multiplicative factor expected to be between"):
        L.ConstantLR(o, factor=1.5)
    with pytest.raises(ValueError, match="Starting multiplicative factor expected to be greater"):
        L.LinearLR(o, start_factor=0)
    with pytest.raises(ValueError, match="Ending multiplicative factor expected to be between"):
        L.LinearLR(o, end_factor=2)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        L.CosineAnnealingWarmRestarts(o, T_0=0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 0"):
        L.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 3"):
        L.LambdaLR(o, [lambda e: 1.0] * 3)
    with pytest.raises(TypeError, match="lr_lambda should be a function, but got int"):
        L.MultiplicativeLR(o, 3)
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        L.OneCycleLR(o, 1.0)
    with pytest.raises(ValueError, match="Expected positive integer total_steps, but got 0"):
        L.OneCycleLR(o, 1.0, total_steps=0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        L.OneCycleLR(o, 1.0, total_steps=5, anneal_strategy="x")
    with pytest.raises(ValueError, match="max_lr must have the same length as "
                                         "optimizer.param_groups"):
        L.OneCycleLR(o, [1.0], total_steps=5)
    one = L.OneCycleLR(make(), 1.0, total_steps=3)
    for _ in range(3):
        one.step()
    with pytest.raises(ValueError, match="^Tried to step 4 times. The specified number of "
                                         "total steps is 3$"):
        one.step()
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        L.OneCycleLR(optim.Adagrad([jitorch.zeros(1, requires_grad=True)]), 1.0,
                     total_steps=4)
    with pytest.raises(ValueError, match="Sequential Schedulers expects number of schedulers "
                                         "provided to be one more"):
        L.SequentialLR(o, [L.ConstantLR(o), L.ExponentialLR(o, 0.5)], milestones=[1, 2])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        L.ChainedScheduler([L.ReduceLROnPlateau(o)])
    other = make()
    with pytest.raises(ValueError, match="expects all schedulers to belong to the same "
                                         "optimizer"):
        L.SequentialLR(o, [L.ConstantLR(o), L.ExponentialLR(other, 0.5)], milestones=[1])
    with pytest.raises(ValueError, match="^Factor should be < 1.0.$"):
        L.ReduceLROnPlateau(o, factor=1.0)
    with pytest.raises(ValueError, match="^mode avg is unknown!$"):
        L.ReduceLROnPlateau(o, mode="avg")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        L.ReduceLROnPlateau(o, min_lr=[0.1])
    assert math.isinf(L.ReduceLROnPlateau(o).best)
