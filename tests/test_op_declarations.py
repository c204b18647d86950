"""Op declarations: signatures, docstrings, keyword parsing in Rust and the generated files.

Every ``nd.<op>`` and ``sym.<op>`` is generated from the op's one declaration in Rust; these tests
check what users see of it: real defaults, typed docstrings, clear errors raised before any work,
and checked-in stubs and docs that match the declarations.
"""

import inspect

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import _generate, nd
from ferrograd.base import DTypeError, MXNetError, ValueError_


def test_signatures_carry_declared_defaults():
    sig = inspect.signature(nd.LeakyReLU)
    defaults = {n: p.default for n, p in sig.parameters.items()}
    assert defaults["act_type"] == "leaky" and defaults["slope"] == 0.25
    assert defaults["gamma"] is None  # an optional input
    assert list(sig.parameters)[:3] == ["data", "gamma", "act_type"]
    act = inspect.signature(nd.Activation).parameters["act_type"]
    assert act.default is inspect.Parameter.empty  # required in MXNet
    s = inspect.signature(nd.sum).parameters
    assert (s["axis"].default, s["keepdims"].default, s["exclude"].default) == (None, False, False)
    assert inspect.signature(mx.sym.LeakyReLU).parameters["slope"].default == 0.25


def test_docstrings_list_types_defaults_and_choices():
    doc = nd.LeakyReLU.__doc__
    assert "slope : float, default 0.25" in doc
    assert "act_type : {'elu', 'gelu', 'leaky', 'prelu', 'rrelu', 'selu'}, default 'leaky'" in doc
    assert "act_type : {'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required" in \
        nd.Activation.__doc__
    assert nd.sum.__doc__.startswith("Sum over axes.")
    assert "Symbol" in mx.sym.Activation.__doc__


def test_keyword_calls_compute_the_right_values():
    a = np.array([[-2.0, -0.5, 0.0, 3.0]], dtype=np.float32)
    x = nd.array(a)
    np.testing.assert_allclose(nd.Activation(x, act_type="relu").asnumpy(), np.maximum(a, 0))
    np.testing.assert_allclose(nd.LeakyReLU(x, slope=0.1).asnumpy(), np.where(a > 0, a, 0.1 * a))
    np.testing.assert_allclose(nd.LeakyReLU(x, None, "leaky", 0.2).asnumpy(),  # by position
                               np.where(a > 0, a, 0.2 * a))
    w = nd.array(np.arange(8, dtype=np.float32).reshape(2, 4))
    b = nd.array([1.0, -1.0])
    fc = nd.FullyConnected(x, w, b, num_hidden=2)
    np.testing.assert_allclose(fc.asnumpy(), a @ w.asnumpy().T + [1.0, -1.0], rtol=1e-6)
    fc = nd.FullyConnected(data=x, weight=w, no_bias=True, num_hidden=2)
    np.testing.assert_allclose(fc.asnumpy(), a @ w.asnumpy().T, rtol=1e-6)
    np.testing.assert_allclose(nd.sum(x, axis=1, keepdims=True).asnumpy(), [[0.5]])
    out = nd.zeros((1, 4))
    assert nd.relu(x, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), np.maximum(a, 0))


def _raises(cls, fn, *args, match, **kwargs):
    with pytest.raises(cls) as info:
        fn(*args, **kwargs)
    assert isinstance(info.value, MXNetError)
    for m in match:
        assert m in str(info.value), (m, str(info.value))


def test_bad_keywords_name_the_op_the_parameter_and_the_allowed_values():
    x = nd.array([[1.0, -1.0]])
    _raises(TypeError, nd.Activation, x, act_tpye="relu",
            match=["Activation", "act_tpye", "act_type"])
    _raises(ValueError, nd.Activation, x, act_type="gelu",
            match=["Activation", "act_type", "relu, sigmoid, softrelu, softsign, tanh", "gelu"])
    _raises(ValueError, nd.Activation, x, match=["Activation", "required", "act_type"])
    _raises(ValueError, nd.LeakyReLU, x, slope="steep", match=["LeakyReLU", "slope", "number"])
    _raises(ValueError, nd.sum, x, keepdims="maybe", match=["sum", "keepdims", "boolean"])
    _raises(TypeError, nd.exp, x, x, match=["exp", "positional"])
    _raises(TypeError, nd.exp, x, data=x, match=["exp", "multiple values", "data"])
    _raises(TypeError, nd.FullyConnected, x, num_hidden=2, match=["FullyConnected", "weight"])
    assert issubclass(DTypeError, TypeError) and issubclass(ValueError_, ValueError)


def test_a_rejected_call_does_no_work():
    x = nd.array([[1.0, -1.0]])
    out = nd.full((1, 2), 7.0)
    with pytest.raises(ValueError):
        nd.Activation(x, act_type="nope", out=out)
    assert out.asnumpy().tolist() == [[7.0, 7.0]]
    assert x.asnumpy().tolist() == [[1.0, -1.0]]


def test_symbol_json_attributes_parse_through_the_same_declaration():
    s = mx.sym.LeakyReLU(mx.sym.var("x"), act_type="elu", slope=0.5, name="lr")
    again = mx.sym.load_json(s.tojson())
    ex = again.bind(mx.cpu(), {"x": nd.array([[-1.0, 2.0]])})
    got = ex.forward()[0].asnumpy()
    np.testing.assert_allclose(got, [[0.5 * (np.exp(-1.0) - 1), 2.0]], rtol=1e-6)


def test_generated_stubs_and_docs_are_fresh():
    stale = [str(p) for p, text in _generate.outputs().items()
             if not p.exists() or p.read_text() != text]
    assert not stale, f"run `python -m ferrograd._generate` to regenerate: {stale}"


def test_fluent_methods_exist_for_every_stubbed_method():
    text = (_generate.ROOT / "_ferrograd.pyi").read_text()
    block = text.partition(_generate.BEGIN)[2].partition(_generate.END)[0]
    names = [line.split("def ")[1].split("(")[0] for line in block.splitlines() if "def " in line]
    assert names and all(hasattr(nd.NDArray, n) for n in names)
    assert not hasattr(nd.NDArray, "mish")  # no phantom methods


def test_tuple_keywords_of_numpy_ints_bools_floats_and_none():
    x = nd.arange(6)
    # NumPy integers and bools make an integer tuple; floats and None MXNet's string form.
    assert nd.reshape(x, shape=(np.int64(2), 3)).shape == (2, 3)
    assert nd.reshape(x, shape=[True, 6]).shape == (1, 6)
    assert nd.slice(x, begin=(1,), end=(None,)).asnumpy().tolist() == [1, 2, 3, 4, 5]
    img = nd.ones((2, 1, 1))
    out = nd.image.normalize(img, mean=(0.5, 0.25), std=(2, 0.5)).asnumpy().ravel()
    np.testing.assert_allclose(out, [0.25, 1.5])
    with pytest.raises(TypeError):
        nd.reshape(x, shape=("2", 3))
