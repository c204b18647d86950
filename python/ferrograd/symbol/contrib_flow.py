"""Symbolic control flow of ``mx.sym.contrib``: ``foreach``, ``while_loop`` and ``cond``.

Each call runs the user's Python function once, on placeholder variables, inside an attribute
scope that marks every node it creates with ``__subgraph_name__``. The marked nodes form the
body graph; values the body reads from the enclosing graph are cut out of it and become inputs
of one ``_foreach`` / ``_while_loop`` / ``_cond`` node, which holds the body (MXNet's subgraph
operators). Binding, inference, gradients and JSON then work on that node like on any other.
"""

from collections import Counter

from .. import attribute
from .. import name as _name
from .._ferrograd import _sym_control_flow, _sym_cut_subgraph
from .symbol import Group, Symbol, _scoped_attrs, var

# How many bodies of each scope name were built (MXNet numbers them per name: foreach0, ...).
_SCOPE_COUNTS = Counter()


def _flatten(value, what):
    """``(flat list of Symbols, format)`` of a Symbol or a nested list/tuple of Symbols; the
    format (0 for a single Symbol, else a list of formats) rebuilds the nesting. A symbol of
    several outputs (a ``Group``, ``split``) counts as the list of its outputs."""
    if isinstance(value, Symbol):
        if len(value) == 1:
            return [value], 0
        value = list(value)
    if not isinstance(value, (list, tuple)):
        raise AssertionError(f"{what} must be (nested) list of Symbol, but got {value!r} of type "
                             f"{type(value)}")
    flat, fmt = [], []
    for item in value:
        leaves, f = _flatten(item, what)
        flat.extend(leaves)
        fmt.append(f)
    return flat, fmt


def _regroup(flat, fmt):
    """The nesting ``fmt`` describes, filled from ``flat``; returns (value, what is left)."""
    if fmt == 0:
        return flat[0], flat[1:]
    out = []
    for f in fmt:
        item, flat = _regroup(flat, f)
        out.append(item)
    return out, flat


def _count(fmt):
    return 1 if fmt == 0 else sum(_count(f) for f in fmt)


def _unique_scope(name):
    """The body's ``__subgraph_name__``: ``name`` numbered, under the enclosing body's name
    (``outer0$inner0``) when bodies nest."""
    outer = attribute.current().get(None).get("__subgraph_name__", "")
    if outer:
        name = f"{outer}${name}"
    _SCOPE_COUNTS[name] += 1
    return f"{name}{_SCOPE_COUNTS[name] - 1}"


def _output_index(sym):
    """Which output of its node a single-output symbol is (0 for a variable)."""
    out = sym.list_outputs()[0]
    head = f"{sym.name}_output"
    return int(out[len(head):]) if out.startswith(head) and out != head else 0


def _placeholder(sym):
    """The body's stand-in for an outer value: ``<node name>-<output index>``, as MXNet names
    it (so it cannot clash with a variable the body closes over)."""
    return var(f"{sym.name}-{_output_index(sym)}")


def _body_graph(outputs, scope):
    """The group of the body's outputs, each one a distinct node made inside the body: an
    output that is an input, an outer value or a repeat gets an ``identity`` of its own."""
    from . import identity
    inputs = set(Group(outputs).list_inputs()) if outputs else set()
    seen, heads = set(), []
    for o in outputs:
        made_here = o.attr("__subgraph_name__") == scope
        if o.name in inputs or not made_here or o.name in seen:
            with attribute.AttrScope(__subgraph_name__=scope):
                o = identity(o)
        seen.add(o.name)
        heads.append(o)
    return Group(heads)


def _cut(graph, scope, op):
    """The body cut from its enclosing graph, and ``[(input name, outer value)]`` per body
    input in ``list_inputs()`` order."""
    handle, feeds = _sym_cut_subgraph(graph.handle, scope)
    body = Symbol(handle)
    names = [n for n, _ in feeds]
    if len(set(names)) != len(names):
        raise ValueError(f"{op}: the inputs of the subgraph don't have unique names: {names}")
    return body, [(n, Symbol(s)) for n, s in feeds]


def _node(op, subgraphs, params, inputs, hint):
    name = _name.current().get(None, hint)
    params = [(k, str(v)) for k, v in params.items()]
    handle = _sym_control_flow(op, [g.handle for g in subgraphs], params,
                               [s.handle for s in inputs], name,
                               list(_scoped_attrs(None).items()))
    return Symbol(handle)


def _locs(v):
    return "[" + ", ".join(str(int(i)) for i in v) + "]"


