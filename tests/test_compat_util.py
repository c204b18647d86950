"""``mx.util`` (issue 14): the np-shape / np-array switches, their scopes, decorators, threads,
and the top-level and ``npx`` aliases."""

import json
import os
import threading
from pathlib import Path

import ferrograd as mx
import pytest
from ferrograd import npx, util

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "mxnet_compat_names.json").read_text())


@pytest.fixture(autouse=True)
def _reset_switches():
    util.reset_np()
    util.set_np_shape(0)
    yield
    util.reset_np()
    util.set_np_shape(0)


def in_new_thread(fn):
    """``fn()`` run in a fresh thread; its result."""
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_util_has_mxnets_public_switches():
    for name in ["is_np_shape", "set_np_shape", "np_shape", "use_np_shape", "is_np_array",
                 "np_array", "use_np_array", "use_np", "set_np", "reset_np", "getenv", "setenv"]:
        assert name in FIXTURE["util_public"], name  # the fixture is MXNet's list
        assert callable(getattr(util, name)), name


def test_top_level_and_npx_aliases_are_the_util_functions():
    for name in ["np_shape", "use_np_shape", "is_np_shape", "set_np_shape", "np_array",
                 "use_np_array", "is_np_array", "use_np"]:
        assert getattr(mx, name) is getattr(util, name), name
    for name in ["set_np", "reset_np", "is_np_array", "is_np_shape", "use_np"]:
        assert getattr(npx, name) is getattr(util, name), name


def test_set_np_shape_returns_previous_state_and_changes_ops():
    assert util.set_np_shape(True) is False
    assert util.is_np_shape()
    assert mx.nd.ones((2, 3)).sum().shape == ()  # np-shape: a full reduction is 0-d
    assert util.set_np_shape(False) is True
    assert mx.nd.ones((2, 3)).sum().shape == (1,)


def test_set_np_shape_rejects_other_levels():
    with pytest.raises(ValueError, match="0, 1 or 2"):
        util.set_np_shape(3)


def test_np_shape_scope_restores_previous_state_even_on_error():
    with pytest.raises(RuntimeError):
        with util.np_shape(True):
            assert util.is_np_shape()
            raise RuntimeError("inside")
    assert not util.is_np_shape()
    util.set_np_shape(True)
    with util.np_shape(False):
        assert not util.is_np_shape()
    assert util.is_np_shape()


def test_set_np_and_reset_np():
    util.set_np()
    assert (util.is_np_shape(), util.is_np_array()) == (True, True)
    util.set_np(shape=True, array=False)
    assert (util.is_np_shape(), util.is_np_array()) == (True, False)
    util.reset_np()
    assert (util.is_np_shape(), util.is_np_array()) == (False, False)
    with pytest.raises(ValueError, match="NumPy Shape semantics is required"):
        util.set_np(shape=False, array=True)


def test_shape_cannot_be_turned_off_under_array_semantics():
    util.set_np()
    with pytest.raises(ValueError, match="reset_np"):
        util.set_np_shape(False)
    assert util.is_np_shape()


def test_np_array_scope_nests():
    assert not util.is_np_array()
    with util.np_array(True):
        assert util.is_np_array()
        with util.np_array(False):
            assert not util.is_np_array()
        assert util.is_np_array()
    assert not util.is_np_array()


def test_use_np_decorates_functions():
    @util.use_np
    def flags(x):
        return x, util.is_np_shape(), util.is_np_array()

    assert flags(7) == (7, True, True)
    assert (util.is_np_shape(), util.is_np_array()) == (False, False)
    assert flags.__name__ == "flags"

    @util.use_np_shape
    def shape_only():
        return util.is_np_shape(), util.is_np_array()

    assert shape_only() == (True, False)


def test_use_np_decorates_every_method_and_property_of_a_class():
    @util.use_np
    class Model:
        def __init__(self):
            self.seen_at_init = util.is_np_array()

        def method(self):
            return util.is_np_shape()

        @property
        def prop(self):
            return util.is_np_array()

    m = Model()
    assert m.seen_at_init and m.method() and m.prop
    assert not util.is_np_array()


def test_use_np_rejects_non_callables():
    with pytest.raises(TypeError, match="use_np_array"):
        util.use_np(3)


def test_np_array_flag_is_per_thread():
    util.set_np()
    assert util.is_np_array()
    assert in_new_thread(util.is_np_array) is False
    with util.np_array(False):
        assert in_new_thread(lambda: (util.set_np(), util.is_np_array())[1]) is True
        assert not util.is_np_array()  # the other thread's set_np did not leak here


@pytest.mark.parametrize("how", ["set_np_shape(1)", "set_np_shape(2)", "set_np()"])
def test_np_shape_seen_by_a_new_thread_as_in_mxnet(how):
    switch = {"set_np_shape(1)": lambda: util.set_np_shape(1),
              "set_np_shape(2)": lambda: util.set_np_shape(2),
              "set_np()": util.set_np}[how]
    switch()
    got = [util.is_np_shape(), in_new_thread(util.is_np_shape)]
    assert got == FIXTURE["np_shape_threads"][how]  # written by MXNet 1.9.1


def test_np_shape_scope_in_one_thread_is_invisible_to_another():
    entered, release = threading.Event(), threading.Event()

    def worker():
        with util.np_shape(True):
            entered.set()
            release.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    entered.wait(5)
    try:
        assert not util.is_np_shape()
        assert mx.nd.ones((2,)).sum().shape == (1,)
    finally:
        release.set()
        t.join()


def test_global_np_shape_reaches_ops_in_other_threads_and_off_clears_it():
    util.set_np_shape(2)
    assert in_new_thread(lambda: mx.nd.ones((0, 2)).shape) == (0, 2)
    assert in_new_thread(lambda: mx.nd.ones((3,)).sum().shape) == ()
    util.set_np_shape(0)
    assert in_new_thread(util.is_np_shape) is False
    assert not util.is_np_shape()


def test_getenv_and_setenv():
    name = "FERROGRAD_TEST_UTIL_ENV"
    assert util.getenv(name) is None
    util.setenv(name, "7")
    try:
        assert util.getenv(name) == "7" and os.environ[name] == "7"
    finally:
        util.setenv(name, None)
    assert name not in os.environ
