"""``mx.metric``: evaluation metrics with MXNet 1.9's names, registry and numbers.

Every metric keeps a local running sum (``sum_metric``/``num_inst``, cleared by ``reset_local``,
e.g. per logging interval) and a global one (cleared only by ``reset``). Labels and predictions
may be NDArrays or NumPy arrays, singly or in lists.
"""

import json
import math
import warnings
from collections import OrderedDict

import numpy

from . import ndarray

__all__ = ["EvalMetric", "create", "register", "alias", "check_label_shapes",
           "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC", "Perplexity", "MAE",
           "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood", "PearsonCorrelation", "PCC",
           "Loss", "Torch", "Caffe", "CustomMetric", "np"]

_REGISTRY = {}


def _is_array(x):
    return isinstance(x, (ndarray.NDArray, numpy.ndarray))


def _to_numpy(x):
    return x.asnumpy() if isinstance(x, ndarray.NDArray) else numpy.asarray(x)


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Raises ValueError unless ``labels`` and ``preds`` have the same length (or, with
    ``shape=True``, shape); with ``wrap=True`` single arrays come back as one-element lists."""
    if not shape:
        label_shape, pred_shape = len(labels), len(preds)
    else:
        label_shape, pred_shape = labels.shape, preds.shape
    if label_shape != pred_shape:
        raise ValueError(f"Shape of labels {label_shape} does not match shape of "
                         f"predictions {pred_shape}")
    if wrap:
        if _is_array(labels):
            labels = [labels]
        if _is_array(preds):
            preds = [preds]
    return labels, preds


def _wrap_pair(labels, preds):
    """Lists of labels and predictions of equal length (single arrays are wrapped first)."""
    if _is_array(labels):
        labels = [labels]
    if _is_array(preds):
        preds = [preds]
    return check_label_shapes(labels, preds)


def register(klass):
    """Registers a metric class under its lower-cased name (``create`` finds it)."""
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise TypeError(f"metric.register: can only register EvalMetric subclasses, got {klass!r}")
    name = klass.__name__.lower()
    if name in _REGISTRY:
        warnings.warn(f"New metric {klass.__module__}.{klass.__name__} registered with name "
                      f"{name} is overriding existing metric {_REGISTRY[name].__name__}",
                      UserWarning, stacklevel=2)
    _REGISTRY[name] = klass
    return klass


def alias(*aliases):
    """Class decorator registering the class under extra names."""
    def decorate(klass):
        for name in aliases:
            _REGISTRY[name.lower()] = klass
        return klass
    return decorate


def _create_registered(metric, *args, **kwargs):
    name = metric
    if isinstance(name, EvalMetric):
        if args or kwargs:
            raise ValueError(f"metric.create: {name} is already a metric instance; extra "
                             "arguments are not allowed")
        return name
    if isinstance(name, dict):
        return _create_registered(**name)
    if not isinstance(name, str):
        raise TypeError(f"metric.create: expected a metric name, instance, list or function, "
                        f"got {type(name).__name__}")
    if name.startswith("["):
        name, kwargs = json.loads(name)
        return _create_registered(name, **kwargs)
    if name.startswith("{"):
        return _create_registered(**json.loads(name))
    key = name.lower()
    if key not in _REGISTRY:
        raise ValueError(f"metric.create: unknown metric {name!r}; known metrics: "
                         f"{', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[key](*args, **kwargs)


def create(metric, *args, **kwargs):
    """A metric from a name ('acc', 'f1', ...), an instance, a list of those (a
    ``CompositeEvalMetric``) or a function ``feval(label, pred)`` (a ``CustomMetric``)."""
    if callable(metric) and not isinstance(metric, EvalMetric) and not isinstance(metric, type):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return _create_registered(metric, *args, **kwargs)


class EvalMetric:
    """Base class: subclasses implement ``update(labels, preds)`` adding to ``sum_metric`` and
    ``num_inst`` (and their ``global_`` twins); ``get`` returns ``(name, sum / num)``."""

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self):
        """The arguments that rebuild this metric with ``metric.create(**config)``."""
        config = self._kwargs.copy()
        config.update({"metric": type(self).__name__, "name": self.name,
                       "output_names": self.output_names, "label_names": self.label_names})
        return config

    def update_dict(self, label, pred):
        """``update`` with the arrays named by ``label_names``/``output_names`` (all if None)."""
        if self.output_names is not None:
            pred = [pred[name] for name in self.output_names]
        else:
            pred = list(pred.values())
        if self.label_names is not None:
            label = [label[name] for name in self.label_names]
        else:
            label = list(label.values())
        self.update(label, pred)

    def update(self, labels, preds):
        raise NotImplementedError(f"{type(self).__name__} must define update")

    def reset(self):
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        self.num_inst = 0
        self.sum_metric = 0.0

    def _add(self, value, count):
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.sum_metric / self.num_inst)

    def get_global(self):
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.global_sum_metric / self.global_num_inst)

    @staticmethod
    def _pairs(name, value):
        names = name if isinstance(name, list) else [name]
        values = value if isinstance(value, list) else [value]
        return list(zip(names, values, strict=False))

    def get_name_value(self):
        return self._pairs(*self.get())

    def get_global_name_value(self):
        if not self._has_global_stats:
            return self.get_name_value()
        return self._pairs(*self.get_global())


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get`` returns lists of names and values."""

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric):
        self.metrics.append(create(metric))

    def get_metric(self, index):
        try:
            return self.metrics[index]
        except IndexError:
            # MXNet returns (does not raise) this error object.
            return ValueError(f"Metric index {index} is out of range 0 and {len(self.metrics)}")

    def update_dict(self, labels, preds):
        if self.label_names is not None:
            labels = OrderedDict(i for i in labels.items() if i[0] in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict(i for i in preds.items() if i[0] in self.output_names)
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self):
        for metric in getattr(self, "metrics", []):
            metric.reset_local()

    def _collect(self, getter):
        names, values = [], []
        for metric in self.metrics:
            name, value = getter(metric)
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return (names, values)

    def get(self):
        return self._collect(lambda m: m.get())

    def get_global(self):
        return self._collect(lambda m: m.get_global())

    def get_config(self):
        config = super().get_config()
        config.update({"metrics": [m.get_config() for m in self.metrics]})
        return config


