"""``gluon.loss``: the losses of MXNet 1.9's Gluon, each a ``HybridBlock`` written once for
``F`` = nd or sym. A loss returns one value per sample (the mean over every axis but
``batch_axis``), scaled by the constant ``weight`` and the per-sample ``sample_weight``."""

import numbers

import numpy as np

from .. import ndarray as nd
from .. import symbol as sym
from .block import HybridBlock

__all__ = ["Loss", "L2Loss", "L1Loss", "SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss",
           "SoftmaxCrossEntropyLoss", "SoftmaxCELoss", "KLDivLoss", "CTCLoss", "HuberLoss",
           "HingeLoss", "SquaredHingeLoss", "LogisticLoss", "TripletLoss", "PoissonNLLLoss",
           "CosineEmbeddingLoss", "SDMLLoss"]


def _apply_weighting(F, loss, weight=None, sample_weight=None):
    """``loss`` times ``sample_weight`` (broadcast) and times the scalar ``weight``."""
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, numbers.Number):
            raise TypeError(f"Loss: weight must be a number, got {type(weight).__name__}")
        loss = loss * weight
    return loss


def _reshape_like(F, x, y):
    """``x`` reshaped to ``y``'s shape (a label shaped (N,) against a prediction (N, 1)).
    Symbols keep their shapes (they are unknown here; see ``_match_for_mean``)."""
    if F is nd:
        if x.size != y.size:
            raise ValueError(f"Loss: the label of shape {x.shape} does not match the prediction "
                             f"of shape {y.shape}")
        return x.reshape(y.shape)
    return x


def _match_for_mean(F, pred, label, batch_axis):
    """``(pred, label)`` with equal shapes, for a loss that ends in a mean (or sum) over every
    axis but the batch axis. Symbols have no known shape here, so both are flattened to
    (batch, -1), which leaves that reduction unchanged."""
    if F is nd:
        return pred, _reshape_like(F, label, pred)
    if batch_axis == 0:
        return F.reshape(pred, shape=(0, -1)), F.reshape(label, shape=(0, -1))
    return pred, label


def _batch_mean(F, loss, batch_axis):
    return F.mean(loss, axis=batch_axis, exclude=True)


class Loss(HybridBlock):
    """Base class of the losses: ``weight`` scales the loss, ``batch_axis`` is the sample axis."""

    def __init__(self, weight, batch_axis, **kwargs):
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self):
        return f"{type(self).__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define hybrid_forward")