def foreach(body, data, init_states, name="foreach"):
    """Runs ``body(data_slice, states) -> (outputs, new_states)`` over axis 0 of ``data`` as one
    ``_foreach`` node. ``data`` is a Symbol or a (nested) list of Symbols of one length along
    axis 0; ``init_states`` a Symbol or a (nested) list. Returns ``(outputs, states)``: every
    step's outputs stacked on a new axis 0 and the last step's states, each with the nesting
    ``body`` and ``init_states`` gave them (a single Symbol stays single).

    The body may read any symbol of the enclosing graph (weights, values computed outside); those
    become inputs of the node and receive gradients. Every data and state input must be used.
    """
    flat_data, data_fmt = _flatten(data, "foreach input")
    flat_states, state_fmt = _flatten(init_states, "foreach states")
    scope = _unique_scope(name)
    with attribute.AttrScope(__subgraph_name__=scope):
        data_vars = [_placeholder(s) for s in flat_data]
        state_vars = [_placeholder(s) for s in flat_states]
        result = body(_regroup(data_vars, data_fmt)[0], _regroup(state_vars, state_fmt)[0])
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            raise ValueError("foreach: body must return a pair (outputs, new_states), got "
                             f"{type(result).__name__}")
        outs, out_fmt = _flatten(result[0], "foreach output")
        new_states, new_fmt = _flatten(result[1], "foreach loop_vars")
        if new_fmt != state_fmt:
            raise AssertionError("The input and output loop_vars have different format: foreach's "
                                 f"body returned {_count(new_fmt)} states structured {new_fmt} for "
                                 f"init_states structured {state_fmt}")
    graph, feeds = _cut(_body_graph(outs + new_states, scope), scope, "foreach")
    names = [n for n, _ in feeds]
    data_names = [v.name for v in data_vars]
    state_names = [v.name for v in state_vars]
    for what, wanted in (("data", data_names), ("state", state_names)):
        for n in wanted:
            if n not in names:
                raise AssertionError(f"the {what} arrays have to be used in the loop body "
                                     f"(foreach: '{n}' is not)")
    special = set(data_names) | set(state_names)
    remain = [(i, s) for i, (n, s) in enumerate(feeds) if n not in special]
    params = {"in_data_locs": _locs(names.index(n) for n in data_names),
              "in_state_locs": _locs(names.index(n) for n in state_names),
              "remain_locs": _locs(i for i, _ in remain),
              "num_out_data": len(outs), "num_outputs": len(outs) + len(new_states)}
    inputs = flat_data + flat_states + [s for _, s in remain]
    node = _node("_foreach", [graph], params, inputs, "_foreach")
    results = list(node) if len(node) > 1 else [node]
    out_syms = results[:len(outs)]
    outputs = _regroup(out_syms, out_fmt)[0] if out_fmt != [] else []
    return outputs, _regroup(results[len(outs):], state_fmt)[0]


def _union(graph_feeds, placeholders):
    """The node inputs several bodies share: loop variables (``placeholders`` maps a placeholder
    name to its outer symbol) once each, other inputs once per name, in order of first use; and
    per body the node input feeding each of its inputs."""
    inputs, where, locs = [], {}, []
    for feeds in graph_feeds:
        body_locs = []
        for n, s in feeds:
            if n not in where:
                where[n] = len(inputs)
                inputs.append(placeholders.get(n, s))
            body_locs.append(where[n])
        locs.append(body_locs)
    return inputs, locs


def _build_body(fn, args, scope_name):
    """Runs ``fn(placeholders)`` in a fresh body scope: (scope, result)."""
    scope = _unique_scope(scope_name)
    with attribute.AttrScope(__subgraph_name__=scope):
        return scope, fn([_placeholder(a) for a in args])


