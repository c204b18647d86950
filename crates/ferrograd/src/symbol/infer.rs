//! Shape and dtype inference over a symbol, without data.
//!
//! Shapes may be partly known (`ops::partial`). They flow forward through each op's `infer`, and
//! both ways through `infer_missing` (a `FullyConnected` weight from its data and `num_hidden`)
//! and `infer_partial` (unknown dimensions), repeated until nothing changes. A variable without a
//! given dtype takes the dtype of the op's other inputs (float32 when nothing says otherwise), as
//! MXNet's type inference does.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::{key, SymNode, Symbol};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::Meta;
use crate::ops::partial::{self, PartialShape};

/// What the caller knows about the variables, by name.
#[derive(Clone, Debug, Default)]
pub struct Known {
    pub shapes: HashMap<String, Vec<usize>>,
    /// Shapes with unknown dimensions (MXNet's `0`, or `-1` under `np_shape`).
    pub partial: HashMap<String, Vec<Option<usize>>>,
    pub dtypes: HashMap<String, DType>,
}

/// Inference results, in `list_arguments()`, `list_outputs()` and `list_auxiliary_states()`
/// order (`None` = could not be decided).
#[derive(Clone, Debug, Default)]
pub struct Inferred {
    pub args: Vec<Option<Meta>>,
    pub outputs: Vec<Option<Meta>>,
    pub aux: Vec<Option<Meta>>,
    /// The same shapes with what is known of the undecided ones (for `infer_shape_partial`).
    pub arg_shapes: Vec<PartialShape>,
    pub out_shapes: Vec<PartialShape>,
    pub aux_shapes: Vec<PartialShape>,
    /// Per node (by key): the metas of all its outputs, hidden ones included.
    pub(crate) nodes: HashMap<usize, Vec<Option<Meta>>>,
}

/// MXNet's `__shape__` text, `(2, 3)`, with 0 (legacy) or a negative size for an unknown
/// dimension.
fn shape_attr(n: &SymNode) -> PartialShape {
    let s = n.attr("__shape__")?;
    s.trim_matches(|c| c == '(' || c == ')' || c == '[' || c == ']')
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.parse::<i64>().ok().map(|d| usize::try_from(d).ok().filter(|&d| d > 0)))
        .collect()
}

fn dtype_attr(n: &SymNode) -> Option<DType> {
    let s = n.attr("__dtype__")?;
    s.parse::<i32>().ok().and_then(|id| DType::from_mx_type_id(id).ok()).or_else(|| DType::from_name(&s).ok())
}

/// What is known of one value of the graph (a variable or an op output).
#[derive(Clone, Debug, Default)]
struct Entry {
    shape: PartialShape,
    dtype: Option<DType>,
}

/// A value's identity: (node key, output index).
type Slot = (usize, usize);

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
        Error::Memory(m) => Error::Memory(wrap(m)),
    }
}

/// Infers every shape and dtype it can. Shapes flow forward through each op and backward into
/// its inputs (`Op::infer_missing`, `Op::infer_partial`), repeated until nothing changes, so a
/// dimension known anywhere reaches every value that must share it. Errors (inconsistent
/// shapes, ops rejecting their inputs) name the operator.
pub fn infer(sym: &Symbol, known: &Known) -> Result<Inferred> {
    let nodes = sym.topo_nodes();
    let mut ents: HashMap<Slot, Entry> = HashMap::new();
    for n in nodes.iter().filter(|n| n.is_variable()) {
        let shape = match (known.shapes.get(&n.name), known.partial.get(&n.name)) {
            (Some(s), _) => partial::known(s),
            (None, Some(p)) => Some(p.clone()),
            (None, None) => shape_attr(n),
        };
        let dtype = known.dtypes.get(&n.name).copied().or_else(|| dtype_attr(n));
        ents.insert((key(n), 0), Entry { shape, dtype });
    }
    let mut done: HashSet<usize> = HashSet::new();
    loop {
        let mut progress = false;
        for n in nodes.iter().filter(|n| !n.is_variable()) {
            if !done.contains(&key(n)) {
                progress |= infer_node(n, &mut ents, &mut done)?;
            }
        }
        if !progress {
            break;
        }
    }
    let entry = |n: &Arc<SymNode>, i: usize| ents.get(&(key(n), i)).cloned().unwrap_or_default();
    let meta = |e: &Entry| partial::complete(&e.shape).map(|s| Meta::new(&s, e.dtype.unwrap_or(DType::F32)));
    let mut outs: HashMap<usize, Vec<Option<Meta>>> = HashMap::new();
    for n in &nodes {
        outs.insert(key(n), (0..n.num_outputs()).map(|i| meta(&entry(n, i))).collect());
    }
    let (args, aux) = sym.variables();
    let heads: Vec<Entry> = sym.outputs.iter().map(|o| entry(&o.node, o.index)).collect();
    let args: Vec<Entry> = args.iter().map(|n| entry(n, 0)).collect();
    let aux: Vec<Entry> = aux.iter().map(|n| entry(n, 0)).collect();
    Ok(Inferred {
        args: args.iter().map(meta).collect(),
        outputs: heads.iter().map(meta).collect(),
        aux: aux.iter().map(meta).collect(),
        arg_shapes: args.into_iter().map(|e| e.shape).collect(),
        out_shapes: heads.into_iter().map(|e| e.shape).collect(),
        aux_shapes: aux.into_iter().map(|e| e.shape).collect(),
        nodes: outs,
    })
}

