"""mx.profiler: per-operator timing of imperative calls, executors and user events."""

import json

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.base import MXNetError


@pytest.fixture(autouse=True)
def _stopped_profiler():
    mx.profiler.set_state("stop")
    mx.profiler.dumps(reset=True)
    yield
    mx.profiler.set_state("stop")
    mx.profiler.set_config(profile_all=False, aggregate_stats=False, filename="profile.json")
    mx.profiler.dumps(reset=True)


def _operator_counts():
    stats = json.loads(mx.profiler.dumps(format="json"))
    return {name: row["Count"] for name, row in stats["Time"].get("operator", {}).items()}


def test_counts_imperative_calls_only_while_running():
    a = mx.nd.ones((4, 4))
    mx.nd.relu(a)  # before set_state('run'): not recorded
    mx.profiler.set_config(profile_all=True, aggregate_stats=True)
    mx.profiler.set_state("run")
    b = mx.nd.dot(a, a)
    for _ in range(3):
        b = mx.nd.relu(b)
    mx.profiler.set_state("stop")
    mx.nd.relu(b)  # after stop: not recorded
    counts = _operator_counts()
    assert counts["dot"] == 1
    assert counts["relu"] == 3


def test_pause_and_resume_skip_the_paused_calls():
    a = mx.nd.ones((3,))
    mx.profiler.set_state("run")
    mx.nd.exp(a)
    mx.profiler.pause()
    mx.nd.exp(a)
    mx.profiler.resume()
    mx.nd.exp(a)
    mx.profiler.set_state("stop")
    assert _operator_counts()["exp"] == 2


def test_executor_forward_and_backward_ops_are_timed():
    x = mx.sym.var("x")
    y = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    exe = y.simple_bind(mx.cpu(), x=(2, 5))
    mx.profiler.set_state("run")
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 3)))
    mx.profiler.set_state("stop")
    counts = _operator_counts()
    assert counts["FullyConnected"] == 1
    assert any(name != "FullyConnected" for name in counts)  # the backward step(s)


def test_table_has_one_row_per_operator_with_consistent_figures():
    a = mx.nd.ones((8, 8))
    mx.profiler.set_state("run")
    for _ in range(4):
        mx.nd.sqrt(a)
    mx.profiler.set_state("stop")
    stats = json.loads(mx.profiler.dumps(format="json"))["Time"]["operator"]["sqrt"]
    assert stats["Count"] == 4
    assert stats["Min"] <= stats["Avg"] <= stats["Max"] <= stats["Total"] + 1e-9
    assert abs(stats["Avg"] * 4 - stats["Total"]) < 1e-3
    table = mx.profiler.dumps()
    assert "Profile Statistics:" in table and "operator" in table
    row = next(line for line in table.splitlines() if line.startswith("sqrt"))
    assert row.split()[1] == "4"


def test_reset_clears_the_events():
    mx.profiler.set_state("run")
    mx.nd.ones((2,)).exp()
    mx.profiler.set_state("stop")
    assert "exp" in _operator_counts()
    mx.profiler.dumps(reset=True)
    assert _operator_counts() == {}


def test_sort_by_count_ascending():
    a = mx.nd.ones((2,))
    mx.profiler.set_state("run")
    mx.nd.exp(a)
    for _ in range(3):
        mx.nd.sin(a)
    mx.profiler.set_state("stop")
    table = mx.profiler.dumps(sort_by="count", ascending=True)
    names = [line.split()[0] for line in table.splitlines() if line.startswith(("exp", "sin"))]
    assert names == ["exp", "sin"]


def test_user_tasks_frames_and_markers_reach_the_trace(tmp_path):
    fname = str(tmp_path / "trace.json")
    mx.profiler.set_config(profile_all=True, filename=fname)
    domain = mx.profiler.Domain("train")
    mx.profiler.set_state("run")
    task = mx.profiler.Task(domain, "step")
    task.start()
    mx.nd.ones((3, 3)).exp()
    task.stop()
    with mx.profiler.Frame(domain, "epoch"):
        pass
    mx.profiler.Marker(domain, "checkpoint").mark()
    counter = mx.profiler.Counter(domain, "samples", 0)
    counter += 32
    mx.profiler.set_state("stop")
    mx.profiler.dump()
    with open(fname) as f:
        trace = json.load(f)["traceEvents"]
    by_name = {e["name"]: e for e in trace}
    assert by_name["step"]["cat"] == "train" and by_name["step"]["ph"] == "X"
    assert by_name["step"]["dur"] >= by_name["exp"]["dur"]
    assert by_name["step"]["ts"] <= by_name["exp"]["ts"]
    assert by_name["checkpoint"]["ph"] == "i"
    assert [e["args"]["samples"] for e in trace if e["name"] == "samples"] == [0, 32]
    stats = json.loads(mx.profiler.dumps(format="json"))["Time"]
    assert stats["train"]["step"]["Count"] == 1 and stats["train"]["epoch"]["Count"] == 1
    assert "checkpoint" not in stats["train"]


def test_bad_arguments_raise_naming_the_parameter():
    with pytest.raises(MXNetError, match="profile_everything"):
        mx.profiler.set_config(profile_everything=True)
    with pytest.raises(MXNetError, match="'run' or 'stop'"):
        mx.profiler.set_state("go")
    with pytest.raises(MXNetError, match="sort_by"):
        mx.profiler.dumps(sort_by="median")
    with pytest.raises(MXNetError, match="format"):
        mx.profiler.dumps(format="xml")
    with pytest.raises(MXNetError, match="before it was started"):
        mx.profiler.Event("e").stop()


def test_profiling_does_not_change_results():
    a = mx.nd.array(np.arange(6.0).reshape(2, 3))
    want = mx.nd.softmax(a).asnumpy()
    mx.profiler.set_state("run")
    got = mx.nd.softmax(a).asnumpy()
    mx.profiler.set_state("stop")
    np.testing.assert_array_equal(got, want)
