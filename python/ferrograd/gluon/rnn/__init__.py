"""``gluon.rnn``: fused recurrent layers (on the ``RNN`` operator) and step-by-step cells."""

from .rnn_cell import (
                       BidirectionalCell,
                       DropoutCell,
                       GRUCell,
                       HybridRecurrentCell,
                       HybridSequentialRNNCell,
                       LSTMCell,
                       ModifierCell,
                       RecurrentCell,
                       ResidualCell,
                       RNNCell,
                       SequentialRNNCell,
                       ZoneoutCell,
)
from .rnn_layer import GRU, LSTM, RNN

__all__ = ["RNN", "LSTM", "GRU", "RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell",
           "GRUCell", "SequentialRNNCell", "HybridSequentialRNNCell", "BidirectionalCell",
           "DropoutCell", "ModifierCell", "ResidualCell", "ZoneoutCell"]
