"""Legacy ``mx.rnn`` (MXNet 1.x's symbolic RNN API): cells that build Symbol graphs step by step,
the fused cell on the ``RNN`` operator, sentence encoding, ``BucketSentenceIter`` and the RNN
checkpoint helpers."""

from .io import BucketSentenceIter, encode_sentences
from .rnn import do_rnn_checkpoint, load_rnn_checkpoint, save_rnn_checkpoint
from .rnn_cell import (
                       BaseRNNCell,
                       BidirectionalCell,
                       DropoutCell,
                       FusedRNNCell,
                       GRUCell,
                       LSTMCell,
                       ModifierCell,
                       ResidualCell,
                       RNNCell,
                       RNNParams,
                       SequentialRNNCell,
)

__all__ = ["BaseRNNCell", "BidirectionalCell", "DropoutCell", "FusedRNNCell", "GRUCell", "LSTMCell",
           "ModifierCell", "ResidualCell", "RNNCell", "RNNParams", "SequentialRNNCell",
           "BucketSentenceIter", "encode_sentences", "save_rnn_checkpoint", "load_rnn_checkpoint",
           "do_rnn_checkpoint"]
