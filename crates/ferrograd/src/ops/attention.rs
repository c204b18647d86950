//! MXNet's `interleaved_matmul_*` attention operators: the query·key scores and the
//! attention·value products of multi-head attention, read straight from projections whose heads
//! (and query/key/value parts) are interleaved in the last axis.
//!
//! Layouts (L: sequence, B: batch, H: heads, D: head size):
//! - self-attention projections `(L, B, H·3·D)`, viewed as `(L, B, H, 3, D)` (q, k, v);
//! - encoder-decoder queries `(Lq, B, H·D)` and keys/values `(Lk, B, H·2·D)` (k, v);
//! - scores and attention weights `(B·H, Lq, Lk)`; attended values `(Lq, B, H·D)`.
//!
//! Forward and gradient are one composition of registered ops (reshape, slice, transpose,
//! batch_dot, concat), evaluated eagerly for the forward and recorded for the gradient, so the
//! gradients are themselves differentiable.

use std::sync::Arc;

use super::grad::EagerGraph;
use super::join::Concat;
use super::params::{OpDef, OpParams};
use super::slice::SliceAxis;
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};

/// Which of the four products.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    SelfQk,
    SelfValAtt,
    EncDecQk,
    EncDecValAtt,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::SelfQk => "_contrib_interleaved_matmul_selfatt_qk",
            Kind::SelfValAtt => "_contrib_interleaved_matmul_selfatt_valatt",
            Kind::EncDecQk => "_contrib_interleaved_matmul_encdec_qk",
            Kind::EncDecValAtt => "_contrib_interleaved_matmul_encdec_valatt",
        }
    }
    fn args(self) -> &'static [&'static str] {
        match self {
            Kind::SelfQk => &["queries_keys_values"],
            Kind::SelfValAtt => &["queries_keys_values", "attention"],
            Kind::EncDecQk => &["queries", "keys_values"],
            Kind::EncDecValAtt => &["keys_values", "attention"],
        }
    }
}

/// An interleaved attention product with its number of heads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InterleavedMatmul {
    pub kind: Kind,
    pub heads: usize,
}

/// `(L, B, D)` of a projection of `parts` interleaved parts per head, checked.
fn proj_dims(op: &str, what: &str, shape: &[usize], heads: usize, parts: usize) -> Result<(usize, usize, usize)> {
    let width = heads * parts;
    if shape.len() != 3 || width == 0 || !shape[2].is_multiple_of(width) {
        return Err(Error::Shape(format!(
            "{op}: {what} must be 3-D (seq_length, batch_size, heads·{parts}·head_dim) with heads={heads}, \
             got shape {}",
            fmt_shape(shape)
        )));
    }
    Ok((shape[0], shape[1], shape[2] / width))
}

fn check_attention(op: &str, att: &[usize], want: [usize; 3]) -> Result<()> {
    if att != want {
        return Err(Error::Shape(format!(
            "{op}: attention must have shape {} (batch·heads, query length, key length), got {}",
            fmt_shape(&want),
            fmt_shape(att)
        )));
    }
    Ok(())
}

impl InterleavedMatmul {
    fn scale(d: usize) -> f64 {
        1.0 / (d as f64).sqrt()
    }

    /// Part `which` of a `(L, B, H·parts·D)` projection as `(B·H, L, D)`.
    fn extract(&self, g: &mut Grad<'_>, x: Val, parts: usize, which: usize) -> Result<Val> {
        let s = g.shape(x);
        let (l, b, d) = (s[0], s[1], s[2] / (self.heads * parts));
        let x = g.reshape(x, &[l, b, self.heads, parts, d])?;
        let x = g.apply1(SliceAxis { axis: 3, begin: which as i64, end: Some(which as i64 + 1) }, &[x])?;
        let x = g.reshape(x, &[l, b, self.heads, d])?;
        let x = g.transpose(x, vec![1, 2, 0, 3])?;
        g.reshape(x, &[b * self.heads, l, d])
    }

    /// `(B·H, L, D)` back to `(L, B, H·D)`.
    fn merge_heads(&self, g: &mut Grad<'_>, x: Val) -> Result<Val> {
        let s = g.shape(x);
        let (b, l, d) = (s[0] / self.heads, s[1], s[2]);
        let x = g.reshape(x, &[b, self.heads, l, d])?;
        let x = g.transpose(x, vec![2, 0, 1, 3])?;
        g.reshape(x, &[l, b, self.heads * d])
    }

