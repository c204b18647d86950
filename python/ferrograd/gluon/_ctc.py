"""Connectionist Temporal Classification (Graves et al., 2006) in NumPy, for ``gluon.loss.CTCLoss``.

The core has no CTC operator yet, so the loss runs here as an ``autograd.Function``: the forward
computes the alpha recursion in log space, the backward the alpha-beta occupancies. Activations are
unnormalised (a softmax is applied over the alphabet) and the blank is the last class, as MXNet's
``CTCLoss(blank_label='last')``.
"""

import numpy as np

from .. import autograd
from .. import ndarray as nd

_NEG_INF = -np.inf


def _log_softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _extended(labels, blank):
    """The label sequence with a blank before, between and after the symbols."""
    ext = np.full(2 * len(labels) + 1, blank, dtype=np.int64)
    ext[1::2] = labels
    # A path may jump over the blank between two different symbols (positional, as warp-ctc).
    can_skip = np.zeros(len(ext), dtype=bool)
    for i in range(1, len(labels)):
        can_skip[2 * i + 1] = labels[i] != labels[i - 1]
    return ext, can_skip


def _ctc_one(logp, labels):
    """Negative log-likelihood of ``labels`` under per-step log-probabilities ``logp`` (T, C),
    and its gradient with respect to the unnormalised activations."""
    steps, classes = logp.shape
    ext, can_skip = _extended(labels, classes - 1)
    width = len(ext)
    emit = logp[:, ext]                                   # (T, S)
    alpha = np.full((steps, width), _NEG_INF)
    alpha[0, 0] = emit[0, 0]
    if width > 1:
        alpha[0, 1] = emit[0, 1]
    for t in range(1, steps):
        prev = alpha[t - 1]
        acc = prev.copy()
        acc[1:] = np.logaddexp(acc[1:], prev[:-1])
        acc[2:] = np.where(can_skip[2:], np.logaddexp(acc[2:], prev[:-2]), acc[2:])
        alpha[t] = acc + emit[t]
    beta = np.full((steps, width), _NEG_INF)
    beta[-1, -1] = emit[-1, -1]
    if width > 1:
        beta[-1, -2] = emit[-1, -2]
    skip_from = np.zeros(width, dtype=bool)               # s may jump to s + 2
    skip_from[:-2] = can_skip[2:]
    for t in range(steps - 2, -1, -1):
        nxt = beta[t + 1]
        acc = nxt.copy()
        acc[:-1] = np.logaddexp(acc[:-1], nxt[1:])
        acc[:-2] = np.where(skip_from[:-2], np.logaddexp(acc[:-2], nxt[2:]), acc[:-2])
        beta[t] = acc + emit[t]
    loglik = np.logaddexp(alpha[-1, -1], alpha[-1, -2]) if width > 1 else alpha[-1, -1]
    prob = np.exp(logp)
    if not np.isfinite(loglik):
        return np.inf, np.zeros_like(logp)
    occupancy = np.full((steps, classes), _NEG_INF)
    both = alpha + beta
    for s in range(width):
        occupancy[:, ext[s]] = np.logaddexp(occupancy[:, ext[s]], both[:, s])
    grad = prob - np.exp(occupancy - logp - loglik)
    return -loglik, grad


class CTCFunction(autograd.Function):
    """CTC loss over activations in (T, N, C) layout and labels in (N, L) layout."""

    def __init__(self, labels, pred_lengths=None):
        super().__init__()
        self._labels = labels                # one int64 array of symbols per sequence
        self._pred_lengths = pred_lengths    # NumPy (N,) or None for full length
        self._grad = None

    def forward(self, acts):
        data = acts.asnumpy().astype(np.float64)
        steps, batch, classes = data.shape
        labels = self._labels
        pred_lengths = (np.full(batch, steps) if self._pred_lengths is None
                        else self._pred_lengths.astype(np.int64))
        losses = np.zeros(batch)
        grad = np.zeros_like(data)
        for b in range(batch):
            length = int(pred_lengths[b])
            if not 0 < length <= steps:
                raise ValueError(f"CTCLoss: pred_lengths[{b}] = {length} is outside [1, {steps}] "
                                 f"for data of shape {(steps, batch, classes)}")
            logp = _log_softmax(data[:length, b, :])
            losses[b], grad[:length, b, :] = _ctc_one(logp, labels[b])
        self._grad = grad
        return nd.array(losses, dtype=acts.dtype, ctx=acts.context)

    def backward(self, dloss):
        scale = dloss.asnumpy().reshape(1, -1, 1)
        return nd.array(self._grad * scale, dtype=dloss.dtype, ctx=dloss.context)


def ctc_loss(acts, labels, pred_lengths=None, label_lengths=None):
    """``acts`` (T, N, C) NDArray, ``labels`` (N, L) NDArray padded with -1 (or cut by
    ``label_lengths``); returns the per-sequence loss (N,)."""
    if acts.ndim != 3:
        raise ValueError(f"CTCLoss: data must be 3-D (sequence, batch, alphabet), got shape "
                         f"{acts.shape}")
    steps, batch, classes = acts.shape
    lab = labels.asnumpy()
    if lab.ndim != 2 or lab.shape[0] != batch:
        raise ValueError(f"CTCLoss: label must have shape (batch, max_label_length) with batch = "
                         f"{batch}, got label shape {lab.shape} for data shape {acts.shape}")
    lab = lab.astype(np.int64)
    lengths = None if label_lengths is None else label_lengths.asnumpy().astype(np.int64)
    seqs = []
    for b in range(batch):
        row = lab[b]
        if lengths is not None:
            row = row[:int(lengths[b])]
        else:
            pad = np.flatnonzero(row == -1)
            row = row[:pad[0]] if len(pad) else row
        if len(row) and (row.min() < 0 or row.max() >= classes):
            raise ValueError(f"CTCLoss: label values must lie in [0, {classes}) (the last "
                             f"class is the blank), got {row.tolist()} in row {b}")
        seqs.append(row)
    fn = CTCFunction(seqs, None if pred_lengths is None else pred_lengths.asnumpy())
    return fn(acts)
