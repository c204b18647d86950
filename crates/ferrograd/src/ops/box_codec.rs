//! Box regression targets of MXNet's `contrib`: `box_encode` turns matched reference boxes into
//! normalised centre offsets against their anchors, `box_decode` turns predicted offsets back
//! into corner boxes. MXNet's gradients of both are zero; so are ours.

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::Element;

use super::boxes::BoxFormat;
use super::params::{parsed_op, OpDef, OpParams};
use super::{Ctx, Grad, Op, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

/// `[x, y, width, height]` of a corner box.
fn center_of(c: &[f64]) -> [f64; 4] {
    let (w, h) = (c[2] - c[0], c[3] - c[1]);
    [c[0] + w * 0.5, c[1] + h * 0.5, w, h]
}

/// Checks that every input is floating point and of the first input's dtype.
fn check_dtypes(op: &str, names: &[&str], inputs: &[Meta]) -> Result<()> {
    let dt = inputs[0].dtype;
    for (m, n) in inputs.iter().zip(names) {
        if !dt.is_float() || m.dtype != dt {
            return Err(Error::DType(format!(
                "{op}: argument '{n}' has dtype {}; every input must share one floating-point dtype ('{}' has {dt})",
                m.dtype, names[0]
            )));
        }
    }
    Ok(())
}

/// Writes `f(box index, [4 values])` into every box of the output, in parallel when large.
fn write_boxes(out: &mut NDArray, f: impl Fn(usize) -> [f64; 4] + Sync + Send) -> Result<()> {
    with_dtype!(out.dtype(), T => {
        out.write_out::<T, _>(|o| {
            par::for_each_chunk(o, Cost::Heavy, |first, chunk| {
                for (j, b) in chunk.chunks_exact_mut(4).enumerate() {
                    let v = f(first / 4 + j);
                    for (d, s) in b.iter_mut().zip(v) {
                        *d = T::from_f64(s);
                    }
                }
            })
        })
    })
}

// ---------------------------------------------------------------------------------------------

/// `box_encode(samples, matches, anchors, refs, means, stds)`: for each anchor with a positive
/// sample (> 0.5), the offsets of its matched reference box, `((x_r - x_a) / w_a, (y_r - y_a) /
/// h_a, ln(w_r / w_a), ln(h_r / h_a))`, minus `means` and divided by `stds`; zeros elsewhere. The
/// second output is the mask (1 for positive anchors).
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct BoxEncode {}

impl BoxEncode {
    const OP: &'static str = "_contrib_box_encode";

    /// `(B, N, M)` after checking the shapes fit together.
    fn dims(&self, s: &[&[usize]]) -> Result<(usize, usize, usize)> {
        let (samples, matches, anchors, refs, means, stds) = (s[0], s[1], s[2], s[3], s[4], s[5]);
        let bad = || {
            Error::Shape(format!(
                "{}: expected samples (B, N), matches (B, N), anchors (B or 1, N, 4), refs (B, M, 4), means (4,) \
                 and stds (4,); got shapes {}, {}, {}, {}, {} and {}",
                Self::OP,
                fmt_shape(samples),
                fmt_shape(matches),
                fmt_shape(anchors),
                fmt_shape(refs),
                fmt_shape(means),
                fmt_shape(stds)
            ))
        };
        if samples.len() != 2 || matches != samples || anchors.len() != 3 || refs.len() != 3 {
            return Err(bad());
        }
        let (b, n) = (samples[0], samples[1]);
        let fits = (anchors[0] == b || anchors[0] == 1) && anchors[1] == n && anchors[2] == 4;
        if !fits || refs[0] != b || refs[2] != 4 || means != [4] || stds != [4] {
            return Err(bad());
        }
        Ok((b, n, refs[1]))
    }
}

impl Op for BoxEncode {
    fn name(&self) -> &'static str {
        Self::OP
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["samples", "matches", "anchors", "refs", "means", "stds"]
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn output_names(&self) -> Option<&'static [&'static str]> {
        Some(&["output0", "output1"])
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        check_dtypes(Self::OP, self.arg_names(), inputs)?;
        let shapes: Vec<&[usize]> = inputs.iter().map(|m| &m.shape[..]).collect();
        let (b, n, _) = self.dims(&shapes)?;
        let out = Meta::new(&[b, n, 4], inputs[0].dtype);
        Ok(vec![out.clone(), out])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|x| x.shape()).collect();
        let (_, n, m) = self.dims(&shapes)?;
        let [samples, matches, anchors, refs, means, stds] = [0, 1, 2, 3, 4, 5].map(|i| inputs[i].to_f64_vec());
        let per_batch_anchors = shapes[2][0] != 1;
        // Only positive samples read their match, so only theirs must be in range.
        for (i, (&s, &k)) in samples.iter().zip(&matches).enumerate() {
            if s > 0.5 && !(k >= 0.0 && (k as usize) < m) {
                return Err(Error::Index(format!(
                    "{}: matches[{}, {}] = {k} is not a row of refs (shape {}) for a positive sample",
                    Self::OP,
                    i / n,
                    i % n,
                    fmt_shape(shapes[3])
                )));
            }
        }
        let positive = |i: usize| samples[i] > 0.5;
        write_boxes(&mut outputs[0], |i| {
            if !positive(i) {
                return [0.0; 4];
            }
            let r = (i / n) * m + matches[i] as usize;
            let a = if per_batch_anchors { i } else { i % n };
            let rc = center_of(&refs[r * 4..r * 4 + 4]);
            let ac = center_of(&anchors[a * 4..a * 4 + 4]);
            let t = [(rc[0] - ac[0]) / ac[2], (rc[1] - ac[1]) / ac[3], (rc[2] / ac[2]).ln(), (rc[3] / ac[3]).ln()];
            [0, 1, 2, 3].map(|d| (t[d] - means[d]) / stds[d])
        })?;
        write_boxes(&mut outputs[1], |i| [if positive(i) { 1.0 } else { 0.0 }; 4])
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None; 6]) // zero, as in MXNet
    }
}

