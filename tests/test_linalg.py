"""``nd.linalg`` / ``sym.linalg`` (issue 20): MXNet 1.9.1's values and gradients from a fixture,
NumPy references, finite-difference gradients (first order through ``check_numeric_gradient``,
second order through ``autograd.grad(create_graph=True)``), batches over several leading axes,
symbolic shape inference and bad input."""

import json
import os

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd
from ferrograd import test_utils as tu

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "mxnet_linalg.json")
with open(FIXTURE) as _f:
    CASES = json.load(_f)["cases"]
DONE = set(dir(mx.nd.linalg))


def nd64(x):
    return mx.nd.array(np.asarray(x, dtype=np.float64), dtype="float64")


@pytest.mark.parametrize("case", [c for c in CASES if c["op"] in DONE],
                         ids=lambda c: f"{c['op']}-{c['kwargs']}")
def test_values_and_gradients_match_mxnet(case):
    xs = [nd64(x) for x in case["inputs"]]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        ys = getattr(mx.nd.linalg, case["op"])(*xs, **case["kwargs"])
    ys = ys if isinstance(ys, (list, tuple)) else [ys]
    assert len(ys) == len(case["outputs"])
    for y, want in zip(ys, case["outputs"], strict=True):
        np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-10, atol=1e-12)
    autograd.backward(ys, [nd64(h) for h in case["heads"]])
    for x, want in zip(xs, case["grads"], strict=True):
        np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-8, atol=1e-10)


def spd(rng, shape):
    x = rng.uniform(-1, 1, shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12)])
def test_numpy_references_over_several_batch_axes(dtype, tol):
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (2, 3, 4, 4)) + 3 * np.eye(4)
    s = spd(rng, (2, 3, 4, 4))
    b = rng.uniform(-1, 1, (2, 3, 4, 5))
    c = rng.uniform(-1, 1, (2, 3, 4, 5))
    A, S, B, C = (mx.nd.array(v, dtype=dtype) for v in (a, s, b, c))
    la = mx.nd.linalg
    close = lambda got, want: np.testing.assert_allclose(  # noqa: E731
        got.asnumpy(), want, rtol=tol * 10, atol=tol * 10)
    close(la.gemm(A, B, C, alpha=2.0, beta=-1.0), 2 * a @ b - c)
    close(la.gemm2(A, B, transpose_a=True), np.swapaxes(a, -1, -2) @ b)
    close(la.syrk(B, alpha=0.5), 0.5 * b @ np.swapaxes(b, -1, -2))
    close(la.potrf(S), np.linalg.cholesky(s))
    close(la.potri(la.potrf(S)), np.linalg.inv(s))
    close(la.inverse(A), np.linalg.inv(a))
    close(la.det(A), np.linalg.det(a))
    sign, logdet = la.slogdet(A)
    want_sign, want_log = np.linalg.slogdet(a)
    close(sign, want_sign)
    close(logdet, want_log)
    close(la.sumlogdiag(S), np.log(np.diagonal(s, axis1=-2, axis2=-1)).sum(-1))
    close(la.trmm(A, B), np.tril(a) @ b)
    close(la.trsm(A, B, transpose=True), np.linalg.solve(np.swapaxes(np.tril(a), -1, -2), b))
    close(la.trsm(A, b_t := mx.nd.array(np.swapaxes(b, -1, -2), dtype=dtype), rightside=True,
                  lower=False), np.swapaxes(np.linalg.solve(np.swapaxes(np.triu(a), -1, -2),
                                                            b), -1, -2))
    assert b_t.shape == (2, 3, 5, 4)
    close(la.extractdiag(A, offset=1), np.diagonal(a, offset=1, axis1=-2, axis2=-1))
    close(la.makediag(la.extractdiag(A)), np.diagonal(a, axis1=-2, axis2=-1)[..., None]
          * np.eye(4))
    close(la.maketrian(la.extracttrian(A)), np.tril(a))
    close(la.maketrian(la.extracttrian(A, offset=2), offset=2), np.triu(a, 2))


