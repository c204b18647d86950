//! `dot` and `batch_dot` with `transpose_a` / `transpose_b`.
//!
//! MXNet `dot` contracts the last axis of `lhs` with the first axis of `rhs` (after the optional
//! transposes, which for N-d operands move the first axis to the end or vice versa, as in MXNet).
//! `batch_dot` multiplies `(B, M, K)·(B, K, N)`. Transposes are strides, never copies.

use ferrograd_kernels::matmul::{gemm, matmul_generic};
use ferrograd_kernels::Layout;

use super::params::{OpDef, OpParams};
use super::widen::{forward_widened, wider};
use super::{AttrValue, Ctx, Grad, Op, Saves, Val};
use super::{Attrs, OpRef};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;
use ferrograd_kernels::Element;

/// `dot` (or `batch_dot` when `batch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dot {
    pub transpose_a: bool,
    pub transpose_b: bool,
    pub batch: bool,
}

/// (batch, rows, cols) view of an operand as the matrix used in the product, plus its strides.
struct MatView {
    batch: usize,
    rows: usize,
    cols: usize,
    batch_stride: isize,
    rs: isize,
    cs: isize,
    offset: usize,
}

/// `(batch, row, col)` of element `index` of a contiguous operand in its matrix view (`None` if the
/// view's strides do not decompose it, e.g. negative strides).
fn locate(v: &MatView, index: usize) -> Option<(usize, usize, usize)> {
    let (bs, rs, cs) =
        (usize::try_from(v.batch_stride).ok()?, usize::try_from(v.rs).ok()?, usize::try_from(v.cs).ok()?);
    let (bi, rem) = if v.batch > 1 && bs > 0 { (index / bs, index % bs) } else { (0, index) };
    let candidates = [
        (cs == 1 && v.cols > 0).then(|| (rem / v.cols, rem % v.cols)),
        (rs == 1 && v.rows > 0).then(|| (rem % v.rows, rem / v.rows)),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|&(r, c)| r < v.rows && c < v.cols && bi < v.batch && bi * bs + r * rs + c * cs == index)
        .map(|(r, c)| (bi, r, c))
}

impl Dot {
    fn err(&self, a: &[usize], b: &[usize]) -> Error {
        Error::Shape(format!(
            "{}: shapes {} and {} are incompatible (transpose_a={}, transpose_b={})",
            self.name(),
            fmt_shape(a),
            fmt_shape(b),
            self.transpose_a,
            self.transpose_b
        ))
    }

    /// The operand as a (batch, rows, cols) strided matrix. For plain `dot`, N-d operands are
    /// flattened to 2-d: lhs → (prod(shape[..-1]), shape[-1]), rhs → (shape[0], prod(shape[1..])).
    fn view(&self, l: &Layout, is_lhs: bool) -> Option<MatView> {
        let t = if is_lhs { self.transpose_a } else { self.transpose_b };
        let s = &l.shape;
        if self.batch {
            if s.len() != 3 {
                return None;
            }
            let (r, c, rs, cs) = (s[1], s[2], l.strides[1], l.strides[2]);
            let (rows, cols, rs, cs) = if t { (c, r, cs, rs) } else { (r, c, rs, cs) };
            return Some(MatView { batch: s[0], rows, cols, batch_stride: l.strides[0], rs, cs, offset: l.offset });
        }
        if s.is_empty() {
            return None;
        }
        // Flatten to 2-d: needs the merged axes to be contiguous with each other.
        let split = if is_lhs != t { s.len() - 1 } else { 1 };
        let split = split.min(s.len());
        let merged = |axes: std::ops::Range<usize>| -> Option<(usize, isize)> {
            let n: usize = s[axes.clone()].iter().product();
            if axes.is_empty() {
                return Some((1, 0));
            }
            let inner = axes.end - 1;
            let mut expect = l.strides[inner];
            for d in axes.clone().rev() {
                if s[d] != 1 && l.strides[d] != expect {
                    return None;
                }
                expect = l.strides[d] * s[d] as isize;
            }
            Some((n, l.strides[inner]))
        };
        let (r, rs) = merged(0..split)?;
        let (c, cs) = merged(split..s.len())?;
        let (rows, cols, rs, cs) = if t { (c, r, cs, rs) } else { (r, c, rs, cs) };
        Some(MatView { batch: 1, rows, cols, batch_stride: 0, rs, cs, offset: l.offset })
    }

    fn out_shape(&self, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
        let bad = || self.err(a, b);
        if self.batch {
            if a.len() != 3 || b.len() != 3 || a[0] != b[0] {
                return Err(bad());
            }
            let (m, ka) = if self.transpose_a { (a[2], a[1]) } else { (a[1], a[2]) };
            let (kb, n) = if self.transpose_b { (b[2], b[1]) } else { (b[1], b[2]) };
            if ka != kb {
                return Err(bad());
            }
            return Ok(vec![a[0], m, n]);
        }
        if a.is_empty() || b.is_empty() {
            return Err(bad());
        }
        // MXNet: transpose_a on N-d lhs moves its first axis last; transpose_b on rhs moves its
        // last axis first.
        let (a_keep, ka): (Vec<usize>, usize) =
            if self.transpose_a { (a[1..].to_vec(), a[0]) } else { (a[..a.len() - 1].to_vec(), a[a.len() - 1]) };
        let (kb, b_keep): (usize, Vec<usize>) =
            if self.transpose_b { (b[b.len() - 1], b[..b.len() - 1].to_vec()) } else { (b[0], b[1..].to_vec()) };
        if ka != kb {
            return Err(bad());
        }
        let mut out = a_keep;
        out.extend(b_keep);
        Ok(out)
    }
}

