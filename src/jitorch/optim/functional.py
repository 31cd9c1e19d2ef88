"""The update math of every optimizer, written ONCE, with PyTorch's single-tensor arithmetic.

Each optimizer is a `StepForm`: `form.kernel(flags)` is a plain function over lists of params,
grads and state tensors plus Python scalars (lr, betas, the step count, ...) that updates the
tensors IN PLACE. Per element it computes the same jitorch ops as PyTorch's
`_single_tensor_<name>` (`lerp`, `addcmul`, `addcdiv`, ... in the same order, so float32 rounds
alike), but out of place, and writes each state tensor and the param ONCE at the end
(`exp_avg.copy_(m)`). Why: the compiler fuses everything between the reads and the writes into
one elementwise loop per parameter that reads p, g and the state once and writes them once
(targets/cpu/lower_list.py writes the loop's results straight into the argument arrays), where
`exp_avg.mul_(b).add_(g)` would be a loop, a temporary and a copy per method.

`flags` are the options that select code (maximize, amsgrad, weight_decay != 0, ...): the kernel
is a closure over them, so the script frontend folds `if maximize:` and a program holds only the
branch it runs (smaller programs compile in a fraction of the time). Scalars stay arguments,
never baked constants: a scheduler changing `lr` does not recompile. The step count (and NAdam's
`mu_product`) is a Python number shared by every tensor of one call: the classes call once per
distinct value.

The public functions (`sgd`, `adam`, ...) keep the classic signature (options as arguments) and
run the kernel eagerly. The kernels stay inside what the script frontend accepts: annotated
positional arguments, `for i in range(len(params))`, plain `if` statements. Lists that an option
does not use (e.g. `max_exp_avg_sqs` without amsgrad) are passed but never read.
"""
from __future__ import annotations

from typing import Callable, List

import jitorch
from jitorch import Tensor, _fork

__all__ = ["sgd", "adam", "adagrad", "rmsprop", "adadelta", "adamax", "nadam", "radam",
           "StepForm"]


class StepForm:
    """One optimizer's update: `kernel(flags)` builds (once per flags tuple) the function for
    that combination of code-selecting options; `flag_names` documents the tuple's order."""

    def __init__(self, name: str, factory: Callable, flag_names: tuple):
        self.name, self.factory, self.flag_names = name, factory, tuple(flag_names)
        self._kernels: dict = {}
        self._lock = _fork.lock()

    def kernel(self, flags: tuple) -> Callable:
        k = self._kernels.get(flags)
        if k is None:
            with self._lock:
                k = self._kernels.get(flags)
                if k is None:
                    k = self.factory(*flags)
                    k.__name__ = k.__qualname__ = f"{self.name}_step"
                    self._kernels[flags] = k
        return k

    def __repr__(self) -> str:
        return f"<StepForm {self.name}{self.flag_names}>"


# --- SGD -----------------------------------------------------------------------------------------
def _sgd(first: bool, momentum_on: bool, nesterov: bool, maximize: bool, wd_on: bool):
    def step_fn(params: List[Tensor], grads: List[Tensor], momentum_buffers: List[Tensor],
                lr: float, momentum: float, dampening: float, weight_decay: float):
        keep = 1.0 - dampening
        neg_lr = -lr
        for i in range(len(params)):
            param = params[i]
            grad = grads[i]
            if maximize:
                grad = -grad
            if wd_on:
                grad = grad.add(param, alpha=weight_decay)
            if momentum_on:
                buf = momentum_buffers[i]
                if first:  # PyTorch's `buf = grad.clone()`: no dampening on the first step
                    new_buf = grad
                else:
                    new_buf = buf.mul(momentum).add(grad, alpha=keep)
                if nesterov:
                    grad = grad.add(new_buf, alpha=momentum)
                else:
                    grad = new_buf
            new_p = param.add(grad, alpha=neg_lr)
            if momentum_on:  # the writes last (one fused loop stores both)
                buf = momentum_buffers[i]
                buf.copy_(new_buf)
            param.copy_(new_p)
    return step_fn