def test_first_order_gradients_through_the_executor():
    rng = np.random.RandomState(3)
    a_var, b_var = mx.sym.var("a"), mx.sym.var("b")
    la = mx.sym.linalg
    sq = rng.uniform(-1, 1, (2, 3, 3)) + 3 * np.eye(3)
    cases = [
        (la.gemm(a_var, b_var, mx.sym.var("c"), transpose_b=True, alpha=0.3, beta=2.0),
         {"a": rng.uniform(-1, 1, (2, 3, 4)), "b": rng.uniform(-1, 1, (2, 5, 4)),
          "c": rng.uniform(-1, 1, (2, 3, 5))}),
        (la.trsm(a_var, b_var, rightside=True, alpha=2.0),
         {"a": sq, "b": rng.uniform(-1, 1, (2, 4, 3))}),
        (la.trmm(a_var, b_var, transpose=True, lower=False),
         {"a": sq, "b": rng.uniform(-1, 1, (2, 3, 2))}),
        (la.inverse(a_var), {"a": sq}),
        (la.det(a_var), {"a": sq}),
        (la.slogdet(a_var)[1], {"a": sq}),
        (la.potri(a_var), {"a": np.tril(sq)}),
        (la.sumlogdiag(a_var), {"a": sq}),
        (la.syrk(a_var, transpose=True), {"a": rng.uniform(-1, 1, (2, 2, 3))}),
        (la.maketrian(la.extracttrian(a_var, offset=-1), offset=1), {"a": sq}),
        # potrf of a symmetrised input: the composite is smooth in every entry.
        (la.potrf(mx.sym.broadcast_add(la.syrk(a_var),
                                       la.makediag(mx.sym.ones((3,), dtype="float64") * 3))),
         {"a": sq}),
    ]
    for s, loc in cases:
        tu.check_numeric_gradient(s, loc, numeric_eps=1e-6, rtol=1e-5, atol=1e-7,
                                  dtype=np.float64)


def second_order(f, x, v, eps=1e-5):
    """d/dx of <grad f(x), v>: through create_graph, and by central differences of grad f."""
    def grad_at(xv, create=False):
        xa = nd64(xv)
        xa.attach_grad()
        with autograd.record():
            y = f(xa)
            (g,) = autograd.grad(y, [xa], create_graph=create)
            z = (g * nd64(v)).sum()
        return xa, z
    xa, z = grad_at(x, create=True)
    z.backward()
    got = xa.grad.asnumpy()
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        fd[i] = (grad_at(hi)[1].asscalar() - grad_at(lo)[1].asscalar()) / (2 * eps)
    np.testing.assert_allclose(got, fd, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", ["inverse", "det", "slogdet", "potrf", "trsm", "potri",
                                  "sumlogdiag", "gemm"])
def test_second_order_gradients(name):
    rng = np.random.default_rng(7)
    la = mx.nd.linalg
    w = nd64(rng.uniform(-1, 1, (2, 3, 3)))
    b = nd64(rng.uniform(-1, 1, (2, 3, 3)))
    x = rng.uniform(-1, 1, (2, 3, 3)) + 2.5 * np.eye(3)
    eye3 = nd64(np.broadcast_to(3 * np.eye(3), (2, 3, 3)))
    f = {
        "inverse": lambda a: (la.inverse(a) * w).sum(),
        "det": lambda a: la.det(a).sum(),
        "slogdet": lambda a: la.slogdet(a)[1].sum(),
        "potrf": lambda a: (la.potrf(la.syrk(a) + eye3) * w).sum(),
        "trsm": lambda a: (la.trsm(a, b, transpose=True) * w).sum(),
        "potri": lambda a: (la.potri(a) * w).sum(),
        "sumlogdiag": lambda a: la.sumlogdiag(a * a).sum(),
        "gemm": lambda a: (la.gemm(a, a, b, transpose_a=True, alpha=0.5) ** 2).sum(),
    }[name]
    second_order(f, x, rng.uniform(-1, 1, x.shape))


