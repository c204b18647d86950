//! Shape and dtype inference over a symbol, without data.
//!
//! Shapes flow forward through each op's `infer`, and backward into free variables through its
//! `infer_missing` (a `FullyConnected` weight from its data and `num_hidden`), repeated until
//! nothing changes. A variable without a given dtype takes the dtype of the op's other inputs
//! (float32 when nothing says otherwise), as MXNet's type inference does.

use std::collections::HashMap;
use std::sync::Arc;

use super::{key, SymNode, Symbol};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::Meta;

/// What the caller knows about the variables, by name.
#[derive(Clone, Debug, Default)]
pub struct Known {
    pub shapes: HashMap<String, Vec<usize>>,
    pub dtypes: HashMap<String, DType>,
}

/// Inference results, in `list_arguments()`, `list_outputs()` and `list_auxiliary_states()`
/// order (`None` = could not be decided).
#[derive(Clone, Debug, Default)]
pub struct Inferred {
    pub args: Vec<Option<Meta>>,
    pub outputs: Vec<Option<Meta>>,
    pub aux: Vec<Option<Meta>>,
    /// Per node (by key): the metas of all its outputs, hidden ones included.
    pub(crate) nodes: HashMap<usize, Vec<Option<Meta>>>,
}

/// MXNet's `__shape__` text, `(2, 3)`; `None` when absent or when a dimension is 0 (unknown in
/// MXNet's legacy shape semantics).
fn shape_attr(n: &SymNode) -> Option<Vec<usize>> {
    let s = n.attr("__shape__")?;
    let dims: Option<Vec<usize>> = s
        .trim_matches(|c| c == '(' || c == ')' || c == '[' || c == ']')
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().ok())
        .collect();
    dims.filter(|d| !d.contains(&0))
}

fn dtype_attr(n: &SymNode) -> Option<DType> {
    let s = n.attr("__dtype__")?;
    s.parse::<i32>().ok().and_then(|id| DType::from_mx_type_id(id).ok()).or_else(|| DType::from_name(&s).ok())
}

struct Var {
    shape: Option<Vec<usize>>,
    dtype: Option<DType>,
    /// Whether the shape was given (by the caller or an attribute) rather than inferred.
    given: bool,
}

/// Prefixes an error with MXNet's `Error in operator <node>: `.
pub(crate) fn in_operator(name: &str, e: Error) -> Error {
    let wrap = |m: String| format!("Error in operator {name}: {m}");
    match e {
        Error::Shape(m) => Error::Shape(wrap(m)),
        Error::DType(m) => Error::DType(wrap(m)),
        Error::Type(m) => Error::Type(wrap(m)),
        Error::Index(m) => Error::Index(wrap(m)),
        Error::Value(m) => Error::Value(wrap(m)),
        Error::Runtime(m) => Error::Runtime(wrap(m)),
    }
}

/// MXNet's shape text in messages: `[9,4]`.
fn bracket(shape: &[usize]) -> String {
    format!("[{}]", shape.iter().map(usize::to_string).collect::<Vec<_>>().join(","))
}

/// Infers every shape and dtype it can. Errors (inconsistent shapes, ops rejecting their inputs)
/// name the operator.
pub fn infer(sym: &Symbol, known: &Known) -> Result<Inferred> {
    let nodes = sym.topo_nodes();
    let mut vars: HashMap<usize, Var> = HashMap::new();
    for n in nodes.iter().filter(|n| n.is_variable()) {
        let shape = known.shapes.get(&n.name).cloned().or_else(|| shape_attr(n));
        let dtype = known.dtypes.get(&n.name).copied().or_else(|| dtype_attr(n));
        vars.insert(key(n), Var { given: shape.is_some(), shape, dtype });
    }
    let mut outs: HashMap<usize, Vec<Option<Meta>>> = HashMap::new();
    loop {
        let mut progress = false;
        for n in nodes.iter().filter(|n| !n.is_variable()) {
            if outs.get(&key(n)).is_some_and(|o| o.iter().all(Option::is_some)) {
                continue;
            }
            progress |= infer_node(n, &mut vars, &mut outs)?;
        }
        if !progress {
            break;
        }
    }
    for n in &nodes {
        if let Some(v) = vars.get(&key(n)) {
            let meta = v.shape.as_ref().map(|s| Meta::new(s, v.dtype.unwrap_or(DType::F32)));
            outs.insert(key(n), vec![meta]);
        }
    }
    let (args, aux) = sym.variables();
    let meta_of = |n: &Arc<SymNode>, i: usize| outs.get(&key(n)).and_then(|o| o.get(i).cloned().flatten());
    Ok(Inferred {
        args: args.iter().map(|n| meta_of(n, 0)).collect(),
        aux: aux.iter().map(|n| meta_of(n, 0)).collect(),
        outputs: sym.outputs.iter().map(|o| meta_of(&o.node, o.index)).collect(),
        nodes: outs,
    })
}