SGD = StepForm("sgd", _sgd, ("first", "momentum_on", "nesterov", "maximize", "wd_on"))


def sgd(params: List[Tensor], grads: List[Tensor], momentum_buffers: List[Tensor],
        first: bool, lr: float, momentum: float, dampening: float, weight_decay: float,
        nesterov: bool, maximize: bool):
    """SGD; `first` is True when the momentum buffers were just created (PyTorch's
    `buf = grad.clone()` happens without dampening)."""
    SGD.kernel((bool(first), momentum != 0.0, bool(nesterov), bool(maximize),
                weight_decay != 0.0))(params, grads, momentum_buffers, lr, momentum,
                                      dampening, weight_decay)


# --- Adam / AdamW --------------------------------------------------------------------------------
def _adam(amsgrad: bool, maximize: bool, wd_on: bool, decoupled: bool):
    def step_fn(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor],
                exp_avg_sqs: List[Tensor], max_exp_avg_sqs: List[Tensor], step: float,
                beta1: float, beta2: float, lr: float, weight_decay: float, eps: float):
        bias_correction1 = 1.0 - beta1 ** step
        bias_correction2 = 1.0 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5
        # every scalar is computed before the loop: a scalar op between two tensor ops would
        # pin the order of the nodes around it and split the fused loop (passes/fuse.py)
        neg_step_size = -step_size
        w1 = 1.0 - beta1
        w2 = 1.0 - beta2
        decay = 1.0 - lr * weight_decay
        for i in range(len(params)):
            param = params[i]
            grad = grads[i]
            exp_avg = exp_avgs[i]
            exp_avg_sq = exp_avg_sqs[i]
            if maximize:
                grad = -grad
            if wd_on:
                if not decoupled:
                    grad = grad.add(param, alpha=weight_decay)
            m = exp_avg.lerp(grad, w1)
            v = exp_avg_sq.mul(beta2).addcmul(grad, grad, value=w2)
            if amsgrad:
                new_max = jitorch.maximum(max_exp_avg_sqs[i], v)
                denom = new_max.sqrt().div(bias_correction2_sqrt).add(eps)
            else:
                denom = v.sqrt().div(bias_correction2_sqrt).add(eps)
            p = param
            if wd_on:
                if decoupled:
                    p = param.mul(decay)
            new_p = p.addcdiv(m, denom, value=neg_step_size)
            # the writes last: every value above is computed in one fused loop that stores
            # them straight into the tensors (a write in between would split the loop)
            exp_avg.copy_(m)
            exp_avg_sq.copy_(v)
            if amsgrad:
                max_sq = max_exp_avg_sqs[i]
                max_sq.copy_(new_max)
            param.copy_(new_p)
    return step_fn


ADAM = StepForm("adam", _adam, ("amsgrad", "maximize", "wd_on", "decoupled"))


def adam(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor],
         exp_avg_sqs: List[Tensor], max_exp_avg_sqs: List[Tensor], step: float, amsgrad: bool,
         beta1: float, beta2: float, lr: float, weight_decay: float, eps: float, maximize: bool,
         decoupled_weight_decay: bool):
    """Adam and AdamW (`decoupled_weight_decay=True`); `step` is already incremented."""
    ADAM.kernel((bool(amsgrad), bool(maximize), weight_decay != 0.0,
                 bool(decoupled_weight_decay)))(params, grads, exp_avgs, exp_avg_sqs,
                                                max_exp_avg_sqs, step, beta1, beta2, lr,
                                                weight_decay, eps)


