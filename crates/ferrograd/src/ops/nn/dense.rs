//! `FullyConnected`, `linalg_gemm2` and `Embedding`.
//!
//! `FullyConnected` computes `data·weightᵀ + bias` with one GEMM whose output is pre-filled with
//! the bias (weight is read transposed through strides, never copied). Its gradient is three
//! ops: `dot(g, weight)`, `dot(gᵀ, data)` and `sum(g, axis=0)`.
//!
//! `Embedding` is `take(weight, data, axis=0, mode='clip')`: as in MXNet's CPU kernel, indices
//! outside `[0, input_dim)` are clipped to the nearest valid row (float indices truncate toward
//! zero). Its weight gradient is `_backward_take` (a scatter-add).

use std::sync::Arc;

use ferrograd_kernels::matmul::{gemm, GemmElement};
use ferrograd_kernels::Element;

use super::{dense, float_only};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::attrs::fmt_float;
use crate::ops::indexing::{RowLookup, Take, TakeGrad, TakeMode};
use crate::ops::params::{OpDef, OpParams, ParamEnum};
use crate::ops::widen::{forward_widened, wider};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// Recomputes `op` in float32 for float16 inputs and casts the outputs back.
fn same_dtype(op: &str, names: &[&str], metas: &[Meta]) -> Result<()> {
    float_only(op, names[0], metas[0].dtype)?;
    for (n, m) in names.iter().zip(metas).skip(1) {
        if m.dtype != metas[0].dtype {
            return Err(Error::DType(format!(
                "{op}: {n} has dtype {}, but {} has dtype {}",
                m.dtype, names[0], metas[0].dtype
            )));
        }
    }
    Ok(())
}

/// `FullyConnected(data, weight, bias?, num_hidden, no_bias=False, flatten=True)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FullyConnected {
    pub num_hidden: usize,
    pub no_bias: bool,
    pub flatten: bool,
}

impl FullyConnected {
    /// `(rows, in_features, output shape)`.
    fn dims(&self, data: &[usize]) -> Result<(usize, usize, Vec<usize>)> {
        if data.is_empty() {
            return Err(Error::Shape("FullyConnected: data must have at least one dimension, got shape ()".into()));
        }
        if self.flatten {
            Ok((data[0], data[1..].iter().product(), vec![data[0], self.num_hidden]))
        } else {
            let (lead, k) = (&data[..data.len() - 1], data[data.len() - 1]);
            let mut out = lead.to_vec();
            out.push(self.num_hidden);
            Ok((lead.iter().product(), k, out))
        }
    }
}

