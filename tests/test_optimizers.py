"""mx.optimizer: every optimizer's rule, step by step, against NumPy written here (with
rescale_grad, clip_gradient, wd and multi-precision), plus the base class's bookkeeping."""

import pickle

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import optimizer as opt

SHAPE = (3, 4)
COMMON = dict(rescale_grad=0.5, clip_gradient=0.4, wd=0.03)


def _g(g, o, w=None):
    """rescale, [+wd*w], clip — as the named optimizer prepares its gradient."""
    g = g * o["rescale_grad"]
    if w is not None:
        g = g + o["wd"] * w
    return np.clip(g, -o["clip_gradient"], o["clip_gradient"])


def ref_sgd(w, g, s, t, o):
    lr, mom = o["learning_rate"], o.get("momentum", 0.0)
    s = s if s is not None else np.zeros_like(w)
    s = mom * s - lr * (_g(g, o) + o["wd"] * w)
    return w + s, s


def ref_nag(w, g, s, t, o):
    lr, mom = o["learning_rate"], o["momentum"]
    gg = _g(g, o) + o["wd"] * w
    s = mom * s - lr * gg
    return w + mom * s - lr * gg, s


def ref_signum(w, g, s, t, o):
    lr, mom = o["learning_rate"], o["momentum"]
    s = mom * s - (1 - mom) * (o["wd"] * w + _g(g, o))
    return (1 - lr * o["wd_lh"]) * w + lr * np.sign(s), s


def ref_adam(w, g, s, t, o):
    lr, b1, b2, eps = o["learning_rate"], o["beta1"], o["beta2"], o["epsilon"]
    m, v = s
    gg = _g(g, o, w)
    m = b1 * m + (1 - b1) * gg
    v = b2 * v + (1 - b2) * gg * gg
    lr_t = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
    return w - lr_t * m / (np.sqrt(v) + eps), (m, v)


def ref_adagrad(w, g, s, t, o):
    gg = _g(g, o)
    s = s + gg * gg
    return w - o["learning_rate"] * (gg / np.sqrt(s + o["eps"]) + o["wd"] * w), s


def ref_adadelta(w, g, s, t, o):
    rho, eps = o["rho"], o["epsilon"]
    acc_g, acc_d = s
    gg = _g(g, o)
    acc_g = rho * acc_g + (1 - rho) * gg * gg
    d = np.sqrt(acc_d + eps) / np.sqrt(acc_g + eps) * gg
    acc_d = rho * acc_d + (1 - rho) * d * d
    return w - (d + o["wd"] * w), (acc_g, acc_d)


def ref_adamax(w, g, s, t, o):
    b1, b2 = o["beta1"], o["beta2"]
    m, u = s
    gg = _g(g, o, w)
    m = b1 * m + (1 - b1) * gg
    u = np.maximum(b2 * u, np.abs(gg))
    return w - o["learning_rate"] / (1 - b1**t) * m / u, (m, u)


def ref_rmsprop(w, g, s, t, o):
    g1, eps = o["gamma1"], o["epsilon"]
    (n,) = s
    gg = _g(g, o, w)
    n = (1 - g1) * gg * gg + g1 * n
    return np.clip(
        w - o["learning_rate"] * gg / np.sqrt(n + eps), -o["clip_weights"], o["clip_weights"]
    ), (n,)


def ref_rmsprop_centered(w, g, s, t, o):
    g1, g2, eps = o["gamma1"], o["gamma2"], o["epsilon"]
    n, gbar, delta = s
    gg = _g(g, o, w)
    n = (1 - g1) * gg * gg + g1 * n
    gbar = (1 - g1) * gg + g1 * gbar
    delta = g2 * delta - o["learning_rate"] * gg / np.sqrt(n - gbar * gbar + eps)
    return w + delta, (n, gbar, delta)


def ref_ftrl(w, g, s, t, o):
    lr, l1, beta = o["learning_rate"], o["lamda1"], o["beta"]
    z, n = s
    gg = _g(g, o)
    z = z + gg - (np.sqrt(n + gg * gg) - np.sqrt(n)) * w / lr
    n = n + gg * gg
    w = (np.sign(z) * l1 - z) / ((beta + np.sqrt(n)) / lr + o["wd"]) * (np.abs(z) > l1)
    return w, (z, n)


def ref_ftml(w, g, s, t, o):
    lr, b1, b2, eps = o["learning_rate"], o["beta1"], o["beta2"], o["epsilon"]
    d, v, z = s
    gg = _g(g, o, w)
    v = b2 * v + (1 - b2) * gg * gg
    d_t = (1 - b1**t) / lr * (np.sqrt(v / (1 - b2**t)) + eps)
    z = b1 * z + (1 - b1) * gg - (d_t - b1 * d) * w
    return -z / d_t, (d_t, v, z)


def ref_lamb(w, g, s, t, o):
    b1, b2, eps = o["beta1"], o["beta2"], o["epsilon"]
    m, v = s
    gg = _g(g, o)
    m = b1 * m + (1 - b1) * gg
    v = b2 * v + (1 - b2) * gg * gg
    direction = (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps) + o["wd"] * w
    r1, r2 = np.linalg.norm(w), np.linalg.norm(direction)
    ratio = r1 / r2 if r1 > 0 and r2 > 0 else 1.0
    return w - o["learning_rate"] * ratio * direction, (m, v)