    /// The gradient of a `(L, B, H·parts·D)` projection from per-part `(B·H, L, D)` gradients
    /// (`None`: that part gets zero).
    fn assemble(&self, g: &mut Grad<'_>, like: Val, parts: &[Option<Val>]) -> Result<Val> {
        let s = g.shape(like);
        let (l, b, d) = (s[0], s[1], s[2] / (self.heads * parts.len()));
        let mut pieces = Vec::with_capacity(parts.len());
        let mut zeros = None;
        for p in parts {
            let piece = match p {
                Some(v) => {
                    let v = self.merge_heads(g, *v)?;
                    g.reshape(v, &[l, b, self.heads, 1, d])?
                }
                None => match zeros {
                    Some(z) => z,
                    None => {
                        let z = g.zeros_like(like)?;
                        let z = g.reshape(z, &[l, b, self.heads, parts.len(), d])?;
                        let z = g.apply1(SliceAxis { axis: 3, begin: 0, end: Some(1) }, &[z])?;
                        zeros = Some(z);
                        z
                    }
                },
            };
            pieces.push(piece);
        }
        let joined = if pieces.len() == 1 {
            pieces[0]
        } else {
            g.apply(Arc::new(Concat { dim: 3, num_args: Some(pieces.len()) }), &pieces)?[0]
        };
        g.reshape(joined, &s)
    }

    /// The output, composed of registered ops on `g`.
    fn compose(&self, g: &mut Grad<'_>, x: &[Val]) -> Result<Val> {
        match self.kind {
            Kind::SelfQk | Kind::EncDecQk => {
                let (q, k) = match self.kind {
                    Kind::SelfQk => (self.extract(g, x[0], 3, 0)?, self.extract(g, x[0], 3, 1)?),
                    _ => (self.extract(g, x[0], 1, 0)?, self.extract(g, x[1], 2, 0)?),
                };
                let d = g.shape(q)[2];
                let q = g.mul_scalar(q, Self::scale(d))?;
                g.dot(q, k, false, true, true)
            }
            Kind::SelfValAtt | Kind::EncDecValAtt => {
                let v = match self.kind {
                    Kind::SelfValAtt => self.extract(g, x[0], 3, 2)?,
                    _ => self.extract(g, x[0], 2, 1)?,
                };
                let out = g.dot(x[1], v, false, false, true)?;
                self.merge_heads(g, out)
            }
        }
    }
}