impl Op for FullyConnected {
    fn name(&self) -> &'static str {
        "FullyConnected"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        if self.no_bias {
            &["data", "weight"]
        } else {
            &["data", "weight", "bias"]
        }
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("num_hidden", self.num_hidden.to_string())];
        if self.no_bias {
            v.push(("no_bias", "True".into()));
        }
        if !self.flatten {
            v.push(("flatten", "False".into()));
        }
        v
    }
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        let Some(d) = inputs.first().cloned().flatten() else { return Vec::new() };
        let Ok((_, k, _)) = self.dims(&d.shape) else { return Vec::new() };
        vec![None, Some(Meta::new(&[self.num_hidden, k], d.dtype)), Some(Meta::new(&[self.num_hidden], d.dtype))]
    }
    fn infer_partial(
        &self,
        ins: &mut [crate::ops::partial::PartialShape],
        outs: &mut [crate::ops::partial::PartialShape],
    ) -> Result<()> {
        crate::ops::partial::fully_connected(self.num_hidden, self.flatten, ins, outs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        same_dtype("FullyConnected", self.arg_names(), inputs)?;
        let (_, k, out) = self.dims(&inputs[0].shape)?;
        let w = &inputs[1].shape;
        if w.as_slice() != [self.num_hidden, k] {
            return Err(Error::Shape(format!(
                "FullyConnected: weight must have shape ({}, {k}) (num_hidden, input features) for data {}, got {}",
                self.num_hidden,
                fmt_shape(&inputs[0].shape),
                fmt_shape(w)
            )));
        }
        if !self.no_bias && inputs[2].shape.as_slice() != [self.num_hidden] {
            return Err(Error::Shape(format!(
                "FullyConnected: bias must have shape ({},) (num_hidden), got {}",
                self.num_hidden,
                fmt_shape(&inputs[2].shape)
            )));
        }
        Ok(vec![Meta::new(&out, inputs[0].dtype)])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let dt = inputs[0].dtype();
        if let Some(wide) = wider(dt) {
            return forward_widened(self, ctx, inputs, outputs, dt, wide);
        }
        let (m, k, _) = self.dims(inputs[0].shape())?;
        let h = self.num_hidden;
        let (bx, rx) = dense(&inputs[0]);
        let (bw, rw) = dense(&inputs[1]);
        let bias = if self.no_bias { None } else { Some(dense(&inputs[2])) };
        float_kernel!("FullyConnected", dt, T => {
            let x = &bx.typed::<T>()?[rx];
            let w = &bw.typed::<T>()?[rw];
            let b = bias.as_ref().map(|(bb, rb)| bb.typed::<T>().map(|s| &s[rb.clone()])).transpose()?;
            outputs[0].write_out::<T, _>(|o| fc_forward(m, k, h, x, w, b, o))
        })
    }
    /// `y = x·wᵀ + b` is linear in each input: `δ` at `x[r, c]` adds `δ·w[:, c]` to row `r`, at
    /// `w[j, c]` adds `δ·x[:, c]` to column `j`, at `b[j]` adds `δ` to column `j`.
    fn add_input_delta(
        &self,
        inputs: &[NDArray],
        which: usize,
        index: usize,
        delta: f64,
        out: &mut NDArray,
    ) -> Result<bool> {
        let dt = inputs[0].dtype();
        if which >= inputs.len() || dt == DType::F16 {
            return Ok(false);
        }
        let (m, k, _) = self.dims(inputs[0].shape())?;
        let h = self.num_hidden;
        let (bx, rx) = dense(&inputs[0]);
        let (bw, rw) = dense(&inputs[1]);
        float_kernel!("FullyConnected", dt, T => {
            let x = &bx.typed::<T>()?[rx];
            let w = &bw.typed::<T>()?[rw];
            let add = |y: &mut T, v: f64| *y = T::from_f64(delta * v + y.to_f64());
            out.write_out::<T, _>(|o| match which {
                0 => {
                    let (r, c) = (index / k.max(1), index % k.max(1));
                    for (j, y) in o[r * h..(r + 1) * h].iter_mut().enumerate() {
                        add(y, w[j * k + c].to_f64());
                    }
                }
                1 => {
                    let (j, c) = (index / k.max(1), index % k.max(1));
                    for r in 0..m {
                        add(&mut o[r * h + j], x[r * k + c].to_f64());
                    }
                }
                _ => (0..m).for_each(|r| add(&mut o[r * h + index], 1.0)),
            })
        })?;
        Ok(true)
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let (x, w) = (inputs[0], inputs[1]);
        let xs = g.shape(x);
        let (m, k, _) = self.dims(&xs)?;
        let gy = g.reshape(og[0], &[m, self.num_hidden])?;
        let x2 = g.reshape(x, &[m, k])?;
        let gx = if g.needs_grad(x) {
            let gx = g.dot(gy, w, false, false, false)?;
            Some(g.reshape(gx, &xs)?)
        } else {
            None
        };
        let gw = g.dot(gy, x2, true, false, false)?;
        let mut v = vec![gx, Some(gw)];
        if !self.no_bias {
            v.push(Some(g.sum_axes(gy, vec![0], false)?));
        }
        Ok(v)
    }
}

/// `out (m×h) = x (m×k) · wᵀ (+ bias per row)`.
fn fc_forward<T: GemmElement>(m: usize, k: usize, h: usize, x: &[T], w: &[T], b: Option<&[T]>, o: &mut [T]) {
    if let Some(b) = b {
        for row in o.chunks_exact_mut(h.max(1)) {
            row.copy_from_slice(&b[..row.len()]);
        }
    }
    if m == 0 || h == 0 {
        return;
    }
    if k == 0 {
        if b.is_none() {
            o.fill(T::zero());
        }
        return;
    }
    // wᵀ as a (k×h) operand: element (p, j) = w[j·k + p].
    gemm(m, h, k, x, (0, k as isize, 1), w, (0, 1, k as isize), o, b.is_some());
}

/// `linalg_gemm2(A, B, transpose_a, transpose_b, alpha)`: `alpha·op(A)·op(B)` over the last two
/// axes, batched over equal leading axes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinalgGemm2 {
    pub transpose_a: bool,
    pub transpose_b: bool,
    pub alpha: f64,
}

impl LinalgGemm2 {
    /// `(batch, m, k, n, output shape)`.
    fn dims(&self, a: &[usize], b: &[usize]) -> Result<(usize, usize, usize, usize, Vec<usize>)> {
        let bad = |why: &str| {
            Error::Shape(format!(
                "linalg_gemm2: {why}: A {} and B {} (transpose_a={}, transpose_b={})",
                fmt_shape(a),
                fmt_shape(b),
                self.transpose_a,
                self.transpose_b
            ))
        };
        if a.len() < 2 || b.len() < 2 {
            return Err(bad("both operands need at least 2 dimensions"));
        }
        if a.len() != b.len() || a[..a.len() - 2] != b[..b.len() - 2] {
            return Err(bad("leading (batch) dimensions must be equal"));
        }
        let (ar, ac) = (a[a.len() - 2], a[a.len() - 1]);
        let (br, bc) = (b[b.len() - 2], b[b.len() - 1]);
        let (m, ka) = if self.transpose_a { (ac, ar) } else { (ar, ac) };
        let (kb, n) = if self.transpose_b { (bc, br) } else { (br, bc) };
        if ka != kb {
            return Err(bad("inner dimensions do not match"));
        }
        let lead = &a[..a.len() - 2];
        let mut out = lead.to_vec();
        out.extend([m, n]);
        Ok((lead.iter().product(), m, ka, n, out))
    }
}