def ref_nadam(w, g, s, t, o):
    b1, b2, eps, decay = o["beta1"], o["beta2"], o["epsilon"], o["schedule_decay"]
    m, v, sched = s
    gg = _g(g, o, w)
    mom_t = b1 * (1 - 0.5 * 0.96 ** (t * decay))
    mom_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * decay))
    sched = sched * mom_t
    m = b1 * m + (1 - b1) * gg
    v = b2 * v + (1 - b2) * gg * gg
    m_bar = (1 - mom_t) * gg / (1 - sched) + mom_next * m / (1 - sched * mom_next)
    return w - o["learning_rate"] * m_bar / (np.sqrt(v / (1 - b2**t)) + eps), (m, v, sched)


def ref_dcasgd(w, g, s, t, o):
    mom, prev = s
    gg = _g(g, o)
    mom = o["momentum"] * mom - o["learning_rate"] * (
        gg + o["wd"] * w + o["lamda"] * gg * gg * (w - prev)
    )
    return w + mom, (mom, w.copy())


def _zeros(n):
    return lambda w: tuple(np.zeros_like(w) for _ in range(n)) if n > 1 else np.zeros_like(w)


CASES = [
    ("sgd", dict(learning_rate=0.1), ref_sgd, lambda w: None),
    ("sgd", dict(learning_rate=0.1, momentum=0.9), ref_sgd, _zeros(1)),
    ("nag", dict(learning_rate=0.1, momentum=0.9), ref_nag, _zeros(1)),
    ("signum", dict(learning_rate=0.1, momentum=0.8, wd_lh=0.02), ref_signum, _zeros(1)),
    ("adam", dict(learning_rate=0.01, beta1=0.8, beta2=0.99, epsilon=1e-6), ref_adam, _zeros(2)),
    ("adagrad", dict(learning_rate=0.1, eps=1e-7), ref_adagrad, _zeros(1)),
    ("adadelta", dict(rho=0.9, epsilon=1e-5), ref_adadelta, _zeros(2)),
    ("adamax", dict(learning_rate=0.01, beta1=0.9, beta2=0.99), ref_adamax, _zeros(2)),
    (
        "rmsprop",
        dict(learning_rate=0.01, gamma1=0.9, epsilon=1e-6, clip_weights=0.9),
        ref_rmsprop,
        lambda w: (np.zeros_like(w),),
    ),
    (
        "rmsprop",
        dict(learning_rate=0.01, gamma1=0.9, gamma2=0.8, epsilon=1e-6, centered=True),
        ref_rmsprop_centered,
        lambda w: (np.zeros_like(w),) * 3,
    ),
    ("ftrl", dict(learning_rate=0.1, lamda1=0.01, beta=1.0), ref_ftrl, _zeros(2)),
    ("ftml", dict(learning_rate=0.1, beta1=0.6, beta2=0.999, epsilon=1e-6), ref_ftml, _zeros(3)),
    ("lamb", dict(learning_rate=0.01, beta1=0.9, beta2=0.999, epsilon=1e-6), ref_lamb, _zeros(2)),
    (
        "nadam",
        dict(learning_rate=0.01, beta1=0.9, beta2=0.999, epsilon=1e-8, schedule_decay=0.004),
        ref_nadam,
        lambda w: (np.zeros_like(w), np.zeros_like(w), 1.0),
    ),
    (
        "dcasgd",
        dict(learning_rate=0.1, momentum=0.5, lamda=0.04),
        ref_dcasgd,
        lambda w: (np.zeros_like(w), w.copy()),
    ),
]