@register
@alias("acc")
class Accuracy(EvalMetric):
    """Fraction of correct predictions; predictions with a class axis (``axis``) are argmax-ed."""

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = _wrap_pair(labels, preds)
        for label, pred in zip(labels, preds, strict=False):
            pred = _to_numpy(pred)
            label = _to_numpy(label)
            if pred.shape != label.shape:
                pred = pred.argmax(axis=self.axis)
            pred = pred.astype("int32").ravel()
            label = label.astype("int32").ravel()
            check_label_shapes(label, pred)
            self._add(int((pred == label).sum()), len(pred))


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` highest scores."""

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.top_k = top_k
        if self.top_k <= 1:
            raise ValueError(f"TopKAccuracy: top_k must be more than 1 (use Accuracy), got "
                             f"{top_k}")
        self.name += f"_{self.top_k}"

    def update(self, labels, preds):
        labels, preds = _wrap_pair(labels, preds)
        for label, pred in zip(labels, preds, strict=False):
            pred = _to_numpy(pred).astype("float32")
            if pred.ndim > 2:
                raise ValueError(f"TopKAccuracy: predictions must have at most 2 dims, got shape "
                                 f"{pred.shape}")
            label = _to_numpy(label).astype("int32").ravel()
            check_label_shapes(label, pred)
            # argpartition as MXNet, so ties resolve to the same classes.
            part = numpy.argpartition(pred, -self.top_k)
            if pred.ndim == 1:
                correct = int((part.ravel() == label).sum())
            else:
                classes = pred.shape[1]
                top = part[:, classes - min(classes, self.top_k):]
                correct = int((top == label[:, None]).sum())
            self._add(correct, pred.shape[0])


class _BinaryCounts:
    """True/false positive/negative counts, local and global, of a binary classifier."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.local = numpy.zeros(4)    # tp, fp, fn, tn
        self.total = numpy.zeros(4)

    def reset_local(self):
        self.local = numpy.zeros(4)

    def update(self, owner, label, pred):
        pred = _to_numpy(pred)
        label = _to_numpy(label).astype("int32")
        pred_label = numpy.argmax(pred, axis=1)
        check_label_shapes(label, pred)
        if len(numpy.unique(label)) > 2:
            raise ValueError(f"{owner} currently only supports binary classification.")
        pred_true = pred_label == 1
        label_true = label.ravel() == 1
        counts = numpy.array([(pred_true & label_true).sum(), (pred_true & ~label_true).sum(),
                              (~pred_true & label_true).sum(), (~pred_true & ~label_true).sum()],
                             dtype=float)
        self.local += counts
        self.total += counts

    @staticmethod
    def fscore(counts):
        tp, fp, fn, _ = counts
        precision = tp / (tp + fp) if tp + fp > 0 else 0.0
        recall = tp / (tp + fn) if tp + fn > 0 else 0.0
        if precision + recall == 0:
            return 0.0
        return 2 * precision * recall / (precision + recall)

    @staticmethod
    def mcc(counts):
        tp, fp, fn, tn = (float(c) for c in counts)
        if not counts.sum():
            return 0.0
        # Zero marginals are left out of the denominator (MXNet's convention: MCC is 0 then).
        denom = 1.0
        for term in (tp + fp, tp + fn, tn + fp, tn + fn):
            if term != 0.0:
                denom *= term
        return (tp * tn - fp * fn) / math.sqrt(denom)


class _BinaryMetric(EvalMetric):
    """F1 and MCC: 'macro' averages the per-update score, 'micro' scores all samples at once."""

    _score = None

    def __init__(self, name, output_names=None, label_names=None, average="macro"):
        if average not in ("macro", "micro"):
            raise ValueError(f"{type(self).__name__}: average must be 'macro' or 'micro', got "
                             f"{average!r}")
        self.average = average
        self._counts = _BinaryCounts()
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = _wrap_pair(labels, preds)
        for label, pred in zip(labels, preds, strict=False):
            self._counts.update(type(self).__name__, label, pred)
        score = type(self)._score
        if self.average == "macro":
            # Both count sets restart after each update, so local and global scores agree.
            self.sum_metric += score(self._counts.local)
            self.global_sum_metric += score(self._counts.total)
            self.num_inst += 1
            self.global_num_inst += 1
            self._counts.reset()
        else:
            local_n, total_n = self._counts.local.sum(), self._counts.total.sum()
            self.sum_metric = score(self._counts.local) * local_n
            self.global_sum_metric = score(self._counts.total) * total_n
            self.num_inst = local_n
            self.global_num_inst = total_n

    def reset(self):
        super().reset()
        self._counts.reset()

    def reset_local(self):
        super().reset_local()
        self._counts.reset_local()


@register
class F1(_BinaryMetric):
    """F1 score of a binary classifier (predictions are (N, 2) scores; class 1 is positive)."""

    _score = staticmethod(_BinaryCounts.fscore)

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of a binary classifier."""

    _score = staticmethod(_BinaryCounts.mcc)

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)


@register
class Perplexity(EvalMetric):
    """``exp`` of the mean negative log-probability of the labels; labels equal to
    ``ignore_label`` are left out of both sums."""

    def __init__(self, ignore_label, axis=-1, name="perplexity", output_names=None,
                 label_names=None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = _wrap_pair(labels, preds)
        loss, num = 0.0, 0
        for label, pred in zip(labels, preds, strict=False):
            pred = _to_numpy(pred)
            label = _to_numpy(label)
            if label.size * pred.shape[-1] != pred.size:
                raise ValueError(f"Perplexity: shape mismatch: label {label.shape} vs. "
                                 f"prediction {pred.shape}")
            index = label.reshape(-1).astype("int32")
            picked = numpy.take_along_axis(
                numpy.moveaxis(pred, self.axis, -1).reshape(-1, pred.shape[self.axis]),
                numpy.clip(index, 0, pred.shape[self.axis] - 1)[:, None], axis=1)[:, 0]
            if self.ignore_label is not None:
                ignore = (label.reshape(-1) == self.ignore_label).astype(picked.dtype)
                num -= int(ignore.sum())
                picked = picked * (1 - ignore) + ignore
            loss -= float(numpy.log(numpy.maximum(1e-10, picked)).astype(pred.dtype).sum())
            num += picked.size
        self._add(loss, num)

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.sum_metric / self.num_inst))

    def get_global(self):
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.global_sum_metric / self.global_num_inst))


class _Regression(EvalMetric):
    """Mean over updates of a per-batch error of (N, 1)-shaped labels and predictions."""

    def __init__(self, name, output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = _wrap_pair(labels, preds)
        for label, pred in zip(labels, preds, strict=False):
            label, pred = _to_numpy(label), _to_numpy(pred)
            if label.ndim == 1:
                label = label.reshape(label.shape[0], 1)
            if pred.ndim == 1:
                pred = pred.reshape(pred.shape[0], 1)
            self._add(self._error(label, pred), 1)


@register
class MAE(_Regression):
    """Mean absolute error."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(label, pred):
        return numpy.abs(label - pred).mean()


@register
class MSE(_Regression):
    """Mean squared error."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(label, pred):
        return ((label - pred) ** 2.0).mean()


@register
class RMSE(_Regression):
    """Root mean squared error (per batch, then averaged over batches as MXNet)."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(label, pred):
        return numpy.sqrt(((label - pred) ** 2.0).mean())


class _LogLikelihood(EvalMetric):
    """Mean of ``-log(pred[i, label[i]] + eps)`` over samples."""

    def __init__(self, eps, name, output_names=None, label_names=None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = _wrap_pair(labels, preds)
        for label, pred in zip(labels, preds, strict=False):
            label = _to_numpy(label).ravel()
            pred = _to_numpy(pred)
            if label.shape[0] != pred.shape[0]:
                raise ValueError(f"{type(self).__name__}: {label.shape[0]} labels for "
                                 f"predictions of shape {pred.shape}")
            prob = pred[numpy.arange(label.shape[0]), numpy.int64(label)]
            self._add((-numpy.log(prob + self.eps)).sum(), label.shape[0])


@register
@alias("ce")
class CrossEntropy(_LogLikelihood):
    """Cross-entropy of predicted class probabilities against class-index labels."""

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias("nll_loss")
class NegativeLogLikelihood(_LogLikelihood):
    """Negative log-likelihood of class-index labels under predicted probabilities."""

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels: per update, averaged ('macro'), or over
    all samples seen ('micro', streaming sums)."""

    def __init__(self, name="pearsonr", output_names=None, label_names=None, average="macro"):
        if average not in ("macro", "micro"):
            raise ValueError(f"PearsonCorrelation: average must be 'macro' or 'micro', got "
                             f"{average!r}")
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def reset_micro(self):
        self._count = 0
        self._mean_p = self._mean_l = 0.0
        self._sse_p = self._sse_l = self._cov = 0.0

    def reset(self):
        super().reset()
        self.reset_micro()

    @staticmethod
    def _welford(values, count, mean, m2):
        count += len(values)
        delta = values - mean
        mean += numpy.sum(delta / count)
        m2 += numpy.sum(delta * (values - mean))
        return count, mean, m2

    def update(self, labels, preds):
        labels, preds = _wrap_pair(labels, preds)
        for label, pred in zip(labels, preds, strict=False):
            check_label_shapes(label, pred, False, True)
            label = _to_numpy(label).ravel().astype(numpy.float64)
            pred = _to_numpy(pred).ravel().astype(numpy.float64)
            if self.average == "macro":
                self._add(numpy.corrcoef(pred, label)[0, 1], 1)
                continue
            self._add(0.0, 1)
            count = self._count
            _, self._mean_l, self._sse_l = self._welford(label, count, self._mean_l, self._sse_l)
            # The co-moment uses the updated label mean and the previous prediction mean.
            self._cov += numpy.sum((label - self._mean_l) * (pred - self._mean_p))
            self._count, self._mean_p, self._sse_p = self._welford(pred, count, self._mean_p,
                                                                   self._sse_p)

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        if self.average == "macro":
            return (self.name, self.sum_metric / self.num_inst)
        n = self._count
        return (self.name, self._cov / ((n - 1) * numpy.sqrt(self._sse_p / (n - 1))
                                        * numpy.sqrt(self._sse_l / (n - 1))))

    def get_global(self):
        return self.get() if self.average == "micro" else super().get_global()


@register
class PCC(EvalMetric):
    """Multiclass Matthews correlation from a confusion matrix that grows with the classes
    seen."""

    def __init__(self, name="pcc", output_names=None, label_names=None, has_global_stats=True):
        self.k = 2
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def _grow(self, inc):
        self.lcm = numpy.pad(self.lcm, ((0, inc), (0, inc)))
        self.gcm = numpy.pad(self.gcm, ((0, inc), (0, inc)))
        self.k += inc

    @staticmethod
    def _calc_mcc(cmat):
        n = cmat.sum()
        x = cmat.sum(axis=1)
        y = cmat.sum(axis=0)
        cov_xx = numpy.sum(x * (n - x))
        cov_yy = numpy.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float("nan")
        cov_xy = numpy.sum(cmat.diagonal() * n - x * y)
        return cov_xy / (cov_xx * cov_yy) ** 0.5

    def update(self, labels, preds):
        labels, preds = _wrap_pair(labels, preds)
        for label, pred in zip(labels, preds, strict=False):
            label = _to_numpy(label).astype("int32")
            pred = _to_numpy(pred)
            pred = pred.argmax(axis=1) if pred.shape != label.shape else pred.astype("int32")
            n = max(pred.max(), label.max())
            if n >= self.k:
                self._grow(n + 1 - self.k)
            bcm = numpy.zeros((self.k, self.k))
            numpy.add.at(bcm, (pred.ravel(), label.ravel()), 1)
            self.lcm += bcm
            self.gcm += bcm
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self):
        return self._calc_mcc(self.lcm) * self.num_inst

    @sum_metric.setter
    def sum_metric(self, _value):
        pass

    @property
    def global_sum_metric(self):
        return self._calc_mcc(self.gcm) * self.global_num_inst

    @global_sum_metric.setter
    def global_sum_metric(self, _value):
        pass

    def reset(self):
        self.global_num_inst = 0.0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self):
        self.num_inst = 0.0
        self.lcm = numpy.zeros((self.k, self.k))


@register
class Loss(EvalMetric):
    """Mean of the given loss values (labels are ignored)."""

    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds):
        if _is_array(preds):
            preds = [preds]
        for pred in preds:
            pred = _to_numpy(pred)
            self._add(float(pred.sum()), pred.size)


@register
class Torch(Loss):
    """A ``Loss`` metric named 'torch' (kept for old scripts)."""

    def __init__(self, name="torch", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """A ``Loss`` metric named 'caffe' (kept for old scripts)."""

    def __init__(self, name="caffe", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred)`` on NumPy arrays returning a value (averaged over
    updates) or a ``(sum, count)`` pair."""

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        if name is None:
            name = feval.__name__
            if "<" in name:
                name = f"custom({name})"
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        if _is_array(labels):
            labels = [labels]
        if _is_array(preds):
            preds = [preds]
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds)
        for pred, label in zip(preds, labels, strict=False):
            reval = self._feval(_to_numpy(label), _to_numpy(pred))
            if isinstance(reval, tuple):
                self._add(*reval)
            else:
                self._add(reval, 1)

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A ``CustomMetric`` from a function of NumPy ``(label, pred)``."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
