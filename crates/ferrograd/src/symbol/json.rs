//! MXNet's symbol JSON: `tojson` and `load_json`.
//!
//! The writer emits MXNet 1.x's layout (nodes in graph order with `op`, `name`, `attrs`,
//! `inputs` as `[node, output, version]`, then `arg_nodes`, `node_row_ptr`, `heads`, and the
//! `mxnet_version` attribute). The reader also accepts the older `param`/`attr` node keys, so
//! symbol files written by earlier MXNet releases load.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::Value;

use super::{key, NodeOut, SymNode, Symbol};
use crate::error::{Error, Result};
use crate::ops::{control_flow, registry, AttrValue, Attrs, OpRef};

/// The version MXNet 1.9.1 writes; ferrograd's graphs are compatible with it.
const MXNET_VERSION: i64 = 10901;

/// A JSON string literal.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// The symbol as MXNet JSON (pretty-printed as MXNet prints it).
pub fn to_json(sym: &Symbol) -> String {
    write_graph(sym, true)
}

/// A graph's JSON object; `top` adds the version attribute (a control-flow node's subgraphs,
/// stored in its `subgraphs` field, have none, as in MXNet).
fn write_graph(sym: &Symbol, top: bool) -> String {
    let nodes = sym.topo_nodes();
    let ids: HashMap<usize, usize> = nodes.iter().enumerate().map(|(i, n)| (key(n), i)).collect();
    let mut out = String::from("{\n  \"nodes\": [\n");
    for (i, n) in nodes.iter().enumerate() {
        let _ = write!(out, "    {{\n      \"op\": {}, \n      \"name\": {}, \n", quote(n.op_name()), quote(&n.name));
        // MXNet keeps node attributes in a sorted map, so its JSON lists them by key.
        let mut attrs = n.attrs();
        attrs.sort_by(|a, b| a.0.cmp(&b.0));
        if !attrs.is_empty() {
            let kv: Vec<String> = attrs.iter().map(|(k, v)| format!("        {}: {}", quote(k), quote(v))).collect();
            let _ = write!(out, "      \"attrs\": {{\n{}\n      }}, \n", kv.join(", \n"));
        }
        let ins: Vec<String> = n.inputs.iter().map(|o| format!("[{}, {}, 0]", ids[&key(&o.node)], o.index)).collect();
        let _ = write!(out, "      \"inputs\": [{}]", ins.join(", "));
        let subgraphs = n.op.as_ref().map(|op| op.subgraphs()).unwrap_or_default();
        if !subgraphs.is_empty() {
            // Each subgraph object is indented under the node's `subgraphs` list.
            let texts: Vec<String> = subgraphs
                .iter()
                .map(|g| format!("        {}", write_graph(g, false).replace('\n', "\n        ")))
                .collect();
            let _ = write!(out, ", \n      \"subgraphs\": [\n{}\n      ]", texts.join(", \n"));
        }
        out.push_str("\n    }");
        out.push_str(if i + 1 < nodes.len() { ", \n" } else { "\n" });
    }
    let arg_nodes: Vec<String> =
        nodes.iter().enumerate().filter(|(_, n)| n.is_variable()).map(|(i, _)| i.to_string()).collect();
    let mut row_ptr = vec![0usize];
    for n in &nodes {
        row_ptr.push(row_ptr[row_ptr.len() - 1] + n.num_outputs());
    }
    let row_ptr: Vec<String> = row_ptr.iter().map(usize::to_string).collect();
    let heads: Vec<String> = sym.outputs.iter().map(|o| format!("[{}, {}, 0]", ids[&key(&o.node)], o.index)).collect();
    let _ = write!(
        out,
        "  ], \n  \"arg_nodes\": [{}], \n  \"node_row_ptr\": [{}], \n  \"heads\": [{}]",
        arg_nodes.join(", "),
        row_ptr.join(", "),
        heads.join(", ")
    );
    if top {
        let _ = write!(out, ", \n  \"attrs\": {{\"mxnet_version\": [\"int\", {MXNET_VERSION}]}}");
    }
    out.push_str("\n}");
    out
}

fn bad(msg: impl std::fmt::Display) -> Error {
    Error::Value(format!("load_json: {msg}"))
}

/// A node's string attributes, from `attrs` (MXNet ≥ 1.0) or `param`/`attr` (older files).
fn node_attrs(v: &Value) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for field in ["param", "attr", "attrs"] {
        let Some(map) = v.get(field) else { continue };
        let map = map.as_object().ok_or_else(|| bad(format!("node field '{field}' must be an object")))?;
        for (k, val) in map {
            let s = match val {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if !out.iter().any(|(ok, _): &(String, String)| ok == k) {
                out.push((k.clone(), s));
            }
        }
    }
    Ok(out)
}

/// An `[node, output(, version)]` entry.
fn entry(v: &Value, n_nodes: usize, what: &str) -> Result<(usize, usize)> {
    let arr = v
        .as_array()
        .filter(|a| a.len() >= 2)
        .ok_or_else(|| bad(format!("{what}: expected [node, output, version], got {v}")))?;
    let id = arr[0].as_u64().ok_or_else(|| bad(format!("{what}: bad node id {}", arr[0])))? as usize;
    let idx = arr[1].as_u64().ok_or_else(|| bad(format!("{what}: bad output index {}", arr[1])))? as usize;
    if id >= n_nodes {
        return Err(bad(format!("{what}: node {id} does not exist (only {n_nodes} nodes precede it)")));
    }
    Ok((id, idx))
}

