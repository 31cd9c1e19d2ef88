"""The module classes of `jitorch.nn` (one file per family, as in `torch/nn/modules/`)."""
from .container import (ModuleDict, ModuleList, ParameterDict, ParameterList,  # noqa: F401
                        Sequential)
from .flatten import Flatten, Unflatten  # noqa: F401
from .linear import Bilinear, Identity, Linear  # noqa: F401
from .module import Module  # noqa: F401
from .normalization import GroupNorm, LayerNorm, RMSNorm  # noqa: F401
from .activation import *  # noqa: F401,F403
from .activation import __all__ as _activation_all
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d  # noqa: F401
from .conv import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d,  # noqa: F401
                   ConvTranspose3d)
from .pooling import *  # noqa: F401,F403
from .pooling import __all__ as _pooling_all
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .loss import *  # noqa: F401,F403
from .loss import __all__ as _loss_all
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d  # noqa: F401
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase  # noqa: F401,E501
from .attention import MultiheadAttention  # noqa: F401
from .channelshuffle import ChannelShuffle  # noqa: F401
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .fold import Fold, Unfold  # noqa: F401
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401
from .padding import *  # noqa: F401,F403
from .padding import __all__ as _padding_all
from .pixelshuffle import PixelShuffle, PixelUnshuffle  # noqa: F401
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401
from . import utils  # noqa: F401,E402  (`nn.modules.utils._pair`, ...)
from .transformer import (Transformer, TransformerDecoder,  # noqa: F401
                          TransformerDecoderLayer, TransformerEncoder,
                          TransformerEncoderLayer)

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
           "Identity", "Linear", "Bilinear", "Flatten", "Unflatten"]
__all__ += ["LayerNorm", "GroupNorm", "RMSNorm", "Dropout", "Dropout1d", "Dropout2d",
            "Dropout3d", "AlphaDropout"]
__all__ += _activation_all
__all__ += ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]
__all__ += _pooling_all
__all__ += ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]
__all__ += ["Embedding", "EmbeddingBag"]
__all__ += ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
            "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
            "TransformerDecoderLayer", "TransformerDecoder", "Transformer"]
__all__ += _loss_all
__all__ += ["CosineSimilarity", "PairwiseDistance", "InstanceNorm1d", "InstanceNorm2d",
            "InstanceNorm3d", "PixelShuffle", "PixelUnshuffle", "Upsample",
            "UpsamplingNearest2d", "UpsamplingBilinear2d", "ChannelShuffle", "Fold",
            "Unfold"] + _padding_all
# issue 19: lazy layers, the adaptive softmax
from .lazy import *  # noqa: F401,F403,E402
from .lazy import __all__ as _lazy_all  # noqa: E402
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401,E402
from .dropout import FeatureAlphaDropout  # noqa: F401,E402
from .more_layers import *  # noqa: F401,F403,E402
from .more_layers import __all__ as _more_all  # noqa: E402
__all__ += ["Conv3d", "ConvTranspose3d", "AdaptiveLogSoftmaxWithLoss",
            "FeatureAlphaDropout"] + _lazy_all + _more_all
