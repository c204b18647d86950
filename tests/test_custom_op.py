"""Python custom operators (``mx.operator``) run through ``nd.Custom``: values, gradients against
hand-derived formulas, keyword arguments reaching the property as strings, and errors."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import nd

SEEN = {}


class _Sigmoid(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        SEEN["is_train"] = is_train
        self.assign(out_data[0], req[0], 1.0 / (1.0 + nd.exp(-in_data[0])))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0]
        self.assign(in_grad[0], req[0], out_grad[0] * y * (1.0 - y))


@mx.operator.register("test_sigmoid")
class _SigmoidProp(mx.operator.CustomOpProp):
    def __init__(self, **kwargs):
        SEEN["kwargs"] = kwargs
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        SEEN["create"] = (in_shapes, in_dtypes)
        return _Sigmoid()


class _ProductAndSum(mx.operator.CustomOp):
    """Two inputs a, b; two outputs p = a * b * scale and s = a + b."""

    def __init__(self, scale):
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        a, b = in_data
        self.assign(out_data[0], req[0], a * b * self.scale)
        self.assign(out_data[1], req[1], a + b)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        a, b = in_data
        gp, gs = out_grad
        self.assign(in_grad[0], req[0], gp * b * self.scale + gs)
        self.assign(in_grad[1], req[1], gp * a * self.scale + gs)


@mx.operator.register("test_prod_sum")
class _ProductAndSumProp(mx.operator.CustomOpProp):
    def __init__(self, scale="1.0"):
        super().__init__()
        self.scale = float(scale)

    def list_arguments(self):
        return ["a", "b"]

    def list_outputs(self):
        return ["product", "total"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], in_shape[0]], []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _ProductAndSum(self.scale)


def test_custom_sigmoid_forward_and_gradient():
    x0 = np.array([[-2.0, -0.5], [0.0, 3.0]], dtype=np.float32)
    x = nd.array(x0)
    x.attach_grad()
    head = nd.array([[1.0, 2.0], [0.5, -1.0]])
    with mx.autograd.record():
        y = nd.Custom(x, op_type="test_sigmoid")
    y.backward(head)
    sig = 1.0 / (1.0 + np.exp(-x0.astype(np.float64)))
    np.testing.assert_allclose(y.asnumpy(), sig, rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), head.asnumpy() * sig * (1 - sig), rtol=1e-5)
    assert SEEN["is_train"] == 1
    assert SEEN["create"] == ([[2, 2]], [0])  # MXNet's dtype code for float32


def test_custom_outside_record_is_not_training_and_not_recorded():
    y = nd.Custom(nd.array([0.0]), op_type="test_sigmoid")
    assert SEEN["is_train"] == 0
    assert y.asnumpy()[0] == pytest.approx(0.5)


def test_custom_kwargs_reach_the_prop_as_strings():
    nd.Custom(nd.array([1.0]), op_type="test_sigmoid", alpha=2.5, dims=(1, 2), flag=True)
    assert SEEN["kwargs"] == {"alpha": "2.5", "dims": "(1, 2)", "flag": "True"}


def test_custom_two_outputs_gradient_against_hand_derivation():
    rng = np.random.default_rng(3)
    a0, b0 = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    a, b = nd.array(a0, dtype="float64"), nd.array(b0, dtype="float64")
    a.attach_grad()
    b.attach_grad()
    gp, gs = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    with mx.autograd.record():
        p, s = nd.Custom(a, b, op_type="test_prod_sum", scale=0.5)
    mx.autograd.backward([p, s], [nd.array(gp, dtype="float64"), nd.array(gs, dtype="float64")])
    np.testing.assert_allclose(p.asnumpy(), a0 * b0 * 0.5, rtol=1e-12)
    np.testing.assert_allclose(s.asnumpy(), a0 + b0, rtol=1e-12)
    np.testing.assert_allclose(a.grad.asnumpy(), gp * b0 * 0.5 + gs, rtol=1e-12)
    np.testing.assert_allclose(b.grad.asnumpy(), gp * a0 * 0.5 + gs, rtol=1e-12)


def test_custom_inputs_by_keyword_and_composition_with_builtin_ops():
    a0 = np.array([1.0, 2.0, 3.0])
    a = nd.array(a0, dtype="float64")
    a.attach_grad()
    with mx.autograd.record():
        p, _ = nd.Custom(op_type="test_prod_sum", a=a, b=a * 2.0, scale="3")
        loss = (p * p).sum()
    loss.backward()
    # p = 6 a², loss = 36 a⁴, dloss/da = 144 a³
    np.testing.assert_allclose(p.asnumpy(), 6 * a0**2)
    np.testing.assert_allclose(a.grad.asnumpy(), 144 * a0**3)


def test_assign_honours_req():
    op = mx.operator.CustomOp()
    dst = nd.array([1.0, 2.0])
    op.assign(dst, "add", nd.array([10.0, 10.0]))
    np.testing.assert_array_equal(dst.asnumpy(), [11.0, 12.0])
    op.assign(dst, "null", nd.array([0.0, 0.0]))
    np.testing.assert_array_equal(dst.asnumpy(), [11.0, 12.0])
    op.assign(dst, "write", nd.array([5.0, 6.0]))
    np.testing.assert_array_equal(dst.asnumpy(), [5.0, 6.0])
    with pytest.raises(ValueError, match="req"):
        op.assign(dst, "bogus", dst)


def test_prop_defaults():
    prop = mx.operator.CustomOpProp()
    assert prop.list_arguments() == ["data"]
    assert prop.list_outputs() == ["output"]
    assert prop.list_auxiliary_states() == []
    assert prop.infer_shape([(2, 3), (4,)]) == ([(2, 3), (4,)], ((2, 3),), ())
    assert prop.declare_backward_dependency([1], [2], [3]) == [1, 2, 3]
    assert mx.operator.CustomOpProp(need_top_grad=False).declare_backward_dependency(
        [1], [2], [3]) == [2, 3]


def test_unknown_op_type_and_bad_registration_raise():
    with pytest.raises(mx.MXNetError, match="no_such_op"):
        nd.Custom(nd.array([1.0]), op_type="no_such_op")
    with pytest.raises(mx.MXNetError, match="inputs"):
        nd.Custom(nd.array([1.0]), op_type="test_prod_sum")
    with pytest.raises(TypeError, match="CustomOpProp"):
        mx.operator.register("bad")(object)


def test_sym_custom_is_not_supported_yet():
    with pytest.raises(NotImplementedError, match="nd.Custom"):
        mx.sym.Custom(mx.sym.var("x"), op_type="test_sigmoid")
