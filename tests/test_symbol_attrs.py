"""Symbol attributes: AttrScope (per thread, keys as given), MXNet's hidden keys (``lr_mult``,
``ctx_group``, ... stored as ``__key__`` and listed under both names), op keywords, JSON order.
Expected dicts were checked against MXNet 1.9.1."""

import json
import pickle
import threading
import warnings

import ferrograd as mx
import pytest

sym = mx.sym


def test_attr_scope_is_exported_at_top_level_and_nests():
    assert mx.AttrScope is mx.attribute.AttrScope
    with mx.AttrScope(ctx_group="dev1"):
        with mx.AttrScope(mood="calm"):
            x = sym.var("x")
        y = sym.var("y", attr={"mood": "sad"})
    assert x.list_attr() == {"mood": "calm", "__ctx_group__": "dev1", "ctx_group": "dev1"}
    assert y.list_attr() == {"mood": "sad", "__ctx_group__": "dev1", "ctx_group": "dev1"}
    assert sym.var("z").list_attr() == {}


def test_scope_keeps_keys_as_given():
    scope = mx.AttrScope(group="4", __data__="great")
    assert scope._attr == {"group": "4", "__data__": "great"}
    with pytest.raises(ValueError, match="Attributes need to be string"):
        mx.AttrScope(group=4)


def test_hidden_keys_from_attr_and_keywords():
    with mx.AttrScope(group="4"):
        d = sym.var("data", attr={"dtype": "data", "group": "1", "force_mirroring": "True"},
                    lr_mult=1)
    assert d.list_attr() == {"dtype": "data", "group": "1", "__force_mirroring__": "True",
                             "force_mirroring": "True", "__lr_mult__": "1", "lr_mult": "1"}
    r = sym.relu(sym.var("z"), attr={"__a__": "1", "b": "2"})
    assert r.list_attr() == {"__a__": "1", "b": "2"}


def test_op_keyword_lr_mult_is_an_attribute_copied_to_created_weights():
    data = sym.var("data", attr={"mood": "angry"})
    conv = sym.Convolution(data=data, name="conv", kernel=(1, 1), num_filter=1,
                           attr={"__mood__": "so so"}, lr_mult=1)
    attrs = conv.attr_dict()
    assert attrs["data"] == {"mood": "angry"}
    for node in ("conv", "conv_weight", "conv_bias"):
        assert attrs[node]["__lr_mult__"] == "1"
        assert attrs[node]["lr_mult"] == "1"
        assert attrs[node]["__mood__"] == "so so"
    assert conv.attr("kernel") == "(1, 1)"
    with pytest.raises(mx.MXNetError, match="foo"):
        sym.Convolution(data=data, kernel=(1, 1), num_filter=1, foo=3)


def test_set_attr_stores_hidden_keys_in_dunder_form():
    a = sym.var("a")
    a._set_attr(lr_mult="2", ctx_group="g")
    assert a.list_attr() == {"__lr_mult__": "2", "lr_mult": "2", "__ctx_group__": "g",
                             "ctx_group": "g"}


def test_json_lists_node_attributes_sorted_and_pickle_round_trips():
    conv = sym.Convolution(sym.var("x"), num_filter=32, kernel=(3, 3), stride=(2, 2),
                           name="c", wd_mult=0.5)
    node = json.loads(conv.tojson())["nodes"][-1]
    assert list(node["attrs"]) == ["__wd_mult__", "kernel", "num_filter", "stride"]
    assert pickle.loads(pickle.dumps(conv)).tojson() == conv.tojson()


def test_scopes_are_per_thread():
    seen = {}

    def worker():
        with mx.AttrScope(x="thread"):
            seen["inside"] = dict(mx.attribute.current()._attr)
        seen["after"] = dict(mx.attribute.current()._attr)

    with mx.AttrScope(x="main"):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert mx.attribute.current()._attr == {"x": "main"}
    assert seen == {"inside": {"x": "thread"}, "after": {}}


def test_deprecated_current_property_is_per_thread():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        mx.AttrScope.current = mx.AttrScope(y="hi")
        box = []
        t = threading.Thread(target=lambda: box.append(mx.AttrScope.current._attr))
        t.start()
        t.join()
        assert box == [{}]
        assert mx.AttrScope.current._attr == {"y": "hi"}
        mx.AttrScope.current = mx.AttrScope()