# --- Adagrad -------------------------------------------------------------------------------------
def _adagrad(maximize: bool, wd_on: bool):
    def step_fn(params: List[Tensor], grads: List[Tensor], state_sums: List[Tensor],
                step: float, lr: float, weight_decay: float, lr_decay: float, eps: float):
        clr = lr / (1.0 + (step - 1.0) * lr_decay)
        neg_clr = -clr
        for i in range(len(params)):
            param = params[i]
            grad = grads[i]
            state_sum = state_sums[i]
            if maximize:
                grad = -grad
            if wd_on:
                grad = grad.add(param, alpha=weight_decay)
            s = state_sum.addcmul(grad, grad, value=1.0)
            std = s.sqrt().add(eps)
            state_sum.copy_(s)
            param.copy_(param.addcdiv(grad, std, value=neg_clr))
    return step_fn


ADAGRAD = StepForm("adagrad", _adagrad, ("maximize", "wd_on"))


def adagrad(params: List[Tensor], grads: List[Tensor], state_sums: List[Tensor], step: float,
            lr: float, weight_decay: float, lr_decay: float, eps: float, maximize: bool):
    ADAGRAD.kernel((bool(maximize), weight_decay != 0.0))(params, grads, state_sums, step, lr,
                                                           weight_decay, lr_decay, eps)


# --- RMSprop -------------------------------------------------------------------------------------
def _rmsprop(centered: bool, momentum_on: bool, maximize: bool, wd_on: bool):
    def step_fn(params: List[Tensor], grads: List[Tensor], square_avgs: List[Tensor],
                grad_avgs: List[Tensor], momentum_buffers: List[Tensor], lr: float,
                alpha: float, eps: float, weight_decay: float, momentum: float):
        w = 1.0 - alpha
        neg_lr = -lr
        for i in range(len(params)):
            param = params[i]
            grad = grads[i]
            square_avg = square_avgs[i]
            if maximize:
                grad = -grad
            if wd_on:
                grad = grad.add(param, alpha=weight_decay)
            sq = square_avg.mul(alpha).addcmul(grad, grad, value=w)
            if centered:
                ga = grad_avgs[i].lerp(grad, w)
                avg = sq.addcmul(ga, ga, value=-1.0).sqrt()
            else:
                avg = sq.sqrt()
            avg = avg.add(eps)
            if momentum_on:
                nb = momentum_buffers[i].mul(momentum).addcdiv(grad, avg)
                new_p = param.add(nb, alpha=neg_lr)
            else:
                new_p = param.addcdiv(grad, avg, value=neg_lr)
            # the writes last: one fused loop computes and stores everything
            square_avg.copy_(sq)
            if centered:
                grad_avg = grad_avgs[i]
                grad_avg.copy_(ga)
            if momentum_on:
                buf = momentum_buffers[i]
                buf.copy_(nb)
            param.copy_(new_p)
    return step_fn


RMSPROP = StepForm("rmsprop", _rmsprop, ("centered", "momentum_on", "maximize", "wd_on"))


def rmsprop(params: List[Tensor], grads: List[Tensor], square_avgs: List[Tensor],
            grad_avgs: List[Tensor], momentum_buffers: List[Tensor], lr: float, alpha: float,
            eps: float, weight_decay: float, momentum: float, centered: bool, maximize: bool):
    RMSPROP.kernel((bool(centered), momentum > 0.0, bool(maximize), weight_decay != 0.0))(
        params, grads, square_avgs, grad_avgs, momentum_buffers, lr, alpha, eps, weight_decay,
        momentum)


# --- Adadelta ------------------------------------------------------------------------------------
def _adadelta(maximize: bool, wd_on: bool):
    def step_fn(params: List[Tensor], grads: List[Tensor], square_avgs: List[Tensor],
                acc_deltas: List[Tensor], lr: float, rho: float, eps: float,
                weight_decay: float):
        w = 1.0 - rho
        neg_lr = -lr
        for i in range(len(params)):
            param = params[i]
            grad = grads[i]
            square_avg = square_avgs[i]
            acc_delta = acc_deltas[i]
            if maximize:
                grad = -grad
            if wd_on:
                grad = grad.add(param, alpha=weight_decay)
            sq = square_avg.mul(rho).addcmul(grad, grad, value=w)
            std = sq.add(eps).sqrt()
            delta = acc_delta.add(eps).sqrt().div(std).mul(grad)
            acc = acc_delta.mul(rho).addcmul(delta, delta, value=w)
            square_avg.copy_(sq)
            acc_delta.copy_(acc)
            param.copy_(param.add(delta, alpha=neg_lr))
    return step_fn