/// One pass over an op node; true when something new was learnt.
fn infer_node(
    n: &Arc<SymNode>,
    vars: &mut HashMap<usize, Var>,
    outs: &mut HashMap<usize, Vec<Option<Meta>>>,
) -> Result<bool> {
    let Some(op) = &n.op else { return Ok(false) };
    // The dtype a variable without one takes: that of the first input that has one.
    let sibling_dtype = n.inputs.iter().find_map(|i| match vars.get(&key(&i.node)) {
        Some(v) => v.dtype,
        None => outs.get(&key(&i.node)).and_then(|o| o.get(i.index).cloned().flatten()).map(|m| m.dtype),
    });
    let mut metas: Vec<Option<Meta>> = n
        .inputs
        .iter()
        .map(|i| match vars.get(&key(&i.node)) {
            Some(v) => v.shape.as_ref().map(|s| Meta::new(s, v.dtype.or(sibling_dtype).unwrap_or(DType::F32))),
            None => outs.get(&key(&i.node)).and_then(|o| o.get(i.index).cloned().flatten()),
        })
        .collect();
    let mut progress = false;
    for (i, sug) in op.infer_missing(&metas).into_iter().enumerate() {
        let (Some(sug), Some(inp)) = (sug, n.inputs.get(i)) else { continue };
        let Some(var) = vars.get_mut(&key(&inp.node)) else { continue };
        match &var.shape {
            Some(s) if var.given && s.as_slice() != sug.shape.as_slice() => {
                return Err(Error::Shape(format!(
                    "Error in operator {}: Shape inconsistent, Provided = {}, inferred shape={} (argument '{}')",
                    n.name,
                    bracket(s),
                    fmt_shape(&sug.shape),
                    inp.node.name
                )));
            }
            Some(_) => {}
            None => {
                var.shape = Some(sug.shape.to_vec());
                var.dtype = var.dtype.or(Some(sug.dtype));
                metas[i] = Some(Meta::new(&sug.shape, var.dtype.unwrap_or(sug.dtype)));
                progress = true;
            }
        }
    }
    if metas.iter().all(Option::is_some) && !outs.contains_key(&key(n)) {
        let ms: Vec<Meta> = metas.into_iter().flatten().collect();
        let res = op.infer(&ms).map_err(|e| in_operator(&n.name, e))?;
        outs.insert(key(n), res.into_iter().map(Some).collect());
        progress = true;
    }
    Ok(progress)
}

/// Dtypes only: uses full inference where shapes are known, else passes the first input's dtype
/// through (an op without shapes cannot say more).
pub fn infer_types(sym: &Symbol, known: &Known) -> Result<Inferred> {
    let mut full = infer(sym, known)?;
    let nodes = sym.topo_nodes();
    let mut dts: HashMap<usize, Vec<Option<DType>>> = HashMap::new();
    for n in &nodes {
        let k = key(n);
        if n.is_variable() {
            dts.insert(k, vec![known.dtypes.get(&n.name).copied().or_else(|| dtype_attr(n))]);
            continue;
        }
        let from_full: Vec<Option<DType>> =
            full.nodes.get(&k).map(|o| o.iter().map(|m| m.as_ref().map(|m| m.dtype)).collect()).unwrap_or_default();
        let first =
            n.inputs.iter().find_map(|i| dts.get(&key(&i.node)).and_then(|d| d.get(i.index).copied().flatten()));
        // Variables feeding this op without a dtype take the first known one.
        for i in &n.inputs {
            if i.node.is_variable() {
                if let Some(d) = dts.get_mut(&key(&i.node)) {
                    if d[0].is_none() {
                        d[0] = first;
                    }
                }
            }
        }
        let out = (0..n.num_outputs()).map(|j| from_full.get(j).copied().flatten().or(first)).collect();
        dts.insert(k, out);
    }
    let (args, aux) = sym.variables();
    let dt = |n: &Arc<SymNode>, i: usize| dts.get(&key(n)).and_then(|d| d.get(i).copied().flatten());
    let with = |d: Option<DType>| d.map(|d| Meta::new(&[], d));
    full.args = args.iter().map(|n| with(dt(n, 0))).collect();
    full.aux = aux.iter().map(|n| with(dt(n, 0))).collect();
    full.outputs = sym.outputs.iter().map(|o| with(dt(&o.node, o.index))).collect();
    Ok(full)
}
