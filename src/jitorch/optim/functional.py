"""The update math of every optimizer, written ONCE, PyTorch's single-tensor way.

Each function takes lists of parameters, gradients and state tensors plus Python scalars (lr,
betas, the step count, ...) and updates the tensors IN PLACE with jitorch ops, exactly as
PyTorch's `_single_tensor_<name>` implementations do (`param.add_(grad, alpha=-lr)`, ...), so the
results match PyTorch's CPU default path op for op.

The optimizer classes call these functions compiled with `@jitorch.script` (one program per param
group, the loop over the list inside it). Scalars are arguments, never baked constants: a
scheduler changing `lr` does not recompile. The step count (and NAdam's `mu_product`) is a Python
number shared by every tensor of one call: the classes call once per distinct value.

The bodies stay inside what the script frontend accepts: positional arguments with annotations,
`for i in range(len(params))`, plain `if` statements (no nested functions, no ternaries on
tensors). Lists that an option does not use (e.g. `max_exp_avg_sqs` without amsgrad) are passed
but never read.
"""
from __future__ import annotations

from typing import List

import jitorch
from jitorch import Tensor

__all__ = ["sgd", "adam", "adagrad", "rmsprop", "adadelta", "adamax", "nadam", "radam"]


def sgd(params: List[Tensor], grads: List[Tensor], momentum_buffers: List[Tensor],
        first: bool, lr: float, momentum: float, dampening: float, weight_decay: float,
        nesterov: bool, maximize: bool):
    """SGD; `first` is True when the momentum buffers were just created (filled with the grad
    by the caller: PyTorch's `buf = grad.clone()` happens without dampening)."""
    for i in range(len(params)):
        param = params[i]
        grad = grads[i]
        if maximize:
            grad = -grad
        if weight_decay != 0.0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0.0:
            buf = momentum_buffers[i]
            if first:
                buf.copy_(grad)
            else:
                buf.mul_(momentum).add_(grad, alpha=1.0 - dampening)
            if nesterov:
                grad = grad.add(buf, alpha=momentum)
            else:
                grad = buf
        param.add_(grad, alpha=-lr)


def adam(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor],
         exp_avg_sqs: List[Tensor], max_exp_avg_sqs: List[Tensor], step: float, amsgrad: bool,
         beta1: float, beta2: float, lr: float, weight_decay: float, eps: float, maximize: bool,
         decoupled_weight_decay: bool):
    """Adam and AdamW (`decoupled_weight_decay=True`); `step` is already incremented."""
    for i in range(len(params)):
        param = params[i]
        grad = grads[i]
        if maximize:
            grad = -grad
        exp_avg = exp_avgs[i]
        exp_avg_sq = exp_avg_sqs[i]
        if weight_decay != 0.0:
            if decoupled_weight_decay:
                param.mul_(1.0 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1.0 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
        bias_correction1 = 1.0 - beta1 ** step
        bias_correction2 = 1.0 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5
        if amsgrad:
            max_sq = max_exp_avg_sqs[i]
            max_sq.copy_(jitorch.maximum(max_sq, exp_avg_sq))
            denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)


def adagrad(params: List[Tensor], grads: List[Tensor], state_sums: List[Tensor], step: float,
            lr: float, weight_decay: float, lr_decay: float, eps: float, maximize: bool):
    for i in range(len(params)):
        param = params[i]
        grad = grads[i]
        state_sum = state_sums[i]
        if maximize:
            grad = -grad
        if weight_decay != 0.0:
            grad = grad.add(param, alpha=weight_decay)
        clr = lr / (1.0 + (step - 1.0) * lr_decay)
        state_sum.addcmul_(grad, grad, value=1.0)
        std = state_sum.sqrt().add_(eps)
        param.addcdiv_(grad, std, value=-clr)