def while_loop(cond, func, loop_vars, max_iterations=None, name="while_loop"):
    """Runs ``func(*loop_vars) -> (step_outputs, new_loop_vars)`` while ``cond(*loop_vars)``
    holds, at most ``max_iterations`` times, as one ``_while_loop`` node. Returns
    ``(outputs, loop_vars)``: the step outputs stacked on a new axis 0 and padded with zeros to
    ``max_iterations`` rows (MXNet leaves the padding uninitialised), and the final loop
    variables, with the nesting ``func`` and ``loop_vars`` gave them. ``func`` may return
    ``None`` (or ``[]``) for no step outputs."""
    flat_vars, var_fmt = _flatten(loop_vars, "while loop_vars")
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    try:
        max_iterations = int(max_iterations.asscalar() if hasattr(max_iterations, "asscalar")
                             else max_iterations)
    except (TypeError, ValueError):
        raise ValueError(f"Cannot convert max_iteration to python int, got {max_iterations!r}") \
            from None
    if max_iterations < 0:
        raise ValueError(f"while_loop: max_iterations must be >= 0, got {max_iterations}")
    if not flat_vars:
        raise ValueError("loop_vars should contain at least one element")

    def grouped(placeholders):
        return _regroup(placeholders, var_fmt)[0] if var_fmt != 0 else [placeholders[0]]

    def run_cond(placeholders):
        result = cond(*grouped(placeholders))
        if not isinstance(result, Symbol):
            raise ValueError("Return of cond must be a Symbol")
        return [result]

    def run_func(placeholders):
        result = func(*grouped(placeholders))
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            raise ValueError("while_loop: func must return a pair (step_outputs, new_loop_vars)")
        step, new = ([] if r is None else list(r) if isinstance(r, tuple) else r for r in result)
        step, step_fmt = _flatten(step, "while output")
        new, _ = _flatten(new, "while loop_vars")
        if len(new) != len(flat_vars):
            raise ValueError("The number of loop_vars should be consistent during the loop: "
                             f"while_loop's func returned {len(new)} for {len(flat_vars)}")
        return step, new, step_fmt

    cond_scope, cond_out = _build_body(run_cond, flat_vars, name + "_cond")
    with attribute.AttrScope(__subgraph_name__=cond_scope):
        cond_graph = _body_graph(cond_out, cond_scope)
    func_scope, (step, new, step_fmt) = _build_body(run_func, flat_vars, name + "_func")
    with attribute.AttrScope(__subgraph_name__=func_scope):
        func_graph = _body_graph(step + new, func_scope)
    cond_graph, cond_feeds = _cut(cond_graph, cond_scope, "while_loop")
    func_graph, func_feeds = _cut(func_graph, func_scope, "while_loop")
    placeholders = {f"{s.name}-{_output_index(s)}": s for s in flat_vars}
    inputs, (cond_locs, func_locs) = _union([cond_feeds, func_feeds], placeholders)
    func_names = [n for n, _ in func_feeds]
    var_locs = []
    for i, n in enumerate(placeholders, 1):
        if n not in func_names:
            raise ValueError(f"The {i}-th loop_var doesn't involve into the computation "
                             f"(while_loop: '{n}' is not used by func)")
        var_locs.append(func_names.index(n))
    params = {"cond_input_locs": _locs(cond_locs), "func_input_locs": _locs(func_locs),
              "func_var_locs": _locs(var_locs), "max_iterations": max_iterations,
              "num_out_data": len(step), "num_outputs": len(step) + len(new)}
    node = _node("_while_loop", [cond_graph, func_graph], params, inputs, "_while_loop")
    results = list(node) if len(node) > 1 else [node]
    outputs = _regroup(results[:len(step)], step_fmt)[0] if step_fmt != [] else []
    return outputs, _regroup(results[len(step):], var_fmt)[0]


def cond(pred, then_func, else_func, name="cond"):
    """``then_func()`` if ``pred`` (a one-element Symbol) is nonzero, else ``else_func()``, as one
    ``_cond`` node: only the chosen branch runs. Both branches must return the same number of
    outputs, of the same shapes; the result has ``then_func``'s nesting."""
    if not isinstance(pred, Symbol) or len(pred) != 1:
        raise ValueError("pred should always be a single output")

    def branch(fn, scope_name):
        scope = _unique_scope(scope_name)
        with attribute.AttrScope(__subgraph_name__=scope):
            outs, fmt = _flatten(fn(), f"cond: {scope_name} output")
            graph = _body_graph(outs, scope)
        return _cut(graph, scope, "cond") + (fmt,)

    pred_graph, pred_feeds, _ = branch(lambda: pred, name + "_pred")
    then_graph, then_feeds, then_fmt = branch(then_func, name + "_then")
    else_graph, else_feeds, else_fmt = branch(else_func, name + "_else")
    n_then, n_else = len(then_graph), len(else_graph)
    if n_then != n_else:
        raise ValueError("Number of outputs differs between then-branch and else-branch "
                         f"(cond: {n_then} and {n_else})")
    inputs, (pred_locs, then_locs, else_locs) = _union([pred_feeds, then_feeds, else_feeds], {})
    params = {"cond_input_locs": _locs(pred_locs), "then_input_locs": _locs(then_locs),
              "else_input_locs": _locs(else_locs), "num_outputs": n_then}
    node = _node("_cond", [pred_graph, then_graph, else_graph], params, inputs, "_cond")
    results = list(node) if len(node) > 1 else [node]
    return _regroup(results, then_fmt)[0]
