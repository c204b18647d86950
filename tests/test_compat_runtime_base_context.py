"""``mx.runtime``, ``mx.base``'s type names and ``mx.context`` (issue 14)."""

import json
import threading
import warnings
from pathlib import Path

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import base, context, runtime, test_utils
from ferrograd.context import Context

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "mxnet_compat_names.json").read_text())


# ----------------------------------------------------------------------------------------------
# runtime


def test_features_have_mxnets_names_in_mxnets_order():
    assert [f.name for f in runtime.feature_list()] == FIXTURE["features"]
    assert list(runtime.Features()) == FIXTURE["features"]


def test_features_are_honest_for_a_cpu_only_build():
    f = runtime.Features()
    for name in ["CUDA", "CUDNN", "NCCL", "TENSORRT", "MKLDNN", "OPENCV", "DIST_KVSTORE",
                 "TVM_OP", "OPENMP", "BLAS_OPEN", "BLAS_MKL", "LAPACK", "CAFFE"]:
        assert f.is_enabled(name) is False, name
    assert f.is_enabled("INT64_TENSOR_SIZE") is True
    assert f["CUDA"].enabled is False and f["CUDA"].name == "CUDA"


def test_features_lookup_is_case_insensitive_and_unknown_names_raise():
    f = runtime.Features()
    assert f.is_enabled("cuda") == f.is_enabled("CUDA")
    with pytest.raises(RuntimeError, match=r"Feature 'NOPE' is unknown, known features are: "
                                           r"\['CUDA', 'CUDNN'"):
        f.is_enabled("nope")
    with pytest.raises(KeyError):
        f["NOPE"]


def test_features_repr_marks_enabled_with_a_tick():
    f = runtime.Features()
    assert repr(f["CUDA"]) == "✖ CUDA"
    assert repr(f["INT64_TENSOR_SIZE"]) == "✔ INT64_TENSOR_SIZE"
    assert repr(f) == "[" + ", ".join(repr(v) for v in f.values()) + "]"


# ----------------------------------------------------------------------------------------------
# base


def test_base_type_tuples_classify_values_like_mxnet():
    assert isinstance(np.int64(3), base.integer_types) and isinstance(3, base.integer_types)
    assert not isinstance(3.0, base.integer_types)
    for v in (1, 2.5, np.float16(1), np.int8(2)):
        assert isinstance(v, base.numeric_types), v
    assert not isinstance("1", base.numeric_types)
    assert base.string_types == (str,)
    assert base.mx_real_t is np.float32


def test_base_helpers():
    assert base.py_str(b"caf\xc3\xa9") == "café" and base.py_str("x") == "x"
    assert base._as_list(3) == [3]
    lst, tup = [1], (1, 2)
    assert base._as_list(lst) is lst and base._as_list(tup) is tup
    assert base.c_str("ab").value == b"ab"
    assert base.check_call(0) is None
    with pytest.raises(base.MXNetError, match="returned -1"):
        base.check_call(-1)


# ----------------------------------------------------------------------------------------------
# context


@pytest.fixture
def restore_context():
    yield
    test_utils.set_default_context(mx.cpu(0))


def test_devtype_tables():
    assert Context.devtype2str == {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    assert all(Context.devstr2type[v] == k for k, v in Context.devtype2str.items())
    ctx = Context("cpu_shared", 0)
    assert ctx.device_typeid == 5 and repr(ctx) == "cpu_shared(0)"
    with pytest.raises(KeyError):
        Context("tpu")


def test_gpu_contexts_exist_but_cannot_hold_arrays():
    g = mx.gpu(11)
    assert (g.device_type, g.device_id, g.device_typeid) == ("gpu", 11, 2)
    assert g == mx.gpu(11) and g != mx.cpu(11)
    with pytest.raises(mx.MXNetError, match=r"CPU only.*gpu\(0\)"):
        mx.nd.zeros((2,), ctx=mx.gpu(0))
    with pytest.raises(mx.MXNetError, match="CPU only"):
        mx.nd.ones((2,)).as_in_context(mx.gpu(1))


def test_empty_cache_is_a_no_op_and_there_is_no_gpu_memory():
    assert mx.cpu().empty_cache() is None
    with pytest.raises(mx.MXNetError, match="CPU only"):
        context.gpu_memory_info(0)


def test_default_ctx_reads_and_sets_this_threads_default(restore_context):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert Context.default_ctx == mx.cpu(0)
        Context.default_ctx = mx.cpu(3)
        assert mx.current_context() == mx.cpu(3) == context.current_context()
        assert Context.default_ctx == mx.cpu(3)
    with pytest.warns(DeprecationWarning, match="current_context"):
        Context.default_ctx  # noqa: B018 - the read itself warns
    with warnings.catch_warnings(), pytest.raises(TypeError, match="Context"):
        warnings.simplefilter("ignore", DeprecationWarning)
        Context.default_ctx = "cpu"


def test_default_context_is_per_thread(restore_context):
    seen = []

    def worker():
        seen.append(mx.current_context())
        test_utils.set_default_context(mx.gpu(11))
        seen.append(mx.current_context())

    test_utils.set_default_context(mx.cpu(2))
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [mx.cpu(0), mx.gpu(11)]  # a new thread starts from cpu(0)
    assert mx.current_context() == mx.cpu(2)  # and its change stays there


def test_with_context_in_another_thread_survives_changes_here(restore_context):
    entered, release, seen = threading.Event(), threading.Event(), []

    def worker():
        with mx.cpu(10):
            entered.set()
            release.wait(5)
            seen.append(mx.current_context())

    t = threading.Thread(target=worker)
    t.start()
    entered.wait(5)
    test_utils.set_default_context(mx.cpu(11))
    release.set()
    t.join()
    assert seen == [mx.cpu(10)]