// ---------------------------------------------------------------------------------------------

/// `box_decode(data, anchors, std0..std3, clip, format)`: the corner box of each predicted
/// offset `(dx, dy, dw, dh)` against its anchor: centre `(dx·std0·w_a + x_a, dy·std1·h_a + y_a)`,
/// size `(exp(min(dw·std2, clip))·w_a, exp(min(dh·std3, clip))·h_a)` (no clipping when
/// `clip <= 0`).
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct BoxDecode {
    /// Multiplies the first (x) offset.
    #[param(default = 1.0)]
    pub std0: f64,
    /// Multiplies the second (y) offset.
    #[param(default = 1.0)]
    pub std1: f64,
    /// Multiplies the third (log width) offset.
    #[param(default = 1.0)]
    pub std2: f64,
    /// Multiplies the fourth (log height) offset.
    #[param(default = 1.0)]
    pub std3: f64,
    /// If larger than 0, the scaled log-size offsets are clipped to at most this value.
    #[param(default = -1.0)]
    pub clip: f64,
    /// The anchors' encoding: "corner" [xmin, ymin, xmax, ymax] or "center" [x, y, width, height].
    #[param(default = BoxFormat::Center)]
    pub format: BoxFormat,
}

impl BoxDecode {
    const OP: &'static str = "_contrib_box_decode";

    fn check(&self, data: &[usize], anchors: &[usize]) -> Result<()> {
        let ok = data.len() == 3
            && data[2] == 4
            && anchors.len() == 3
            && (anchors[0] == 1 || anchors[0] == data[0])
            && anchors[1] == data[1]
            && anchors[2] == 4;
        if ok {
            return Ok(());
        }
        Err(Error::Shape(format!(
            "{}: expected data (B, N, 4) and anchors (1 or B, N, 4), got shapes {} and {}",
            Self::OP,
            fmt_shape(data),
            fmt_shape(anchors)
        )))
    }
}

impl Op for BoxDecode {
    fn name(&self) -> &'static str {
        Self::OP
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "anchors"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        check_dtypes(Self::OP, self.arg_names(), inputs)?;
        self.check(&inputs[0].shape, &inputs[1].shape)?;
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (ds, as_) = (inputs[0].shape(), inputs[1].shape());
        self.check(ds, as_)?;
        let (x, anchors) = (inputs[0].to_f64_vec(), inputs[1].to_f64_vec());
        let (n, per_batch) = (ds[1], as_[0] != 1);
        let clip = |v: f64| if self.clip > 0.0 { v.min(self.clip) } else { v };
        write_boxes(&mut outputs[0], |i| {
            let a = if per_batch { i } else { i % n };
            let a = &anchors[a * 4..a * 4 + 4];
            let [ax, ay, aw, ah] = match self.format {
                BoxFormat::Corner => center_of(a),
                BoxFormat::Center => [a[0], a[1], a[2], a[3]],
            };
            let d = &x[i * 4..i * 4 + 4];
            let (ox, oy) = (d[0] * self.std0 * aw + ax, d[1] * self.std1 * ah + ay);
            let hw = clip(d[2] * self.std2).exp() * aw * 0.5;
            let hh = clip(d[3] * self.std3).exp() * ah * 0.5;
            [ox - hw, oy - hh, ox + hw, oy + hh]
        })
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None, None]) // zero, as in MXNet
    }
}

/// The box codec ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_contrib_box_encode",
        aliases: &[],
        args: &["samples", "matches", "anchors", "refs", "means", "stds"],
        doc: "Encodes matched reference boxes as normalised centre offsets from their anchors (targets, masks).",
        params: BoxEncode::schema,
        build: parsed_op::<BoxEncode>,
    },
    OpDef {
        name: "_contrib_box_decode",
        aliases: &[],
        args: &["data", "anchors"],
        doc: "Decodes predicted centre offsets against anchors into corner boxes.",
        params: BoxDecode::schema,
        build: parsed_op::<BoxDecode>,
    },
];