@pytest.mark.parametrize(
    "name, params, ref, init", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_rule_step_by_step_against_numpy(name, params, ref, init):
    rng = np.random.default_rng(3)
    o = dict(COMMON, **params)
    kwargs = {k: v for k, v in o.items()}
    optim = opt.create(name, **kwargs)
    w = rng.standard_normal(SHAPE).astype(np.float32)
    weight = mx.nd.array(w)
    state = optim.create_state_multi_precision(0, weight)
    want_w, want_s = w.astype(np.float64), init(w.astype(np.float64))
    for t in range(1, 4):
        g = rng.standard_normal(SHAPE).astype(np.float32)
        optim.update_multi_precision(0, weight, mx.nd.array(g), state)
        want_w, want_s = ref(want_w, g.astype(np.float64), want_s, t, o)
        np.testing.assert_allclose(
            weight.asnumpy(), want_w, rtol=2e-5, atol=2e-6, err_msg=f"step {t}"
        )


@pytest.mark.parametrize("name", ["sgd", "nag", "adam", "signum"])
def test_multi_precision_float16_matches_float32_master(name):
    rng = np.random.default_rng(4)
    params = dict(learning_rate=0.05, momentum=0.9) if name in ("sgd", "nag", "signum") else {}
    o32 = opt.create(name, **params, **COMMON)
    o16 = opt.create(name, multi_precision=True, **params, **COMMON)
    w = rng.standard_normal(SHAPE).astype(np.float16)
    w32, w16 = mx.nd.array(w.astype(np.float32)), mx.nd.array(w, dtype="float16")
    s32, s16 = o32.create_state_multi_precision(0, w32), o16.create_state_multi_precision(0, w16)
    for _ in range(3):
        g = rng.standard_normal(SHAPE).astype(np.float16)
        o32.update_multi_precision(0, w32, mx.nd.array(g.astype(np.float32)), s32)
        o16.update_multi_precision(0, w16, mx.nd.array(g, dtype="float16"), s16)
    assert w16.dtype == np.float16
    np.testing.assert_allclose(w16.asnumpy(), w32.asnumpy().astype(np.float16), rtol=0, atol=0)


def test_test_optimizer_and_sgld_noise_scale():
    o = opt.create("test", rescale_grad=2.0)
    w, g = mx.nd.ones((2,)), mx.nd.array([1.0, -1.0])
    s = o.create_state(0, w)
    o.update(0, w, g, s)
    np.testing.assert_allclose(w.asnumpy(), [3.0, -1.0])
    np.testing.assert_allclose(s.asnumpy(), [3.0, -1.0])
    mx.random.seed(1)
    sgld = opt.create("sgld", learning_rate=0.01)
    w = mx.nd.zeros((20000,))
    sgld.update(0, w, mx.nd.zeros((20000,)), None)
    assert abs(float(w.asnumpy().std()) - 0.1) < 0.005


def test_lars_scales_rate_by_norm_ratio():
    o = opt.create(
        "lars", learning_rate=1.0, eta=0.5, param_idx2name={0: "fc_weight", 1: "fc_bias"}
    )
    w = mx.nd.array([3.0, 4.0])
    o.update(0, w, mx.nd.array([0.0, 1.0]), None)
    # lars = 0.5*|w|/|g| = 2.5
    np.testing.assert_allclose(w.asnumpy(), [3.0, 1.5])
    b = mx.nd.array([3.0, 4.0])
    o.update(1, b, mx.nd.array([0.0, 1.0]), None)
    np.testing.assert_allclose(b.asnumpy(), [3.0, 3.0])


def test_lr_and_wd_multipliers():
    o = opt.create("sgd", learning_rate=1.0, wd=0.1, param_idx2name={0: "a_weight", 1: "a_bias"})
    assert o._get_wd(0) == pytest.approx(0.1) and o._get_wd(1) == 0.0
    o.set_lr_mult({0: 0.5})
    o.set_wd_mult({"a_bias": 2.0})
    assert o._get_lr(0) == 0.5 and o._get_lr(1) == 1.0
    assert o._get_wd(1) == pytest.approx(0.2)
    data = mx.sym.var("data")
    w = mx.sym.var("fc_weight", lr_mult=3.0, wd_mult=0.0)
    net = mx.sym.FullyConnected(data, weight=w, num_hidden=2, name="fc")
    o = opt.create("sgd", learning_rate=1.0, wd=1.0, sym=net, param_idx2name={0: "fc_weight"})
    assert o._get_lr(0) == 3.0 and o._get_wd(0) == 0.0


def test_num_update_and_begin_num_update():
    o = opt.create("sgd", begin_num_update=10)
    w = mx.nd.ones((2,))
    for _ in range(3):
        o.update(0, w, mx.nd.ones((2,)), None)
    o.update(1, w, mx.nd.ones((2,)), None)
    assert o.num_update == 13 and o._index_update_count == {0: 13, 1: 11}


def test_learning_rate_with_scheduler():
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    o = opt.create("sgd", lr_scheduler=sched)
    assert o.learning_rate == 1.0
    with pytest.raises(UserWarning):
        o.set_learning_rate(0.1)
    o = opt.create("sgd", learning_rate=0.3)
    o.set_learning_rate(0.2)
    assert o.learning_rate == 0.2


def test_create_register_and_unknown_name():
    assert isinstance(mx.optimizer.create("Adam"), mx.optimizer.Adam)

    @mx.optimizer.register
    class MyOpt(mx.optimizer.Optimizer):
        pass

    assert isinstance(mx.optimizer.create("myopt"), MyOpt)
    with pytest.raises(ValueError, match="Cannot find optimizer nope.*adam.*sgd"):
        mx.optimizer.create("nope")


def test_updater_states_pickle_round_trip():
    o = opt.create("adam", learning_rate=0.1)
    upd = opt.get_updater(o)
    w = mx.nd.ones((3,))
    upd(0, mx.nd.ones((3,)), w)
    blob = upd.get_states(dump_optimizer=True)
    states, optim = pickle.loads(blob)
    assert isinstance(optim, opt.Adam) and optim.param_dict == {}
    np.testing.assert_allclose(states[0][0].asnumpy(), upd.states[0][0].asnumpy())
    other = opt.get_updater(opt.create("adam"))
    other.set_states(upd.get_states())
    assert set(other.states) == {0} and other.states_synced == {0: False}
    other.set_states(blob)
    assert other.optimizer.lr == 0.1
