"""In-place writes inside `with no_grad():` in scripted code follow eager autograd's rules (issue 21
defect 5): a leaf that requires grad may be written there (the hand-written SGD step), stays a
leaf and keeps its history; the same write with grad on raises eager's error. Each case runs
compiled, interpreted (no program) and in place (arguments that share memory: runtime/alias.py)
and is compared with the eager Python function."""
from __future__ import annotations

from typing import List

import numpy as np
import pytest

import jitorch as torch
from jitorch.script.runtime import programs

LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation."


def sgd(w, g, lr: float):
    with torch.no_grad():
        w.sub_(g * lr)


def sgd_list(params: List[torch.Tensor], grads: List[torch.Tensor], lr: float):
    with torch.no_grad():
        for i in range(len(params)):
            params[i].add_(grads[i], alpha=-lr)


def sgd_sliced(w, g, lr: float):
    with torch.no_grad():
        w[1:] -= g[1:] * lr
        w[0] = 0.0


@torch.jit.script
def sub_in_place(w, g):
    w.sub_(g)


def sgd_by_call(w, g):
    with torch.no_grad():
        sub_in_place(w, g)


def step_then_use(w, x):
    with torch.no_grad():
        w.mul_(3.0)
    return (w * x).sum()


def non_leaf(x):
    h = x * 2.0
    with torch.no_grad():
        h.mul_(3.0)
    return h


def grad_on_write(w, g):
    with torch.no_grad():
        w.sub_(g)
    w.add_(g)


def enable_inside(w, g):
    with torch.no_grad():
        with torch.enable_grad():
            w.sub_(g)


@pytest.fixture(params=["compiled", "interpreted"])
def tier(request, monkeypatch):
    if request.param == "interpreted":
        monkeypatch.setattr(programs, "_lower",
                            lambda graph, arg_types, static=None: (graph, None, "test"))
    return request.param


def _leaves(*vals):
    return [torch.tensor(v, requires_grad=True) for v in vals]


def _check_tier(f, tier):
    if tier == "compiled":
        assert "runs interpreted" not in f.code, f.code
    else:
        assert "runs interpreted" in f.code or "interpreted" in str(f.stats), f.code


def _same_state(got, want):
    """The same values, and the same autograd state: leaf, requires_grad, no grad_fn."""
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    assert got.is_leaf == want.is_leaf and got.requires_grad == want.requires_grad
    assert (got.grad_fn is None) == (want.grad_fn is None)


def test_sgd_step_updates_the_leaf_weights_as_eager(tier):
    f = torch.jit.script(sgd)
    w, g = _leaves([1.0, 2.0, 3.0])[0], torch.tensor([0.5, -1.0, 2.0])
    ew = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for _ in range(2):  # the first call builds, the second runs the built program
        v, ev = w._version[0], ew._version[0]
        f(w, g, 0.1)
        sgd(ew, g, 0.1)
        _same_state(w, ew)
        assert w._version[0] - v == ew._version[0] - ev == 1
    assert w.is_leaf and w.grad_fn is None and w.grad is None
    _check_tier(f, tier)
    if tier == "compiled":  # the markers are values in the program (passes/no_grad_marks.py)
        assert "_no_grad" not in str(f.graph_for(w, g, 0.1))
    (w * w).sum().backward()  # still the leaf autograd knows
    np.testing.assert_allclose(w.grad.numpy(), 2 * w.detach().numpy())


def test_sgd_step_over_lists_and_slices(tier):
    for fn, make in ((sgd_list, lambda ps, gs: (ps, gs)),
                     (sgd_sliced, lambda ps, gs: (ps[0], gs[0]))):
        f = torch.jit.script(fn)
        ps, eps = _leaves([1.0, 2.0], [3.0, 4.0, 5.0]), _leaves([1.0, 2.0], [3.0, 4.0, 5.0])
        gs = [torch.tensor([0.5, 0.25]), torch.tensor([1.0, -1.0, 2.0])]
        f(*make(ps, gs), 0.5)
        fn(*make(eps, gs), 0.5)
        for p, ep in zip(ps, eps):
            _same_state(p, ep)