def rmsprop(params: List[Tensor], grads: List[Tensor], square_avgs: List[Tensor],
            grad_avgs: List[Tensor], momentum_buffers: List[Tensor], lr: float, alpha: float,
            eps: float, weight_decay: float, momentum: float, centered: bool, maximize: bool):
    for i in range(len(params)):
        param = params[i]
        grad = grads[i]
        if maximize:
            grad = -grad
        square_avg = square_avgs[i]
        if weight_decay != 0.0:
            grad = grad.add(param, alpha=weight_decay)
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1.0 - alpha)
        if centered:
            grad_avg = grad_avgs[i]
            grad_avg.lerp_(grad, 1.0 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1.0).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(eps)
        if momentum > 0.0:
            buf = momentum_buffers[i]
            buf.mul_(momentum).addcdiv_(grad, avg)
            param.add_(buf, alpha=-lr)
        else:
            param.addcdiv_(grad, avg, value=-lr)


def adadelta(params: List[Tensor], grads: List[Tensor], square_avgs: List[Tensor],
             acc_deltas: List[Tensor], lr: float, rho: float, eps: float, weight_decay: float,
             maximize: bool):
    for i in range(len(params)):
        param = params[i]
        grad = grads[i]
        square_avg = square_avgs[i]
        acc_delta = acc_deltas[i]
        if maximize:
            grad = -grad
        if weight_decay != 0.0:
            grad = grad.add(param, alpha=weight_decay)
        square_avg.mul_(rho).addcmul_(grad, grad, value=1.0 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_()
        delta.div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1.0 - rho)
        param.add_(delta, alpha=-lr)


def adamax(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor],
           exp_infs: List[Tensor], step: float, eps: float, beta1: float, beta2: float,
           lr: float, weight_decay: float, maximize: bool):
    for i in range(len(params)):
        param = params[i]
        grad = grads[i]
        if maximize:
            grad = -grad
        exp_avg = exp_avgs[i]
        exp_inf = exp_infs[i]
        if weight_decay != 0.0:
            grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1.0 - beta1)
        exp_inf.mul_(beta2)
        exp_inf.copy_(jitorch.maximum(exp_inf, grad.abs().add_(eps)))
        bias_correction = 1.0 - beta1 ** step
        clr = lr / bias_correction
        param.addcdiv_(exp_avg, exp_inf, value=-clr)


def nadam(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor],
          exp_avg_sqs: List[Tensor], step: float, mu_product: float, mu: float, mu_next: float,
          beta1: float, beta2: float, lr: float, weight_decay: float, eps: float,
          decoupled_weight_decay: bool, maximize: bool):
    """NAdam; `mu_product` already includes this step's `mu` (the caller keeps it as PyTorch's
    float32 state tensor, so its rounding matches)."""
    for i in range(len(params)):
        param = params[i]
        grad = grads[i]
        if maximize:
            grad = -grad
        exp_avg = exp_avgs[i]
        exp_avg_sq = exp_avg_sqs[i]
        bias_correction2 = 1.0 - beta2 ** step
        if weight_decay != 0.0:
            if decoupled_weight_decay:
                param.mul_(1.0 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1.0 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt()
        mu_product_next = mu_product * mu_next
        denom.add_(eps)
        param.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
        param.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1.0 - mu_product_next))


def radam(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor],
          exp_avg_sqs: List[Tensor], step: float, beta1: float, beta2: float, lr: float,
          weight_decay: float, eps: float, decoupled_weight_decay: bool, maximize: bool):
    for i in range(len(params)):
        param = params[i]
        grad = grads[i]
        if maximize:
            grad = -grad
        exp_avg = exp_avgs[i]
        exp_avg_sq = exp_avg_sqs[i]
        if weight_decay != 0.0:
            if decoupled_weight_decay:
                param.mul_(1.0 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1.0 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
        bias_correction1 = 1.0 - beta1 ** step
        bias_correction2 = 1.0 - beta2 ** step
        bias_corrected_exp_avg = exp_avg / bias_correction1
        rho_inf = 2.0 / (1.0 - beta2) - 1.0
        rho_t = rho_inf - 2.0 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                    / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t)) ** 0.5
            adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
            param.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
        else:
            param.add_(bias_corrected_exp_avg * lr, alpha=-1.0)
