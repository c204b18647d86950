"""Op declarations against MXNet 1.9.1's own: ``fixtures/mxnet_op_params.json`` was written by
MXNet (``fixtures/gen_mxnet_op_params.py``). Every parameter MXNet declares for an op ferrograd
registers is declared here too, required where MXNet requires it, with MXNet's default otherwise,
except the deliberate differences listed below (each is in docs/mxnet-users.md).
"""

import ast
import json
import math
import re
from pathlib import Path

import pytest
from ferrograd.ndarray._registry import specs

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "mxnet_op_params.json").read_text())
SCALAR_OPS = {s.name for s in specs() if s.name.endswith("_scalar")}

# (op, parameter) -> why ferrograd differs.
DIFFERENT = {
    **{(op, "scalar"): "required (MXNet's front ends always pass it)" for op in SCALAR_OPS},
    ("slice_axis", "end"): "more lenient: defaults to None (to the end)",
    ("Concat", "num_args"): "more lenient: filled in from the inputs",
    ("stack", "num_args"): "more lenient: filled in from the inputs",
    ("UpSampling", "num_args"): "more lenient: one input by default",
    ("Crop", "num_args"): "more lenient: filled in from the inputs",
    ("Crop", "data"): "an input (MXNet lists its variadic inputs as a parameter)",
    ("Reshape", "shape"): "required: MXNet's empty default reshapes to nothing useful",
    ("broadcast_to", "shape"): "required, as above",
    ("Reshape", "target_shape"): "deprecated in MXNet, not provided",
    ("Reshape", "keep_highest"): "deprecated in MXNet, not provided",
    ("norm", "out_dtype"): "not provided (the output keeps the input's dtype)",
    ("smooth_l1", "scalar"): "MXNet documents no default; ferrograd's is 1.0",
}


def mxnet_default(text):
    """``("required", None)`` or ``("default", value)`` from MXNet's type text."""
    if text.endswith("required") or "default=" not in text:
        return "required", None
    kind, raw = text.split(",")[0], text.split("default=", 1)[1].strip("'")
    if raw == "None":
        return "default", None
    if kind.startswith("boolean"):
        return "default", raw in ("1", "True", "true")
    if kind.startswith("Shape"):
        return "default", tuple(int(d) for d in re.findall(r"-?\d+", raw))
    if kind.startswith("{"):
        return "default", raw
    try:
        return "default", ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return "default", raw


def same(ours, theirs):
    if isinstance(ours, list):
        ours = tuple(ours)
    if ours is None and theirs == ():  # an empty shape and None both mean "not given"
        return True
    numbers = (int, float)
    if (isinstance(ours, numbers) and isinstance(theirs, numbers)
            and not isinstance(ours, bool) and not isinstance(theirs, bool)):
        return math.isclose(ours, theirs, rel_tol=1e-6)  # MXNet prints float32 values
    return ours == theirs


def public_specs():
    return [s for s in specs() if s.name in FIXTURE and not s.name.startswith("_backward_")]


def test_the_fixture_covers_the_operator_library():
    assert len(public_specs()) > 150
    assert FIXTURE["LeakyReLU"]["slope"] == "float, optional, default=0.25"


@pytest.mark.parametrize("spec", public_specs(), ids=lambda s: s.name)
def test_parameters_match_mxnet(spec):
    ours = {p.name: p for p in spec.params}
    problems = []
    for name, text in FIXTURE[spec.name].items():
        if (spec.name, name) in DIFFERENT:
            continue
        p = ours.get(name)
        if p is None:
            problems.append(f"{name}: declared by MXNet ({text}), missing here")
            continue
        kind, default = mxnet_default(text)
        if kind == "required" and not p.required:
            problems.append(f"{name}: required in MXNet, defaults to {p.default!r} here")
        elif kind == "default" and p.required:
            problems.append(f"{name}: MXNet's default is {default!r}, required here")
        elif kind == "default" and not same(p.default, default):
            problems.append(f"{name}: MXNet's default is {default!r}, here {p.default!r}")
    assert not problems, f"{spec.name}: " + "; ".join(problems)


def test_choices_include_mxnets_runnable_values():
    leaky = {p.name: p for p in next(s for s in specs() if s.name == "LeakyReLU").params}
    assert set(leaky["act_type"].choices) == {"elu", "gelu", "leaky", "prelu", "rrelu", "selu"}
    pool = {p.name: p for p in next(s for s in specs() if s.name == "Pooling").params}
    assert set(pool["pool_type"].choices) == {"avg", "lp", "max", "sum"}