ADADELTA = StepForm("adadelta", _adadelta, ("maximize", "wd_on"))


def adadelta(params: List[Tensor], grads: List[Tensor], square_avgs: List[Tensor],
             acc_deltas: List[Tensor], lr: float, rho: float, eps: float, weight_decay: float,
             maximize: bool):
    ADADELTA.kernel((bool(maximize), weight_decay != 0.0))(params, grads, square_avgs,
                                                            acc_deltas, lr, rho, eps,
                                                            weight_decay)


# --- Adamax --------------------------------------------------------------------------------------
def _adamax(maximize: bool, wd_on: bool):
    def step_fn(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor],
                exp_infs: List[Tensor], step: float, eps: float, beta1: float, beta2: float,
                lr: float, weight_decay: float):
        neg_clr = -(lr / (1.0 - beta1 ** step))
        w1 = 1.0 - beta1
        for i in range(len(params)):
            param = params[i]
            grad = grads[i]
            exp_avg = exp_avgs[i]
            exp_inf = exp_infs[i]
            if maximize:
                grad = -grad
            if wd_on:
                grad = grad.add(param, alpha=weight_decay)
            m = exp_avg.lerp(grad, w1)
            inf = jitorch.maximum(exp_inf.mul(beta2), grad.abs().add(eps))
            exp_avg.copy_(m)
            exp_inf.copy_(inf)
            param.copy_(param.addcdiv(m, inf, value=neg_clr))
    return step_fn


ADAMAX = StepForm("adamax", _adamax, ("maximize", "wd_on"))


def adamax(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor],
           exp_infs: List[Tensor], step: float, eps: float, beta1: float, beta2: float,
           lr: float, weight_decay: float, maximize: bool):
    ADAMAX.kernel((bool(maximize), weight_decay != 0.0))(params, grads, exp_avgs, exp_infs,
                                                          step, eps, beta1, beta2, lr,
                                                          weight_decay)


# --- NAdam ---------------------------------------------------------------------------------------
def _nadam(maximize: bool, wd_on: bool, decoupled: bool):
    def step_fn(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor],
                exp_avg_sqs: List[Tensor], step: float, mu_product: float, mu: float,
                mu_next: float, beta1: float, beta2: float, lr: float, weight_decay: float,
                eps: float):
        bias_correction2 = 1.0 - beta2 ** step
        mu_product_next = mu_product * mu_next
        grad_coef = -lr * (1.0 - mu) / (1.0 - mu_product)
        avg_coef = -lr * mu_next / (1.0 - mu_product_next)
        w1 = 1.0 - beta1
        w2 = 1.0 - beta2
        decay = 1.0 - lr * weight_decay
        for i in range(len(params)):
            param = params[i]
            grad = grads[i]
            exp_avg = exp_avgs[i]
            exp_avg_sq = exp_avg_sqs[i]
            if maximize:
                grad = -grad
            if wd_on:
                if not decoupled:
                    grad = grad.add(param, alpha=weight_decay)
            m = exp_avg.lerp(grad, w1)
            v = exp_avg_sq.mul(beta2).addcmul(grad, grad, value=w2)
            denom = v.div(bias_correction2).sqrt().add(eps)
            p = param
            if wd_on:
                if decoupled:
                    p = param.mul(decay)
            new_p = p.addcdiv(grad, denom, value=grad_coef).addcdiv(m, denom, value=avg_coef)
            exp_avg.copy_(m)
            exp_avg_sq.copy_(v)
            param.copy_(new_p)
    return step_fn


