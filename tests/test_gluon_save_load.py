"""Block.save_parameters / load_parameters and ParameterDict.save / load (MXNet's format)."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import gluon
from ferrograd.gluon import nn


def _mlp(prefix=None):
    net = nn.HybridSequential(prefix=prefix)
    with net.name_scope():
        net.add(nn.Dense(3, in_units=4), nn.BatchNorm(in_channels=3), nn.Dense(2))
    return net


def test_round_trip_keys_and_values(tmp_path):
    src = _mlp()
    src.initialize(mx.init.Xavier())
    src(mx.nd.ones((2, 4)))
    path = str(tmp_path / "net.params")
    src.save_parameters(path)
    saved = mx.nd.load(path)
    assert sorted(saved) == sorted(["0.weight", "0.bias", "1.gamma", "1.beta", "1.running_mean",
                                    "1.running_var", "2.weight", "2.bias"])
    dst = _mlp()  # different prefix, same structure
    dst.initialize()  # 2.weight still deferred: its shape comes from the file
    dst.load_parameters(path)
    for (_, a), (_, b) in zip(src.collect_params().items(), dst.collect_params().items(),
                              strict=True):
        np.testing.assert_array_equal(a.data().asnumpy(), b.data().asnumpy())
    x = mx.nd.array(np.random.RandomState(0).randn(2, 4))
    np.testing.assert_allclose(dst(x).asnumpy(), src(x).asnumpy(), rtol=1e-6)
    fresh = _mlp()  # never initialised: loading initialises
    fresh.load_parameters(path)
    assert fresh[2].weight.shape == (2, 3)


def test_missing_extra_and_shape_errors_load_nothing(tmp_path):
    path = str(tmp_path / "small.params")
    small = nn.HybridSequential()
    small.add(nn.Dense(3, in_units=4))
    small.initialize(mx.init.One())
    small.save_parameters(path)
    big = _mlp()
    big.initialize(mx.init.Zero())
    with pytest.raises(mx.MXNetError, match="Parameter '1.gamma' is missing in file"):
        big.load_parameters(path)
    assert big[0].weight.data().asnumpy().sum() == 0  # nothing partially loaded
    big.load_parameters(path, allow_missing=True)
    assert big[0].weight.data().asnumpy().sum() == 12
    with pytest.raises(gluon.DeferredInitializationError):
        big.save_parameters(path)  # 2.weight has no shape yet
    big(mx.nd.ones((1, 4)))
    big.save_parameters(path)
    small2 = nn.HybridSequential()
    small2.add(nn.Dense(3, in_units=4))
    small2.initialize()
    with pytest.raises(mx.MXNetError, match="'1.gamma' loaded from file .* is not present"):
        small2.load_parameters(path)
    small2.load_parameters(path, ignore_extra=True)
    wrong = nn.HybridSequential()
    wrong.add(nn.Dense(5, in_units=4))
    wrong.initialize(mx.init.Zero())
    with pytest.raises(mx.MXNetError, match=r"'.*dense.*_weight'.*expected \(5, 4\) vs saved "
                                            r"\(3, 4\)"):
        wrong.load_parameters(path, ignore_extra=True)
    assert wrong[0].weight.data().asnumpy().sum() == 0


def test_dtype_mismatch_and_cast(tmp_path):
    path = str(tmp_path / "f64.params")
    src = nn.Dense(2, in_units=2)
    src.initialize(mx.init.One())
    src.cast("float64")
    src.save_parameters(path)
    dst = nn.Dense(2, in_units=2)
    dst.initialize()
    with pytest.raises(mx.MXNetError, match="dtype incompatible expected float32 vs saved "
                                            "float64"):
        dst.load_parameters(path)
    dst.load_parameters(path, cast_dtype=True)
    assert dst.weight.data().dtype == np.float32
    np.testing.assert_array_equal(dst.weight.data().asnumpy(), np.ones((2, 2)))
    dst.load_parameters(path, cast_dtype=True, dtype_source="saved")
    assert dst.weight.data().dtype == np.float64


def test_deduplicate_shared_parameters(tmp_path):
    class Twice(mx.gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.a = nn.Dense(2, in_units=2)
                self.b = nn.Dense(2, in_units=2, params=self.a.params)

        def hybrid_forward(self, F, x):
            return self.b(self.a(x))

    net = Twice()
    net.initialize()
    path = str(tmp_path / "dedup.params")
    net.save_parameters(path, deduplicate=True)
    assert sorted(mx.nd.load(path)) == ["a.bias", "a.weight"]
    net.save_parameters(path)
    assert sorted(mx.nd.load(path)) == ["a.bias", "a.weight", "b.bias", "b.weight"]


def test_parameter_dict_and_legacy_save_params(tmp_path):
    net = _mlp(prefix="model_")
    net.initialize(mx.init.Xavier())
    net(mx.nd.ones((1, 4)))
    path = str(tmp_path / "legacy.params")
    net.save_params(path)
    assert "dense0_weight" in mx.nd.load(path)
    other = _mlp(prefix="model_")
    other.load_parameters(path)  # name-keyed file: legacy path
    np.testing.assert_array_equal(other[0].weight.data().asnumpy(),
                                  net[0].weight.data().asnumpy())
    pd_path = str(tmp_path / "pd.params")
    net.collect_params().save(pd_path, strip_prefix="model_")
    again = _mlp(prefix="model_")
    again.collect_params().load(pd_path, restore_prefix="model_")
    np.testing.assert_array_equal(again[2].weight.data().asnumpy(),
                                  net[2].weight.data().asnumpy())
    with pytest.raises(ValueError, match="does not start with 'zzz_'"):
        net.collect_params().save(pd_path, strip_prefix="zzz_")
