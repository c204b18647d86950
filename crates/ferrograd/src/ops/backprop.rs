//! Reverse-mode pieces shared by the tape (`autograd::backward`) and the executor (`Executor::bind`
//! and `Executor::backward`): what a `grad_req` does, how a head gradient is checked, and how
//! one op's gradient rule propagates output gradients to its inputs. Both reverse sweeps walk
//! their own graph (tape nodes, schedule steps) and call these, so the two agree by construction.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

use super::binary::{Binary, BinaryKind};
use super::{fit_to_input, Grad, Op, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};

/// What a backward pass does with a gradient buffer (MXNet's `grad_req`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GradReq {
    /// No gradient.
    Null,
    /// Overwrite the buffer.
    Write,
    /// Add to the buffer.
    Add,
}

impl GradReq {
    /// Parses MXNet's names; unknown names are a `KeyError`-like value error naming the request.
    pub fn parse(s: &str) -> Result<GradReq> {
        match s {
            "null" => Ok(GradReq::Null),
            "write" => Ok(GradReq::Write),
            "add" => Ok(GradReq::Add),
            _ => Err(Error::Value(format!("'{s}': grad_req must be one of 'null', 'write', 'add'"))),
        }
    }
}

/// Whether a computed gradient may become the destination's buffer, or must be copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GradSource {
    /// Made for this pass only (the tape's): `write` may adopt its buffer without copying.
    Fresh,
    /// Memory the caller reuses (the executor's planned buffers): always copied.
    Reused,
}

/// Stores gradient `g` into `dst` by `req`. `None` (no path from the heads) writes zeros under
/// `write` and leaves `dst` alone under `add`.
pub fn apply_grad_req(dst: &mut NDArray, req: GradReq, g: Option<&NDArray>, source: GradSource) -> Result<()> {
    match (req, g) {
        (GradReq::Null, _) | (GradReq::Add, None) => {}
        (GradReq::Write, Some(g)) if source == GradSource::Fresh => dst.assign_shared(g)?,
        (GradReq::Write, Some(g)) => {
            if !g.shares_storage(dst) {
                dst.assign_from(g)?;
            }
        }
        (GradReq::Write, None) => dst.fill_scalar(0.0),
        (GradReq::Add, Some(g)) => {
            let add = Binary { kind: BinaryKind::Add, broadcast: false };
            let sum = super::run1(&add, &Default::default(), &[dst.clone(), g.clone()])?;
            dst.assign_from(&sum)?;
        }
    }
    Ok(())
}

/// The head gradient for a head of `meta`, named `head` in errors: the given array cast to the
/// head's dtype, after checking its shape. `None` when none is given (the caller decides
/// between ones and an error).
pub fn head_gradient(given: Option<&NDArray>, meta: &Meta, head: &str) -> Result<Option<NDArray>> {
    let Some(g) = given else { return Ok(None) };
    if g.shape() != meta.shape.as_slice() {
        return Err(Error::Shape(format!(
            "backward: head gradient for {head} has shape {}, but the output has shape {}",
            fmt_shape(g.shape()),
            fmt_shape(&meta.shape)
        )));
    }
    Ok(Some(if g.dtype() == meta.dtype { g.clone() } else { g.astype(meta.dtype) }))
}

/// Adds `g` to the gradient collected under `key` (the first one is taken as is).
pub fn accumulate<K: Eq + Hash, S: BuildHasher>(
    graph: &mut Grad<'_>,
    grads: &mut HashMap<K, Val, S>,
    key: K,
    g: Val,
) -> Result<()> {
    let v = match grads.get(&key) {
        // Equal shapes by construction (`fit_to_input`): `elemwise_add`, no broadcasting.
        Some(&prev) => graph.apply1(Binary { kind: BinaryKind::Add, broadcast: false }, &[prev, g])?,
        None => g,
    };
    grads.insert(key, v);
    Ok(())
}

/// One step of a reverse sweep: runs `op`'s gradient rule for inputs `xs`, outputs `ys` and
/// output gradients `gys`, and adds each input's gradient, fitted to the input's shape and dtype
/// (broadcasting undone), into `grads` under `keys[i]`. Inputs whose key is `None` (untracked,
/// or wanted by nobody) get nothing.
pub fn propagate<K: Eq + Hash, S: BuildHasher>(
    graph: &mut Grad<'_>,
    op: &dyn Op,
    xs: &[Val],
    ys: &[Val],
    gys: &[Val],
    keys: impl IntoIterator<Item = Option<K>>,
    grads: &mut HashMap<K, Val, S>,
) -> Result<()> {
    let gxs = op.grad(graph, xs, ys, gys)?;
    for ((gx, &x), key) in gxs.into_iter().zip(xs).zip(keys) {
        let (Some(gx), Some(key)) = (gx, key) else { continue };
        let meta = graph.meta(x);
        let gx = fit_to_input(graph, gx, &meta)?;
        accumulate(graph, grads, key, gx)?;
    }
    Ok(())
}