impl Op for LinalgGemm2 {
    fn name(&self) -> &'static str {
        "linalg_gemm2"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["A", "B"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if self.transpose_a {
            v.push(("transpose_a", "True".into()));
        }
        if self.transpose_b {
            v.push(("transpose_b", "True".into()));
        }
        if self.alpha != 1.0 {
            v.push(("alpha", fmt_float(self.alpha)));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        same_dtype("linalg_gemm2", &["A", "B"], inputs)?;
        let (.., out) = self.dims(&inputs[0].shape, &inputs[1].shape)?;
        Ok(vec![Meta::new(&out, inputs[0].dtype)])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let dt = inputs[0].dtype();
        if let Some(wide) = wider(dt) {
            return forward_widened(self, ctx, inputs, outputs, dt, wide);
        }
        let (batch, m, k, n, _) = self.dims(inputs[0].shape(), inputs[1].shape())?;
        let (ba, ra) = dense(&inputs[0]);
        let (bb, rb) = dense(&inputs[1]);
        // Row-major strides of each stored matrix, swapped when transposed.
        let av = if self.transpose_a { (1, m as isize) } else { (k as isize, 1) };
        let bv = if self.transpose_b { (1, k as isize) } else { (n as isize, 1) };
        let alpha = self.alpha;
        float_kernel!("linalg_gemm2", dt, T => {
            let a = &ba.typed::<T>()?[ra];
            let b = &bb.typed::<T>()?[rb];
            outputs[0].write_out::<T, _>(|o| {
                if m * n == 0 {
                    return;
                }
                for (i, c) in o.chunks_exact_mut(m * n).enumerate().take(batch) {
                    gemm(m, n, k, a, (i * m * k, av.0, av.1), b, (i * k * n, bv.0, bv.1), c, false);
                    if alpha != 1.0 {
                        let s = T::from_f64(alpha);
                        c.iter_mut().for_each(|v| *v *= s);
                    }
                }
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let (a, b, gc) = (inputs[0], inputs[1], og[0]);
        let (ta, tb, alpha) = (self.transpose_a, self.transpose_b, self.alpha);
        let mk = |transpose_a, transpose_b| LinalgGemm2 { transpose_a, transpose_b, alpha };
        let ga = if ta { g.apply1(mk(tb, true), &[b, gc])? } else { g.apply1(mk(false, !tb), &[gc, b])? };
        let gb = if tb { g.apply1(mk(true, ta), &[gc, a])? } else { g.apply1(mk(!ta, false), &[a, gc])? };
        Ok(vec![Some(ga), Some(gb)])
    }
}

/// `Embedding(data, weight, input_dim, output_dim, dtype)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Embedding {
    pub input_dim: usize,
    pub output_dim: usize,
    pub dtype: DType,
    /// The weight's gradient may be kept as rows (see [`Op::row_lookup`]).
    pub sparse_grad: bool,
}

impl Op for Embedding {
    fn name(&self) -> &'static str {
        "Embedding"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "weight"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("input_dim", self.input_dim.to_string()), ("output_dim", self.output_dim.to_string())];
        if self.dtype != DType::F32 {
            v.push(("dtype", self.dtype.name().to_string()));
        }
        if self.sparse_grad {
            v.push(("sparse_grad", "True".to_string()));
        }
        v
    }
    fn infer_missing(&self, _inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        vec![None, Some(Meta::new(&[self.input_dim, self.output_dim], self.dtype))]
    }
    fn infer_partial(
        &self,
        ins: &mut [crate::ops::partial::PartialShape],
        outs: &mut [crate::ops::partial::PartialShape],
    ) -> Result<()> {
        crate::ops::partial::embedding(self.output_dim, ins, outs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (d, w) = (&inputs[0], &inputs[1]);
        if w.shape.as_slice() != [self.input_dim, self.output_dim] {
            return Err(Error::Shape(format!(
                "Embedding: weight must have shape ({}, {}) (input_dim, output_dim), got {}",
                self.input_dim,
                self.output_dim,
                fmt_shape(&w.shape)
            )));
        }
        float_only("Embedding", "weight", w.dtype)?;
        let mut s = d.shape.to_vec();
        s.push(self.output_dim);
        Ok(vec![Meta::new(&s, w.dtype)])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        if self.input_dim == 0 && inputs[0].size() > 0 {
            return Err(Error::Index("Embedding: cannot look up indices in a weight with input_dim 0".into()));
        }
        if inputs[0].size() == 0 {
            return Ok(());
        }
        Take { axis: 0, mode: TakeMode::Clip }.forward(ctx, &[inputs[1].clone(), inputs[0].clone()], outputs)
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn row_lookup(&self) -> Option<RowLookup> {
        self.sparse_grad.then_some(RowLookup { table: 1, indices: 0, mode: TakeMode::Clip })
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let back = TakeGrad { axis: 0, mode: TakeMode::Clip, shape: vec![self.input_dim, self.output_dim] };
        Ok(vec![None, Some(g.apply1(back, &[og[0], inputs[0]])?)])
    }
}

/// `FullyConnected`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct FullyConnectedParams {
    /// Number of output units (rows of weight).
    pub num_hidden: i64,
    /// Leave out the bias input.
    #[param(default = false)]
    pub no_bias: bool,
    /// Collapse every axis after the first before the product (else apply to the last axis).
    #[param(default = true)]
    pub flatten: bool,
}

/// `linalg_gemm2`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct LinalgGemm2Params {
    /// Use the transpose of A.
    #[param(default = false)]
    pub transpose_a: bool,
    /// Use the transpose of B.
    #[param(default = false)]
    pub transpose_b: bool,
    /// Factor applied to the product.
    #[param(default = 1.0)]
    pub alpha: f64,
    /// Axis of the matrix rows (only -2 is supported).
    #[param(default = -2)]
    pub axis: i64,
}

/// The weight dtypes `Embedding` names (bfloat16 and int8 are rejected: no such dtype here).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
#[param(dtype)]
pub enum EmbeddingDType {
    Bfloat16,
    Float16,
    Float32,
    Float64,
    Int32,
    Int64,
    Int8,
    Uint8,
}

/// `Embedding`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct EmbeddingParams {
    /// Number of rows of weight (the vocabulary size).
    pub input_dim: i64,
    /// Length of each embedding vector (columns of weight).
    pub output_dim: i64,
    /// Dtype of weight.
    #[param(default = EmbeddingDType::Float32)]
    pub dtype: EmbeddingDType,
    /// Row-sparse gradient: the values are the same; the storage type of weight's gradient
    /// (`attach_grad(stype=...)`, a Parameter's `grad_stype`) makes it row_sparse.
    #[param(default = false)]
    pub sparse_grad: bool,
}

fn non_negative(op: &str, key: &str, v: i64) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::Value(format!("{op}: parameter '{key}' must be non-negative, got {v}")))
}