impl Op for Dot {
    fn name(&self) -> &'static str {
        if self.batch {
            "batch_dot"
        } else {
            "dot"
        }
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["lhs", "rhs"]
    }

    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if self.transpose_a {
            v.push(("transpose_a", AttrValue::Bool(true).to_mx_string()));
        }
        if self.transpose_b {
            v.push(("transpose_b", AttrValue::Bool(true).to_mx_string()));
        }
        v
    }

    fn infer_partial(
        &self,
        ins: &mut [super::partial::PartialShape],
        outs: &mut [super::partial::PartialShape],
    ) -> Result<()> {
        super::partial::dot(self.transpose_a, self.transpose_b, self.batch, ins, outs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (a, b) = (&inputs[0], &inputs[1]);
        if a.dtype != b.dtype {
            return Err(Error::DType(format!(
                "{}: operands must have the same dtype, got lhs {} and rhs {}",
                self.name(),
                a.dtype,
                b.dtype
            )));
        }
        let mut shape = self.out_shape(&a.shape, &b.shape)?;
        if shape.is_empty() && !crate::np_shape() {
            shape = vec![1];
        }
        Ok(vec![Meta::new(&shape, a.dtype)])
    }

    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (mut a, mut b) = (inputs[0].clone(), inputs[1].clone());
        let (va, vb) = loop {
            match (self.view(a.layout(), true), self.view(b.layout(), false)) {
                (Some(va), Some(vb)) => break (va, vb),
                (None, _) if !a.layout().is_contiguous() => a = a.to_contiguous_copy(),
                (_, None) if !b.layout().is_contiguous() => b = b.to_contiguous_copy(),
                _ => return Err(self.err(a.shape(), b.shape())),
            }
        };
        let (m, k, n) = (va.rows, va.cols, vb.cols);
        let dt = a.dtype();
        if let Some(wide) = wider(dt) {
            return forward_widened(self, ctx, &[a, b], outputs, dt, wide);
        }
        let (sa, sb) = (a.snapshot(), b.snapshot());
        with_dtype!(dt, T => {
            let (xa, xb) = (sa.typed::<T>()?, sb.typed::<T>()?);
            outputs[0].write_out::<T, _>(|out| {
                for bi in 0..va.batch {
                    let c = &mut out[bi * m * n..(bi + 1) * m * n];
                    let ao = (va.offset as isize + bi as isize * va.batch_stride) as usize;
                    let bo = (vb.offset as isize + bi as isize * vb.batch_stride) as usize;
                    matmul_any::<T>(m, n, k, xa, (ao, va.rs, va.cs), xb, (bo, vb.rs, vb.cs), c);
                }
            })
        })
    }

    /// `C = op(A)·op(B)` is linear in each operand: a change `δ` at `op(A)[r, c]` adds
    /// `δ·op(B)[c, :]` to row `r` of C; at `op(B)[r, c]` it adds `δ·op(A)[:, r]` to column `c`.
    fn add_input_delta(
        &self,
        inputs: &[NDArray],
        which: usize,
        index: usize,
        delta: f64,
        out: &mut NDArray,
    ) -> Result<bool> {
        let (a, b) = (&inputs[0], &inputs[1]);
        let dt = a.dtype();
        if which > 1 || dt == DType::F16 || !inputs[which].layout().is_contiguous() {
            return Ok(false);
        }
        let (Some(va), Some(vb)) = (self.view(a.layout(), true), self.view(b.layout(), false)) else {
            return Ok(false);
        };
        let Some((bi, r, c)) = locate(if which == 0 { &va } else { &vb }, index) else { return Ok(false) };
        let (m, n) = (va.rows, vb.cols);
        let (sa, sb) = (a.snapshot(), b.snapshot());
        let at = |v: &MatView, bi: usize, i: usize, j: usize| {
            (v.offset as isize + bi as isize * v.batch_stride + i as isize * v.rs + j as isize * v.cs) as usize
        };
        with_dtype!(dt, T => {
            let (xa, xb) = (sa.typed::<T>()?, sb.typed::<T>()?);
            out.write_out::<T, _>(|o| {
                let o = &mut o[bi * m * n..(bi + 1) * m * n];
                if which == 0 {
                    for (j, y) in o[r * n..(r + 1) * n].iter_mut().enumerate() {
                        *y = T::from_f64(delta * xb[at(&vb, bi, c, j)].to_f64() + y.to_f64());
                    }
                } else {
                    for i in 0..m {
                        let y = &mut o[i * n + c];
                        *y = T::from_f64(delta * xa[at(&va, bi, i, r)].to_f64() + y.to_f64());
                    }
                }
            })?;
        });
        Ok(true)
    }

    fn saves(&self) -> Saves {
        Saves::Inputs
    }

    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let (a, b, gy) = (inputs[0], inputs[1], out_grads[0]);
        let (sa, sb) = (g.shape(a), g.shape(b));
        let batch = self.batch;
        // Work on 2-d (or 3-d batched) views so the rules are the textbook ones.
        let (a2, b2, gy2) = if batch {
            (a, b, gy)
        } else {
            let a_rows =
                if self.transpose_a { sa[1..].iter().product() } else { sa[..sa.len() - 1].iter().product::<usize>() };
            let a2 = if self.transpose_a {
                g.reshape(a, &[sa[0], a_rows])?
            } else {
                g.reshape(a, &[a_rows, sa[sa.len() - 1]])?
            };
            let b_cols: usize =
                if self.transpose_b { sb[..sb.len() - 1].iter().product() } else { sb[1..].iter().product() };
            let b2 = if self.transpose_b {
                g.reshape(b, &[b_cols, sb[sb.len() - 1]])?
            } else {
                g.reshape(b, &[sb[0], b_cols])?
            };
            let gy2 = g.reshape(gy, &[a_rows, b_cols])?;
            (a2, b2, gy2)
        };
        // C = op(A)·op(B): dA = dC·op(B)ᵀ (transposed back if A was), dB = op(A)ᵀ·dC (likewise).
        // An input that needs no gradient (a constant operand) costs no product.
        let ga = match (g.needs_grad(a), self.transpose_a) {
            (false, _) => None,
            (true, true) => Some(g.dot(b2, gy2, self.transpose_b, true, batch)?),
            (true, false) => Some(g.dot(gy2, b2, false, !self.transpose_b, batch)?),
        };
        let gb = match (g.needs_grad(b), self.transpose_b) {
            (false, _) => None,
            (true, true) => Some(g.dot(gy2, a2, true, self.transpose_a, batch)?),
            (true, false) => Some(g.dot(a2, gy2, !self.transpose_a, false, batch)?),
        };
        let ga = ga.map(|v| g.reshape(v, &sa)).transpose()?;
        let gb = gb.map(|v| g.reshape(v, &sb)).transpose()?;
        Ok(vec![ga, gb])
    }
}