NADAM = StepForm("nadam", _nadam, ("maximize", "wd_on", "decoupled"))


def nadam(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor],
          exp_avg_sqs: List[Tensor], step: float, mu_product: float, mu: float, mu_next: float,
          beta1: float, beta2: float, lr: float, weight_decay: float, eps: float,
          decoupled_weight_decay: bool, maximize: bool):
    """NAdam; `mu_product` already includes this step's `mu` (the caller keeps it as PyTorch's
    float32 state tensor, so its rounding matches)."""
    NADAM.kernel((bool(maximize), weight_decay != 0.0, bool(decoupled_weight_decay)))(
        params, grads, exp_avgs, exp_avg_sqs, step, mu_product, mu, mu_next, beta1, beta2, lr,
        weight_decay, eps)


# --- RAdam ---------------------------------------------------------------------------------------
def _radam(maximize: bool, wd_on: bool, decoupled: bool):
    def step_fn(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor],
                exp_avg_sqs: List[Tensor], step: float, beta1: float, beta2: float, lr: float,
                weight_decay: float, eps: float):
        bias_correction1 = 1.0 - beta1 ** step
        bias_correction2 = 1.0 - beta2 ** step
        rho_inf = 2.0 / (1.0 - beta2) - 1.0
        rho_t = rho_inf - 2.0 * step * (beta2 ** step) / bias_correction2
        w1 = 1.0 - beta1
        w2 = 1.0 - beta2
        decay = 1.0 - lr * weight_decay
        # the branch depends on scalars only: one loop per branch, each fused whole
        if rho_t > 5.0:
            rect = ((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                    / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t)) ** 0.5
            bc2_sqrt = bias_correction2 ** 0.5
            for i in range(len(params)):
                param = params[i]
                grad = grads[i]
                exp_avg = exp_avgs[i]
                exp_avg_sq = exp_avg_sqs[i]
                if maximize:
                    grad = -grad
                if wd_on:
                    if not decoupled:
                        grad = grad.add(param, alpha=weight_decay)
                m = exp_avg.lerp(grad, w1)
                v = exp_avg_sq.mul(beta2).addcmul(grad, grad, value=w2)
                adaptive_lr = bc2_sqrt / v.sqrt().add(eps)
                p = param
                if wd_on:
                    if decoupled:
                        p = param.mul(decay)
                new_p = p.add(m.div(bias_correction1).mul(lr).mul(adaptive_lr).mul(rect),
                              alpha=-1.0)
                exp_avg.copy_(m)
                exp_avg_sq.copy_(v)
                param.copy_(new_p)
        else:
            for i in range(len(params)):
                param = params[i]
                grad = grads[i]
                exp_avg = exp_avgs[i]
                exp_avg_sq = exp_avg_sqs[i]
                if maximize:
                    grad = -grad
                if wd_on:
                    if not decoupled:
                        grad = grad.add(param, alpha=weight_decay)
                m = exp_avg.lerp(grad, w1)
                v = exp_avg_sq.mul(beta2).addcmul(grad, grad, value=w2)
                p = param
                if wd_on:
                    if decoupled:
                        p = param.mul(decay)
                new_p = p.add(m.div(bias_correction1).mul(lr), alpha=-1.0)
                exp_avg.copy_(m)
                exp_avg_sq.copy_(v)
                param.copy_(new_p)
    return step_fn


RADAM = StepForm("radam", _radam, ("maximize", "wd_on", "decoupled"))


def radam(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor],
          exp_avg_sqs: List[Tensor], step: float, beta1: float, beta2: float, lr: float,
          weight_decay: float, eps: float, decoupled_weight_decay: bool, maximize: bool):
    RADAM.kernel((bool(maximize), weight_decay != 0.0, bool(decoupled_weight_decay)))(
        params, grads, exp_avgs, exp_avg_sqs, step, beta1, beta2, lr, weight_decay, eps)