fn build_fully_connected(a: &Attrs) -> Result<OpRef> {
    let p = FullyConnectedParams::parse(a)?;
    Ok(Arc::new(FullyConnected {
        num_hidden: non_negative(&a.op, "num_hidden", p.num_hidden)?,
        no_bias: p.no_bias,
        flatten: p.flatten,
    }))
}

fn build_linalg_gemm2(a: &Attrs) -> Result<OpRef> {
    let p = LinalgGemm2Params::parse(a)?;
    if p.axis != -2 {
        return Err(Error::Value("linalg_gemm2: only axis=-2 (matrices in the last two axes) is supported".into()));
    }
    Ok(Arc::new(LinalgGemm2 { transpose_a: p.transpose_a, transpose_b: p.transpose_b, alpha: p.alpha }))
}

fn build_embedding(a: &Attrs) -> Result<OpRef> {
    let p = EmbeddingParams::parse(a)?;
    Ok(Arc::new(Embedding {
        input_dim: non_negative(&a.op, "input_dim", p.input_dim)?,
        output_dim: non_negative(&a.op, "output_dim", p.output_dim)?,
        dtype: DType::from_name(p.dtype.name())?,
        sparse_grad: p.sparse_grad,
    }))
}

/// The dense ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "FullyConnected",
        aliases: &[],
        args: &["data", "weight", "bias?"],
        doc: "data·weightᵀ + bias; weight (num_hidden, in), data flattened to 2-D unless flatten=False.",
        params: FullyConnectedParams::schema,
        build: build_fully_connected,
    },
    OpDef {
        name: "linalg_gemm2",
        aliases: &["_linalg_gemm2"],
        args: &["A", "B"],
        doc: "alpha·op(A)·op(B) over the last two axes, batched over the leading ones.",
        params: LinalgGemm2Params::schema,
        build: build_linalg_gemm2,
    },
    OpDef {
        name: "Embedding",
        aliases: &[],
        args: &["data", "weight"],
        doc: "Rows of weight (input_dim, output_dim) at the indices in data; out-of-range indices are clipped.",
        params: EmbeddingParams::schema,
        build: build_embedding,
    },
];