#[allow(clippy::too_many_arguments)]
fn matmul_any<T: crate::dtype::DTypeElem>(
    m: usize,
    n: usize,
    k: usize,
    a: &[T],
    av: (usize, isize, isize),
    b: &[T],
    bv: (usize, isize, isize),
    c: &mut [T],
) {
    // Floats go to the fast GEMM; the casts are identity casts chosen by dtype.
    match T::DTYPE {
        DType::F32 => gemm::<f32>(m, n, k, cast(a), av, cast(b), bv, cast_mut(c), false),
        DType::F64 => gemm::<f64>(m, n, k, cast(a), av, cast(b), bv, cast_mut(c), false),
        _ => matmul_generic(m, n, k, a, av, b, bv, c),
    }
}

fn cast<T: crate::dtype::DTypeElem, U: crate::dtype::DTypeElem>(s: &[T]) -> &[U] {
    assert_eq!(T::DTYPE, U::DTYPE, "cast between element types of different dtypes"); // ok: internal invariant
                                                                                      // SAFETY: T and U have the same DType, hence are the same Rust type.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const U, s.len()) }
}

fn cast_mut<T: crate::dtype::DTypeElem, U: crate::dtype::DTypeElem>(s: &mut [T]) -> &mut [U] {
    assert_eq!(T::DTYPE, U::DTYPE, "cast between element types of different dtypes"); // ok: internal invariant
                                                                                      // SAFETY: T and U have the same DType, hence are the same Rust type.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut U, s.len()) }
}

/// `dot`/`batch_dot`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct DotParams {
    /// Use the transpose of lhs (of its last two axes for batch_dot).
    #[param(default = false)]
    pub transpose_a: bool,
    /// Use the transpose of rhs (of its last two axes for batch_dot).
    #[param(default = false)]
    pub transpose_b: bool,
    /// Storage type of the output (accepted for compatibility; outputs are dense).
    #[param(default = None)]
    pub forward_stype: Option<String>,
}

fn build_dot(a: &Attrs) -> Result<OpRef> {
    let p = DotParams::parse(a)?;
    Ok(std::sync::Arc::new(Dot { transpose_a: p.transpose_a, transpose_b: p.transpose_b, batch: a.op == "batch_dot" }))
}

/// The matrix products' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "dot",
        aliases: &[],
        args: &["lhs", "rhs"],
        doc: "Matrix product of lhs and rhs.",
        params: DotParams::schema,
        build: build_dot,
    },
    OpDef {
        name: "batch_dot",
        aliases: &[],
        args: &["lhs", "rhs"],
        doc: "Batched matrix product (B,M,K)·(B,K,N).",
        params: DotParams::schema,
        build: build_dot,
    },
];
