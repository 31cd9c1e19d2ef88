"""`jitorch.nn.utils`: gradient clipping, parameter/vector conversion, `rnn` (padding and
packing of sequences), `stateless.functional_call`, parametrizations (`parametrize`,
`parametrizations`), the hook-based `weight_norm`/`spectral_norm`, `prune`, and conv/linear +
batch-norm fusion."""
from . import rnn, stateless  # noqa: F401
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_,  # noqa: F401
                        clip_grads_with_norm_, get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters", "rnn", "stateless"]

# parametrizations, pruning, fusion (issue 19)
from . import parametrize, parametrizations, prune, fusion  # noqa: E402,F401
from .weight_norm import weight_norm, remove_weight_norm  # noqa: E402,F401
from .spectral_norm import spectral_norm, remove_spectral_norm  # noqa: E402,F401
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights,  # noqa: E402,F401
                     fuse_linear_bn_eval, fuse_linear_bn_weights)
__all__ += ["parametrize", "parametrizations", "prune", "fusion", "weight_norm",
            "remove_weight_norm", "spectral_norm", "remove_spectral_norm", "fuse_conv_bn_eval",
            "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]