/// Names every operator of the graph the registry lacks at once (JSON from a newer MXNet often
/// has several), with the MXNet version that wrote the file when it says.
fn check_known_ops(root: &Value, nodes: &[Value]) -> Result<()> {
    let mut unknown: Vec<(&str, &str)> = Vec::new(); // (op, first node using it)
    for nv in nodes {
        let (Some(op), Some(name)) = (nv.get("op").and_then(Value::as_str), nv.get("name").and_then(Value::as_str))
        else {
            continue;
        };
        let known = registry::lookup(op).is_some() || control_flow::is_control_flow(op);
        if op != "null" && !known && !unknown.iter().any(|&(u, _)| u == op) {
            unknown.push((op, name));
        }
    }
    if unknown.is_empty() {
        return Ok(());
    }
    // MXNet writes its version as `"attrs": {"mxnet_version": ["int", 10901]}`.
    let version = root
        .pointer("/attrs/mxnet_version/1")
        .and_then(Value::as_u64)
        .map(|v| format!(" (the file was written by MXNet {}.{}.{})", v / 10000, v / 100 % 100, v % 100))
        .unwrap_or_default();
    Err(bad(format!(
        "Cannot find operator{} {} in the ferrograd op registry{version}",
        if unknown.len() > 1 { "s" } else { "" },
        unknown.iter().map(|(op, name)| format!("'{op}' (node '{name}')")).collect::<Vec<_>>().join(", ")
    )))
}

/// Parses MXNet symbol JSON.
pub fn from_json(text: &str) -> Result<Symbol> {
    let root: Value = serde_json::from_str(text).map_err(|e| bad(format!("malformed JSON: {e}")))?;
    graph_from_value(&root)
}

/// A control-flow node's op, from its parameters and its `subgraphs` field.
fn control_flow_op(
    op_name: &str,
    name: &str,
    nv: &Value,
    attrs: &[(String, String)],
    n_inputs: usize,
) -> Result<OpRef> {
    let subs = nv
        .get("subgraphs")
        .and_then(Value::as_array)
        .ok_or_else(|| bad(format!("node '{name}' ({op_name}) has no 'subgraphs' list")))?;
    let graphs = subs.iter().map(graph_from_value).collect::<Result<Vec<_>>>()?;
    control_flow::build(op_name, attrs, graphs, n_inputs).map_err(|err| bad(format!("node '{name}': {err}")))
}

/// A graph from its JSON object (the whole file, or a control-flow node's subgraph).
fn graph_from_value(root: &Value) -> Result<Symbol> {
    let nodes_v = root.get("nodes").and_then(Value::as_array).ok_or_else(|| bad("missing the 'nodes' list"))?;
    check_known_ops(root, nodes_v)?;
    let mut nodes: Vec<Arc<SymNode>> = Vec::with_capacity(nodes_v.len());
    for (i, nv) in nodes_v.iter().enumerate() {
        let op_name = nv.get("op").and_then(Value::as_str).ok_or_else(|| bad(format!("node {i} has no 'op'")))?;
        let name = nv.get("name").and_then(Value::as_str).ok_or_else(|| bad(format!("node {i} has no 'name'")))?;
        let attrs = node_attrs(nv)?;
        let mut inputs = Vec::new();
        for inp in nv.get("inputs").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
            let (id, index) = entry(inp, i, &format!("node {i} ({name}) input"))?;
            let src = &nodes[id];
            if index >= src.num_outputs() {
                return Err(bad(format!(
                    "node {i} ({name}) reads output {index} of '{}', which has {}",
                    src.name,
                    src.num_outputs()
                )));
            }
            inputs.push(NodeOut { node: src.clone(), index });
        }
        let op = if op_name == "null" {
            None
        } else if control_flow::is_control_flow(op_name) {
            Some(control_flow_op(op_name, name, nv, &attrs, inputs.len())?)
        } else {
            let e = registry::lookup(op_name).ok_or_else(|| {
                bad(format!("Cannot find operator '{op_name}' (node '{name}') in the ferrograd op registry"))
            })?;
            let mut a = Attrs::new(e.name);
            let declared = e.param_names();
            for (k, v) in &attrs {
                if declared.contains(&k.as_str()) {
                    a.items.push((k.clone(), AttrValue::Str(v.clone())));
                }
            }
            let op = registry::create(e.name, &a).map_err(|err| bad(format!("node '{name}': {err}")))?;
            crate::ops::check_arity(op.as_ref(), inputs.len()).map_err(|err| bad(format!("node '{name}': {err}")))?;
            Some(op)
        };
        nodes.push(Arc::new(SymNode { op, name: name.to_string(), attrs: RwLock::new(attrs), inputs }));
    }
    let heads = root.get("heads").and_then(Value::as_array).ok_or_else(|| bad("missing the 'heads' list"))?;
    let mut outputs = Vec::with_capacity(heads.len());
    for h in heads {
        let (id, index) = entry(h, nodes.len(), "head")?;
        if index >= nodes[id].num_visible_outputs() {
            return Err(bad(format!(
                "head reads output {index} of '{}', which has {}",
                nodes[id].name,
                nodes[id].num_visible_outputs()
            )));
        }
        outputs.push(NodeOut { node: nodes[id].clone(), index });
    }
    if outputs.is_empty() {
        return Err(bad("the graph has no heads"));
    }
    Ok(Symbol { outputs })
}