/// One pass over an op node; true when something new was learnt.
fn infer_node(n: &Arc<SymNode>, ents: &mut HashMap<Slot, Entry>, done: &mut HashSet<usize>) -> Result<bool> {
    let Some(op) = &n.op else { return Ok(false) };
    let src = |i: &super::NodeOut| (key(&i.node), i.index);
    let in_ents: Vec<Entry> = n.inputs.iter().map(|i| ents.get(&src(i)).cloned().unwrap_or_default()).collect();
    // An input without a dtype takes that of the first input that has one (float32 otherwise).
    let sibling = in_ents.iter().find_map(|e| e.dtype);
    let mut in_dtypes: Vec<DType> = in_ents.iter().map(|e| e.dtype.or(sibling).unwrap_or(DType::F32)).collect();
    let mut ins: Vec<PartialShape> = in_ents.into_iter().map(|e| e.shape).collect();
    let mut outs: Vec<PartialShape> =
        (0..n.num_outputs()).map(|j| ents.get(&(key(n), j)).and_then(|e| e.shape.clone())).collect();
    let in_op = |e| in_operator(&n.name, e);

    // A sampler of unknown shape: its output shape comes from its consumers (they fill `outs`).
    if let Some(open) = op.open_outputs().filter(|_| n.inputs.is_empty()) {
        let res = op.infer(&[]).map_err(in_op)?;
        let mut progress = false;
        for (j, s) in open.iter().enumerate().take(outs.len()) {
            partial::merge(&mut outs[j], s).map_err(in_op)?;
            let e = ents.entry((key(n), j)).or_default();
            progress |= partial::merge(&mut e.shape, &outs[j]).map_err(in_op)?;
            progress |= e.dtype.is_none();
            e.dtype = e.dtype.or(res.get(j).map(|m| m.dtype));
        }
        if outs.iter().all(|s| partial::complete(s).is_some()) {
            done.insert(key(n));
        }
        return Ok(progress);
    }

    // Inputs the op can shape from the others (a `FullyConnected` weight from its data).
    let metas: Vec<Option<Meta>> =
        ins.iter().zip(&in_dtypes).map(|(s, &d)| partial::complete(s).map(|s| Meta::new(&s, d))).collect();
    for (i, sug) in op.infer_missing(&metas).into_iter().enumerate() {
        let Some(sug) = sug else { continue };
        if let Some(Some(given)) = metas.get(i).filter(|_| n.inputs[i].node.is_variable()) {
            if given.shape != sug.shape {
                return Err(Error::Shape(format!(
                    "Error in operator {}: Shape inconsistent, Provided = {}, inferred shape={} (argument '{}')",
                    n.name,
                    partial::fmt_partial(&partial::known(&given.shape)),
                    fmt_shape(&sug.shape),
                    n.inputs[i].node.name
                )));
            }
        }
        if i < ins.len() && metas[i].is_none() {
            partial::merge(&mut ins[i], &partial::known(&sug.shape)).map_err(in_op)?;
            if n.inputs[i].node.is_variable() && ents.get(&src(&n.inputs[i])).is_some_and(|e| e.dtype.is_none()) {
                in_dtypes[i] = sug.dtype;
            }
        }
    }
    let complete: Option<Vec<Vec<usize>>> = ins.iter().map(partial::complete).collect();
    let mut out_dtypes: Vec<Option<DType>> = vec![None; outs.len()];
    match complete {
        Some(shapes) => {
            let ms: Vec<Meta> = shapes.iter().zip(&in_dtypes).map(|(s, &d)| Meta::new(s, d)).collect();
            let res = op.infer(&ms).map_err(in_op)?;
            for (j, m) in res.into_iter().enumerate().take(outs.len()) {
                // The element-count check the imperative call makes before allocating.
                crate::ndarray::checked_numel(op.name(), &m.shape).map_err(in_op)?;
                partial::merge(&mut outs[j], &partial::known(&m.shape)).map_err(in_op)?;
                out_dtypes[j] = Some(m.dtype);
            }
            done.insert(key(n));
        }
        None => op.infer_partial(&mut ins, &mut outs).map_err(in_op)?,
    }
    let mut progress = done.contains(&key(n));
    for (i, inp) in n.inputs.iter().enumerate() {
        let e = ents.entry(src(inp)).or_default();
        progress |= partial::merge(&mut e.shape, &ins[i]).map_err(in_op)?;
        if inp.node.is_variable() && e.dtype.is_none() && e.shape.is_some() {
            e.dtype = Some(in_dtypes[i]);
        }
    }
    for (j, s) in outs.iter().enumerate() {
        let e = ents.entry((key(n), j)).or_default();
        progress |= partial::merge(&mut e.shape, s).map_err(in_op)?;
        e.dtype = e.dtype.or(out_dtypes[j]);
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
        let fixed = n.op.as_ref().and_then(|op| op.fixed_dtype());
        let out = (0..n.num_outputs()).map(|j| from_full.get(j).copied().flatten().or(fixed).or(first)).collect();
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
