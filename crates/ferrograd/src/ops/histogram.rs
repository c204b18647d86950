//! `_histogram`: counts (int64) of the flattened data in bins, and the bin edges. Bins are either
//! `bin_cnt` equal-width bins over `range` (both or neither, as MXNet), or the edges given as a
//! second input (increasing; the last bin includes its right edge). Values outside the bins and
//! NaN are not counted. Not differentiable.

use std::sync::Arc;

use ferrograd_kernels::Element;

use super::nn::float_only;
use super::params::{OpDef, OpParams};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

/// `_histogram(data, bins?, bin_cnt=None, range=None)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    /// `Some((count, lo, hi))`: uniform bins; `None`: edges from the `bins` input.
    pub uniform: Option<(usize, f64, f64)>,
}

/// The bin of `v` among increasing `edges` (last bin closed), if any.
fn bin_of(v: f64, edges: &[f64]) -> Option<usize> {
    let n = edges.len().checked_sub(1)?;
    if n == 0 || v.is_nan() || v < edges[0] || v > edges[n] {
        return None;
    }
    // First edge greater than v, minus one; v == last edge falls in the last bin.
    let i = edges.partition_point(|&e| e <= v);
    Some(i.saturating_sub(1).min(n - 1))
}

impl Op for Histogram {
    fn name(&self) -> &'static str {
        "_histogram"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        if self.uniform.is_some() {
            &["data"]
        } else {
            &["data", "bins"]
        }
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        match self.uniform {
            Some((n, lo, hi)) => vec![("bin_cnt", n.to_string()), ("range", format!("({lo}, {hi})"))],
            None => Vec::new(),
        }
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = inputs[0].dtype;
        let edge_dt = if dt.is_float() { dt } else { DType::F32 };
        let n = match self.uniform {
            Some((n, ..)) => n,
            None => {
                let b = &inputs[1];
                float_only("_histogram", "bins", b.dtype)?;
                if b.shape.len() != 1 || b.shape[0] < 2 {
                    return Err(Error::Shape(format!(
                        "_histogram: bins must be a 1-D array of at least 2 edges, got shape {}",
                        fmt_shape(&b.shape)
                    )));
                }
                return Ok(vec![Meta::new(&[b.shape[0] - 1], DType::I64), b.clone()]);
            }
        };
        Ok(vec![Meta::new(&[n], DType::I64), Meta::new(&[n + 1], edge_dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let data = inputs[0].to_f64_vec();
        let edges: Vec<f64> = match self.uniform {
            Some((n, lo, hi)) => {
                // An empty range widens to one unit around it (as NumPy does).
                let (lo, hi) = if lo == hi { (lo - 0.5, hi + 0.5) } else { (lo, hi) };
                (0..=n).map(|i| lo + (hi - lo) * i as f64 / n as f64).collect()
            }
            None => {
                let e = inputs[1].to_f64_vec();
                if let Some(i) = (1..e.len()).find(|&i| e[i].is_nan() || e[i - 1].is_nan() || e[i] <= e[i - 1]) {
                    return Err(Error::Value(format!(
                        "_histogram: bins must increase monotonically, but bins[{i}] = {} follows {}",
                        e[i],
                        e[i - 1]
                    )));
                }
                e
            }
        };
        let mut counts = vec![0i64; edges.len() - 1];
        for v in data {
            if let Some(b) = bin_of(v, &edges) {
                counts[b] += 1;
            }
        }
        outputs[0].write_out::<i64, _>(|o| o.copy_from_slice(&counts))?;
        with_dtype!(outputs[1].dtype(), T => {
            outputs[1].write_out::<T, _>(|o| o.iter_mut().zip(&edges).for_each(|(d, &e)| *d = T::from_f64(e)))
        })
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None; i.len()])
    }
}

/// `_histogram`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct HistogramParams {
    /// Number of equal-width bins (with `range`; without both, the `bins` input gives the edges).
    #[param(default = None)]
    pub bin_cnt: Option<i64>,
    /// (lower, upper) range of the equal-width bins.
    #[param(default = None)]
    pub range: Option<Vec<f64>>,
}

fn histogram_op(a: &Attrs) -> Result<OpRef> {
    let p = HistogramParams::parse(a)?;
    let uniform = match (p.bin_cnt, p.range) {
        (None, None) => None,
        (Some(n), Some(r)) => {
            let n = usize::try_from(n)
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| Error::Value(format!("_histogram: bin_cnt must be at least 1, got {n}")))?;
            let [lo, hi] = r[..] else {
                return Err(Error::Value(format!("_histogram: range must be (lower, upper), got {r:?}")));
            };
            if !lo.is_finite() || !hi.is_finite() || lo > hi {
                return Err(Error::Value(format!("_histogram: range ({lo}, {hi}) must be finite with lower <= upper")));
            }
            Some((n, lo, hi))
        }
        _ => return Err(Error::Value("_histogram: bin_cnt and range must be given together (or neither)".into())),
    };
    Ok(Arc::new(Histogram { uniform }))
}

/// `_histogram`'s declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "_histogram",
    aliases: &[],
    args: &["data", "bins?"],
    doc: "Counts of the flattened data in bins (int64) and the bin edges: bin_cnt equal bins over range, or \
          the edges given as `bins`.",
    params: HistogramParams::schema,
    build: histogram_op,
}];
