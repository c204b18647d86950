//! `depth_to_space` and `space_to_depth`: move `block_size × block_size` blocks between the
//! channel axis and the two spatial axes of an NCHW array. Each is a reshape, a transpose and a
//! reshape (one strided copy); each one's gradient is the other with the same block size.

use std::sync::Arc;

use super::params::{OpDef, OpParams};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};

/// One direction of the block move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpaceDepth {
    /// true: `depth_to_space`; false: `space_to_depth`.
    pub to_space: bool,
    pub block: usize,
}

impl SpaceDepth {
    fn op_name(&self) -> &'static str {
        if self.to_space {
            "depth_to_space"
        } else {
            "space_to_depth"
        }
    }

    /// (intermediate shape, permutation, output shape) for data of `shape`.
    fn plan(&self, shape: &[usize]) -> Result<(Vec<usize>, Vec<i64>, Vec<usize>)> {
        let op = self.op_name();
        let [n, c, h, w] = *shape else {
            return Err(Error::Shape(format!("{op}: data must be 4-D (N, C, H, W), got shape {}", fmt_shape(shape))));
        };
        let b = self.block;
        if self.to_space {
            if !c.is_multiple_of(b * b) {
                return Err(Error::Shape(format!(
                    "{op}: the channel axis ({c}) of data {} must be a multiple of block_size² = {}",
                    fmt_shape(shape),
                    b * b
                )));
            }
            let c2 = c / (b * b);
            Ok((vec![n, b, b, c2, h, w], vec![0, 3, 4, 1, 5, 2], vec![n, c2, h * b, w * b]))
        } else {
            if !h.is_multiple_of(b) || !w.is_multiple_of(b) {
                return Err(Error::Shape(format!(
                    "{op}: the spatial axes ({h}, {w}) of data {} must be multiples of block_size = {b}",
                    fmt_shape(shape)
                )));
            }
            Ok((vec![n, c, h / b, b, w / b, b], vec![0, 3, 5, 1, 2, 4], vec![n, c * b * b, h / b, w / b]))
        }
    }
}

impl Op for SpaceDepth {
    fn name(&self) -> &'static str {
        self.op_name()
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("block_size", self.block.to_string())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (_, _, out) = self.plan(&inputs[0].shape)?;
        Ok(vec![Meta::new(&out, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (mid, perm, _) = self.plan(inputs[0].shape())?;
        let moved = inputs[0].to_contiguous().reshape(&mid)?.transpose(&perm)?;
        outputs[0].write_from(&moved)
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let back = SpaceDepth { to_space: !self.to_space, block: self.block };
        Ok(vec![Some(g.apply1(back, &[og[0]])?)])
    }
}

/// `depth_to_space`'s and `space_to_depth`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct BlockParams {
    /// Side of the square blocks moved between depth and space.
    pub block_size: i64,
}

fn build(a: &Attrs, to_space: bool) -> Result<OpRef> {
    let p = BlockParams::parse(a)?;
    let op = if to_space { "depth_to_space" } else { "space_to_depth" };
    let block = usize::try_from(p.block_size)
        .ok()
        .filter(|&b| b >= 1 && b.checked_mul(b).is_some())
        .ok_or_else(|| Error::Value(format!("{op}: block_size must be a positive integer, got {}", p.block_size)))?;
    Ok(Arc::new(SpaceDepth { to_space, block }))
}

/// The block moves' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "depth_to_space",
        aliases: &[],
        args: &["data"],
        doc: "Moves blocks of channels into space: (N, C, H, W) to (N, C/b², H·b, W·b).",
        params: BlockParams::schema,
        build: |a| build(a, true),
    },
    OpDef {
        name: "space_to_depth",
        aliases: &[],
        args: &["data"],
        doc: "Moves spatial blocks into channels: (N, C, H, W) to (N, C·b², H/b, W/b).",
        params: BlockParams::schema,
        build: |a| build(a, false),
    },
];