def test_symbolic_inference():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    la = mx.sym.linalg
    shapes = [
        (la.gemm(a, b, mx.sym.var("c"), transpose_a=True), {"a": (5, 3, 2), "b": (5, 3, 4),
                                                            "c": (5, 2, 4)}, [(5, 2, 4)]),
        (la.syrk(a, transpose=True), {"a": (2, 3)}, [(3, 3)]),
        (la.trsm(a, b, rightside=True), {"a": (4, 4), "b": (2, 4)}, [(2, 4)]),
        (la.potrf(a), {"a": (2, 3, 3)}, [(2, 3, 3)]),
        (la.det(a), {"a": (3, 3)}, [(1,)]),
        (la.det(a), {"a": (2, 4, 3, 3)}, [(2, 4)]),
        (la.slogdet(a), {"a": (2, 3, 3)}, [(2,), (2,)]),
        (la.sumlogdiag(a), {"a": (6, 2, 2)}, [(6,)]),
        (la.extracttrian(a, offset=-1), {"a": (4, 4)}, [(6,)]),
        (la.maketrian(a, offset=1), {"a": (2, 6)}, [(2, 4, 4)]),
        (la.makediag(a, offset=-2), {"a": (3,)}, [(5, 5)]),
        (la.extractdiag(a, offset=2), {"a": (7, 5, 5)}, [(7, 3)]),
    ]
    for s, args, want in shapes:
        _, outs, _ = s.infer_shape(**args)
        assert outs == want, (s.list_outputs(), outs, want)


@pytest.mark.parametrize("call,match", [
    (lambda: mx.nd.linalg.inverse(mx.nd.ones((2, 3))), "inverse.*square"),
    (lambda: mx.nd.linalg.inverse(nd64([[1, 2], [2, 4]])), "inverse.*singular"),
    (lambda: mx.nd.linalg.potrf(nd64([[1, 2], [2, 1]])), "potrf.*positive definite"),
    (lambda: mx.nd.linalg.potri(nd64([[0, 0], [1, 1]])), "potri.*Cholesky"),
    (lambda: mx.nd.linalg.trsm(nd64([[0, 0], [1, 1]]), nd64(np.ones((2, 2)))), "trsm.*singular"),
    (lambda: mx.nd.linalg.trmm(mx.nd.ones((2, 2)), mx.nd.ones((3, 2))), "trmm"),
    (lambda: mx.nd.linalg.gemm(mx.nd.ones((2, 2)), mx.nd.ones((3, 2)), mx.nd.ones((2, 2))),
     "gemm"),
    (lambda: mx.nd.linalg.gemm(mx.nd.ones((2, 2)), mx.nd.ones((2, 2)), mx.nd.ones((2, 2)),
                               axis=-3), "axis"),
    (lambda: mx.nd.linalg.det(mx.nd.ones((2, 2), dtype="int32")), "float32 or float64"),
    (lambda: mx.nd.linalg.extractdiag(mx.nd.ones((3,))), "extractdiag"),
    (lambda: mx.nd.linalg.extracttrian(mx.nd.ones((2, 2)), offset=3), "offset"),
    (lambda: mx.nd.linalg.maketrian(mx.nd.ones((4,))), "triangular number"),
    (lambda: mx.nd.linalg.potrf(mx.nd.ones((2, 2, 3))), "square"),
])
def test_bad_input_is_a_clear_error(call, match):
    with pytest.raises(mx.base.MXNetError, match=match):
        call().asnumpy()


def test_batch_errors_name_the_failing_matrix():
    good = np.eye(2)
    bad = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(mx.base.MXNetError, match="matrix 1 of the batch"):
        mx.nd.linalg.inverse(nd64(np.stack([good, bad, good])))


def test_large_batch_runs_in_parallel_and_matches_serial_results():
    rng = np.random.default_rng(9)
    a = rng.uniform(-1, 1, (4096, 8, 8)) + 4 * np.eye(8)
    got = mx.nd.linalg.inverse(nd64(a)).asnumpy()
    np.testing.assert_allclose(got, np.linalg.inv(a), rtol=1e-10, atol=1e-12)


def test_symbols_are_auto_named_by_their_short_name():
    with mx.name.NameManager():
        u_l = mx.sym.linalg.syevd(mx.sym.var("a"))
        assert u_l.list_outputs() == ["syevd0_output0", "syevd0_output1"]
        assert mx.sym.linalg.gemm2(mx.sym.var("a"), mx.sym.var("b")).name == "gemm20"