impl Op for InterleavedMatmul {
    fn name(&self) -> &'static str {
        self.kind.name()
    }
    fn arg_names(&self) -> &'static [&'static str] {
        self.kind.args()
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("heads", self.heads.to_string())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let op = self.name();
        let h = self.heads;
        let dtype = inputs[0].dtype;
        let shape = match self.kind {
            Kind::SelfQk => {
                let (l, b, _) = proj_dims(op, "queries_keys_values", &inputs[0].shape, h, 3)?;
                vec![b * h, l, l]
            }
            Kind::SelfValAtt => {
                let (l, b, d) = proj_dims(op, "queries_keys_values", &inputs[0].shape, h, 3)?;
                check_attention(op, &inputs[1].shape, [b * h, l, l])?;
                vec![l, b, h * d]
            }
            Kind::EncDecQk => {
                let (lq, b, d) = proj_dims(op, "queries", &inputs[0].shape, h, 1)?;
                let (lk, bk, dk) = proj_dims(op, "keys_values", &inputs[1].shape, h, 2)?;
                if (bk, dk) != (b, d) {
                    return Err(Error::Shape(format!(
                        "{op}: queries {} and keys_values {} disagree on batch size or head size",
                        fmt_shape(&inputs[0].shape),
                        fmt_shape(&inputs[1].shape)
                    )));
                }
                vec![b * h, lq, lk]
            }
            Kind::EncDecValAtt => {
                let (lk, b, d) = proj_dims(op, "keys_values", &inputs[0].shape, h, 2)?;
                let a = &inputs[1].shape;
                let lq = if a.len() == 3 { a[1] } else { 0 };
                check_attention(op, a, [b * h, lq, lk])?;
                vec![lq, b, h * d]
            }
        };
        if inputs.iter().any(|m| m.dtype != dtype) {
            return Err(Error::DType(format!("{op}: inputs must have one dtype")));
        }
        Ok(vec![Meta::new(&shape, dtype)])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let mut graph = EagerGraph { vals: Vec::new(), ctx: *ctx };
        let xs: Vec<Val> = inputs.iter().map(|x| graph.push(x.clone())).collect();
        let out = self.compose(&mut Grad::new(&mut graph), &xs)?;
        outputs[0].write_from(graph.get(out))
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, x: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        match self.kind {
            Kind::SelfQk | Kind::EncDecQk => {
                // out = (s·Q)·Kᵀ: dQ = s·og·K, dK = s·ogᵀ·Q.
                let (q, k) = match self.kind {
                    Kind::SelfQk => (self.extract(g, x[0], 3, 0)?, self.extract(g, x[0], 3, 1)?),
                    _ => (self.extract(g, x[0], 1, 0)?, self.extract(g, x[1], 2, 0)?),
                };
                let s = Self::scale(g.shape(q)[2]);
                let dq = g.dot(og[0], k, false, false, true)?;
                let dq = g.mul_scalar(dq, s)?;
                let dk = g.dot(og[0], q, true, false, true)?;
                let dk = g.mul_scalar(dk, s)?;
                Ok(match self.kind {
                    Kind::SelfQk => vec![Some(self.assemble(g, x[0], &[Some(dq), Some(dk), None])?)],
                    _ => vec![
                        Some(self.assemble(g, x[0], &[Some(dq)])?),
                        Some(self.assemble(g, x[1], &[Some(dk), None])?),
                    ],
                })
            }
            Kind::SelfValAtt | Kind::EncDecValAtt => {
                // out' = A·V (heads split): dA = og'·Vᵀ, dV = Aᵀ·og'.
                let (parts, which) = if self.kind == Kind::SelfValAtt { (3, 2) } else { (2, 1) };
                let v = self.extract(g, x[0], parts, which)?;
                let go = {
                    let s = g.shape(og[0]);
                    let (l, b, d) = (s[0], s[1], s[2] / self.heads);
                    let t = g.reshape(og[0], &[l, b, self.heads, d])?;
                    let t = g.transpose(t, vec![1, 2, 0, 3])?;
                    g.reshape(t, &[b * self.heads, l, d])?
                };
                let da = g.dot(go, v, false, true, true)?;
                let dv = g.dot(x[1], go, true, false, true)?;
                let mut part_grads = vec![None; parts];
                part_grads[which] = Some(dv);
                Ok(vec![Some(self.assemble(g, x[0], &part_grads)?), Some(da)])
            }
        }
    }
}

/// The interleaved attention products' parameter.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct HeadsParams {
    /// Number of attention heads.
    pub heads: i64,
}

fn builder(kind: Kind) -> impl Fn(&Attrs) -> Result<OpRef> {
    move |a| {
        let p = HeadsParams::parse(a)?;
        let heads = usize::try_from(p.heads).ok().filter(|&h| h > 0).ok_or_else(|| {
            Error::Value(format!("{}: heads must be a positive number, got {}", kind.name(), p.heads))
        })?;
        Ok(Arc::new(InterleavedMatmul { kind, heads }) as OpRef)
    }
}

/// The interleaved attention products' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_contrib_interleaved_matmul_selfatt_qk",
        aliases: &[],
        args: &["queries_keys_values"],
        doc: "Self-attention scores q·kᵀ/√d from interleaved (L, B, H·3·D) projections.",
        params: HeadsParams::schema,
        build: |a| builder(Kind::SelfQk)(a),
    },
    OpDef {
        name: "_contrib_interleaved_matmul_selfatt_valatt",
        aliases: &[],
        args: &["queries_keys_values", "attention"],
        doc: "Self-attention output: attention · v from interleaved projections, as (L, B, H·D).",
        params: HeadsParams::schema,
        build: |a| builder(Kind::SelfValAtt)(a),
    },
    OpDef {
        name: "_contrib_interleaved_matmul_encdec_qk",
        aliases: &[],
        args: &["queries", "keys_values"],
        doc: "Encoder-decoder scores q·kᵀ/√d from queries and interleaved keys/values.",
        params: HeadsParams::schema,
        build: |a| builder(Kind::EncDecQk)(a),
    },
    OpDef {
        name: "_contrib_interleaved_matmul_encdec_valatt",
        aliases: &[],
        args: &["keys_values", "attention"],
        doc: "Encoder-decoder output: attention · v from interleaved keys/values, as (L, B, H·D).",
        params: HeadsParams::schema,
        build: |a| builder(Kind::EncDecValAtt)(a),
    },
];