class L2Loss(Loss):
    """``weight / 2 * (label - pred)**2``, averaged per sample."""

    def __init__(self, weight=1., batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        pred, label = _match_for_mean(F, pred, label, self._batch_axis)
        loss = F.square(label - pred)
        loss = _apply_weighting(F, loss, self._weight / 2, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class L1Loss(Loss):
    """``weight * |label - pred|``, averaged per sample."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        pred, label = _match_for_mean(F, pred, label, self._batch_axis)
        loss = F.abs(label - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


def _softplus(F, x):
    return F.Activation(x, act_type="softrelu")


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy of ``label`` in [0, 1] against ``sigmoid(pred)`` (or ``pred`` itself
    with ``from_sigmoid=True``); ``pos_weight`` scales the positive term."""

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        if pos_weight is None:
            pred, label = _match_for_mean(F, pred, label, self._batch_axis)
        else:
            label = _reshape_like(F, label, pred)
        if not self._from_sigmoid:
            # log(1 + exp(-|x|)) + max(x, 0) - x * z: stable for any x.
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + _softplus(F, -F.abs(pred))
            else:
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * (_softplus(F, -F.abs(pred))
                                                           + F.relu(-pred))
        else:
            eps = 1e-12
            if pos_weight is None:
                loss = -(F.log(pred + eps) * label + F.log(1. - pred + eps) * (1. - label))
            else:
                loss = -(F.broadcast_mul(F.log(pred + eps) * label, pos_weight)
                         + F.log(1. - pred + eps) * (1. - label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """Cross-entropy of ``softmax(pred)`` along ``axis`` against class indices
    (``sparse_label``) or a distribution; ``from_logits`` means ``pred`` is already a
    log-probability."""

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None,
                 batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            if F is nd and label.size * pred.shape[self._axis] != pred.size:
                raise ValueError(f"SoftmaxCrossEntropyLoss: sparse label of shape {label.shape} "
                                 f"does not match the prediction of shape {pred.shape} "
                                 f"(one class index per sample along axis {self._axis})")
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(F, label, pred)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """``sum(label * (log(label) - pred))`` over the non-batch axes, with ``pred`` a
    log-probability (``from_logits=True``) or logits turned into one by ``log_softmax``."""

    def __init__(self, from_logits=True, axis=-1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        # Summed over the distribution (MXNet 1.9's code; its docstring says averaged).
        return F.sum(loss, axis=self._batch_axis, exclude=True)


class _ImperativeLoss(Loss):
    """A loss computed outside the operator graph: it runs on NDArrays even when hybridized,
    and raises a clear error on Symbols."""

    def forward(self, *args):
        if any(isinstance(a, sym.Symbol) for a in args):
            raise NotImplementedError(f"{type(self).__name__}: symbolic execution is not "
                                      "supported yet; call the loss on NDArrays")
        return self.hybrid_forward(nd, *args)


class CTCLoss(Loss):
    """Connectionist Temporal Classification loss. ``pred`` holds unnormalised scores in
    ``layout`` ('NTC' or 'TNC'), ``label`` class indices in ``label_layout`` ('NT' or 'TN'),
    padded with -1; the blank is the last class. The ``CTCLoss`` op, so it also runs on Symbols
    and hybridized."""

    def __init__(self, layout="NTC", label_layout="NT", weight=None, **kwargs):
        if layout not in ("NTC", "TNC"):
            raise ValueError(f"CTCLoss: only 'NTC' and 'TNC' layouts for pred are supported, "
                             f"got {layout!r}")
        if label_layout not in ("NT", "TN"):
            raise ValueError(f"CTCLoss: only 'NT' and 'TN' layouts for label are supported, "
                             f"got {label_layout!r}")
        self._layout = layout
        self._label_layout = label_layout
        super().__init__(weight, label_layout.find("N"), **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None,
                       sample_weight=None):
        if self._layout == "NTC":
            pred = F.swapaxes(pred, 0, 1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, 0, 1)
        flags = {"use_data_lengths": pred_lengths is not None,
                 "use_label_lengths": label_lengths is not None, "blank_label": "last"}
        if F is nd:
            # The op takes the length inputs its flags ask for, in order, by position.
            lengths = [x for x in (pred_lengths, label_lengths) if x is not None]
            loss = F.CTCLoss(pred, label, *lengths, **flags)
        else:
            lengths = {"data_lengths": pred_lengths, "label_lengths": label_lengths}
            loss = F.CTCLoss(data=pred, label=label,
                             **{k: v for k, v in lengths.items() if v is not None}, **flags)
        return _apply_weighting(F, loss, self._weight, sample_weight)


class HuberLoss(Loss):
    """Smooth L1: ``0.5 / rho * d**2`` where ``|d| <= rho``, else ``|d| - 0.5 * rho``."""

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        pred, label = _match_for_mean(F, pred, label, self._batch_axis)
        loss = F.abs(label - pred)
        loss = F.where(loss > self._rho, loss - 0.5 * self._rho,
                       (0.5 / self._rho) * F.square(loss))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class HingeLoss(Loss):
    """``max(0, margin - pred * label)`` for labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        pred, label = _match_for_mean(F, pred, label, self._batch_axis)
        loss = F.relu(self._margin - pred * label)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class SquaredHingeLoss(Loss):
    """``max(0, margin - pred * label)**2`` for labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        pred, label = _match_for_mean(F, pred, label, self._batch_axis)
        loss = F.square(F.relu(self._margin - pred * label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class LogisticLoss(Loss):
    """``log(1 + exp(-pred * label))`` with labels in {-1, 1} ('signed') or {0, 1} ('binary')."""

    def __init__(self, weight=None, batch_axis=0, label_format="signed", **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ("signed", "binary"):
            raise ValueError(f"LogisticLoss: label_format can only be 'signed' or 'binary', got "
                             f"{label_format!r}")
        self._label_format = label_format

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        pred, label = _match_for_mean(F, pred, label, self._batch_axis)
        if self._label_format == "binary":
            label = 2 * label - 1
        margin = -pred * label
        loss = F.relu(margin) + _softplus(F, -F.abs(margin))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class TripletLoss(Loss):
    """``max(0, |pos - pred|^2 - |neg - pred|^2 + margin)`` per sample."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative, sample_weight=None):
        if F is nd:
            positive = _reshape_like(F, positive, pred)
            negative = _reshape_like(F, negative, pred)
        elif self._batch_axis == 0:
            pred, positive = _match_for_mean(F, pred, positive, 0)
            negative = F.reshape(negative, shape=(0, -1))
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred),
                     axis=self._batch_axis, exclude=True)
        loss = F.relu(loss + self._margin)
        return _apply_weighting(F, loss, self._weight, sample_weight)


class PoissonNLLLoss(Loss):
    """Poisson negative log-likelihood averaged over every element: ``exp(pred) - target * pred``
    (``from_logits``) or ``pred - target * log(pred + epsilon)``; ``compute_full`` adds
    Stirling's term for targets above 1."""

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False,
                 **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        pred, target = _match_for_mean(F, pred, target, self._batch_axis)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            # MXNet multiplies by (target > 1), which turns 0 * log(0) into NaN at target 0;
            # selecting keeps those elements at 0.
            stirling = target * F.log(target) - target + 0.5 * F.log(2 * target * np.pi)
            loss = loss + F.where(target > 1, stirling, F.zeros_like(stirling))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class CosineEmbeddingLoss(Loss):
    """``1 - cos(x1, x2)`` for label 1 and ``max(0, cos(x1, x2) - margin)`` for label -1;
    returns shape (batch, 1)."""

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = _reshape_like(F, input1, input2)
        label = label.reshape((-1, 1))
        cos_sim = self._cosine_similarity(F, input1, input2)
        positive = (1 - cos_sim) * (label == 1)
        negative = F.relu((label == -1) * (cos_sim - self._margin))
        loss = positive + negative
        return _apply_weighting(F, loss, self._weight, sample_weight)

    @staticmethod
    def _cosine_similarity(F, x, y, axis=-1):
        x_norm = F.norm(x, axis=axis).reshape((-1, 1))
        y_norm = F.norm(y, axis=axis).reshape((-1, 1))
        x_dot_y = F.sum(x * y, axis=axis).reshape((-1, 1))
        return x_dot_y / F.maximum(x_norm * y_norm, 1e-12)


class SDMLLoss(_ImperativeLoss):
    """Smoothed Deep Metric Learning loss over a batch of aligned pairs ``(x1[i], x2[i])``: the
    KL divergence between the softmax of negative squared distances and smoothed identity
    labels, per row."""

    def __init__(self, smoothing_parameter=0.3, weight=1., batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter

    def _compute_distances(self, F, x1, x2):
        return F.sum(F.square(F.broadcast_sub(F.expand_dims(x1, 1), F.expand_dims(x2, 0))),
                     axis=2)

    def _compute_labels(self, F, batch_size):
        gold = nd.eye(batch_size)
        off = self.smoothing_parameter / max(batch_size - 1, 1)
        return gold * (1 - self.smoothing_parameter) + (1 - gold) * off

    def hybrid_forward(self, F, x1, x2):
        if x1.ndim != 2 or x1.shape != x2.shape:
            raise ValueError(f"SDMLLoss: x1 and x2 must be 2-D with equal shapes, got {x1.shape} "
                             f"and {x2.shape}")
        batch_size = x1.shape[0]
        labels = self._compute_labels(F, batch_size).as_in_context(x1.context)
        distances = self._compute_distances(F, x1, x2)
        log_probabilities = F.log_softmax(-distances, axis=1)
        return self.kl_loss(log_probabilities, labels)