def test_written_arguments_that_share_memory_run_in_place():
    """`sgd(w, w, lr)` (and any writing call inside autocast): the call runs in place
    (runtime/alias.py), the write still under no_grad's rules."""
    f = torch.jit.script(sgd)
    w, ew = _leaves([1.0, 2.0])[0], _leaves([1.0, 2.0])[0]
    f(w, w, 0.5)
    sgd(ew, ew, 0.5)
    _same_state(w, ew)
    with torch.autocast("cpu"):  # a writing call inside autocast runs in place too
        f(w, ew, 0.5)
        sgd(ew, ew, 0.5)
    _same_state(w, ew)


def test_a_called_function_s_writes_inside_the_block_follow_it_too(tier):
    f = torch.jit.script(sgd_by_call)
    g = torch.tensor([0.5, -1.0])
    w, ew = _leaves([1.0, 2.0])[0], _leaves([1.0, 2.0])[0]
    f(w, g)
    sgd_by_call(ew, g)
    _same_state(w, ew)
    f(w, w)  # in place
    sgd_by_call(ew, ew)
    _same_state(w, ew)
    with torch.autocast("cpu"):  # interpreted, in place (runtime/functions.py `_autocast_call`)
        f(w, g)
        sgd_by_call(ew, g)
    _same_state(w, ew)


def test_reads_after_the_block_keep_the_tensor_s_autograd_identity(tier):
    for fn, make in ((step_then_use, lambda: _leaves([1.0, -2.0], [3.0, 0.5])),
                     (non_leaf, lambda: _leaves([1.0, -2.0]))):
        f = torch.jit.script(fn)
        args, eargs = make(), make()
        out, eout = f(*args), fn(*eargs)
        np.testing.assert_array_equal(out.detach().numpy(), eout.detach().numpy())
        out.sum().backward()
        eout.sum().backward()
        for a, ea in zip(args, eargs):
            _same_state(a, ea)
            np.testing.assert_array_equal(a.grad.numpy(), ea.grad.numpy())


@pytest.mark.parametrize("fn", [grad_on_write, enable_inside])
def test_a_write_with_grad_on_raises_eager_s_error(fn, tier):
    f = torch.jit.script(fn)
    w, g = _leaves([1.0, 2.0])[0], torch.tensor([0.5, 0.5])
    with pytest.raises(RuntimeError) as eager:
        fn(torch.tensor([1.0, 2.0], requires_grad=True), g)
    assert str(eager.value) == LEAF_ERROR
    with pytest.raises(RuntimeError, match=LEAF_ERROR.replace(".", r"\.")):
        f(w, g)
    np.testing.assert_array_equal(w.detach().numpy(), [1.0, 2.0])  # refused before any write


def test_the_caller_s_no_grad_allows_a_write_with_grad_on():
    f = torch.jit.script(grad_on_write)
    w = _leaves([1.0, 2.0])[0]
    with torch.no_grad():
        f(w, torch.tensor([0.5, 0.5]))
    assert w.is_leaf and w.grad_fn is None
    np.testing.assert_array_equal(w.detach().numpy(), [1.0, 2.0])


class SelfUpdating(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([1.0, 2.0, 3.0]))

    def forward(self, g, lr: float):
        with torch.no_grad():
            self.w.sub_(g * lr)
        return self.w * 2.0


def test_a_scripted_module_updates_its_parameter_and_keeps_doing_so_after_save_load(tmp_path):
    g = torch.tensor([0.5, -1.0, 2.0])
    m = torch.jit.script(SelfUpdating())
    torch.jit.save(m, str(tmp_path / "m.pt"))  # (saved before any update: a fresh module's w)
    for mod in (m, torch.jit.load(str(tmp_path / "m.pt"))):
        ref = SelfUpdating()
        for _ in range(2):
            out, eout = mod(g, 0.1), ref(g, 0.1)
        _same_state(mod.w, ref.w)
        np.testing.assert_array_equal(out.detach().numpy(), eout.detach().numpy())
        out.sum().backward()
        eout.sum().backward()
        np.testing.assert_array_equal(mod.w.grad.numpy(), ref.w.grad.numpy())
