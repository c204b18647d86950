//! The executor's memory plan: values whose lifetimes do not overlap share one buffer.
//!
//! The schedule is fixed (forward steps, then backward steps), so each value's lifetime is known
//! before anything runs: from the step that writes it to the last step that reads it. Walking
//! the schedule once, an output takes the smallest free buffer of its dtype that fits (growing
//! the largest free one when none does), and a buffer returns to the free list after the last
//! read of its value. A buffer is never shared by an input and an output of one step.

use ferrograd_kernels::Layout;

use crate::dtype::DType;
use crate::ndarray::{Meta, NDArray};

/// One scheduled op application, by value index.
#[derive(Clone, Debug)]
pub struct StepIo {
    pub inputs: Vec<u32>,
    pub outputs: Vec<u32>,
}

/// The planned storage of every value and what it saves.
pub struct Plan {
    /// A handle over the value's planned buffer (`None` for values stored elsewhere).
    pub storage: Vec<Option<NDArray>>,
    /// Bytes of all planned buffers.
    pub planned_bytes: usize,
    /// Bytes if every planned value had its own buffer.
    pub naive_bytes: usize,
}

struct Slot {
    dtype: DType,
    cap: usize,
}

/// Plans buffers for the values written by `steps`, except `external` ones (bound arrays, head
/// gradients, gradients written straight into the user's arrays). `keep` values live to the end.
pub fn plan(steps: &[StepIo], metas: &[Meta], external: &[bool], keep: &[bool]) -> crate::Result<Plan> {
    const NEVER: usize = usize::MAX - 1;
    let n = metas.len();
    let mut last_use = vec![NEVER; n];
    for (s, st) in steps.iter().enumerate() {
        for &i in &st.inputs {
            let lu = &mut last_use[i as usize];
            *lu = if *lu == NEVER { s } else { (*lu).max(s) };
        }
    }
    for (v, k) in keep.iter().enumerate() {
        if *k {
            last_use[v] = usize::MAX;
        }
    }
    let numel = |v: usize| metas[v].shape.iter().product::<usize>();
    let mut slots: Vec<Slot> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut slot_of: Vec<Option<usize>> = vec![None; n];
    let mut naive = 0usize;
    for (s, st) in steps.iter().enumerate() {
        for &o in &st.outputs {
            let o = o as usize;
            if external[o] || slot_of[o].is_some() {
                continue;
            }
            let (need, dtype) = (numel(o), metas[o].dtype);
            naive += need * dtype.size();
            let fits = free.iter().enumerate().filter(|(_, &f)| slots[f].dtype == dtype && slots[f].cap >= need);
            let pick = fits.min_by_key(|(_, &f)| slots[f].cap).map(|(i, _)| i).or_else(|| {
                let same = free.iter().enumerate().filter(|(_, &f)| slots[f].dtype == dtype);
                same.max_by_key(|(_, &f)| slots[f].cap).map(|(i, _)| i)
            });
            let slot = match pick {
                Some(i) => {
                    let f = free.swap_remove(i);
                    slots[f].cap = slots[f].cap.max(need);
                    f
                }
                None => {
                    slots.push(Slot { dtype, cap: need });
                    slots.len() - 1
                }
            };
            slot_of[o] = Some(slot);
        }
        // Release after the step: values read for the last time here, and outputs nobody reads.
        let mut release = |v: usize| {
            if let Some(f) = slot_of[v] {
                if (last_use[v] == s || last_use[v] == NEVER) && !free.contains(&f) {
                    free.push(f);
                }
            }
        };
        st.inputs.iter().for_each(|&i| release(i as usize));
        st.outputs.iter().for_each(|&o| release(o as usize));
    }
    let buffers = slots
        .iter()
        .map(|sl| NDArray::try_uninit("bind (memory plan)", &[sl.cap], sl.dtype))
        .collect::<crate::Result<Vec<NDArray>>>()?;
    let storage =
        (0..n).map(|v| slot_of[v].map(|f| buffers[f].with_layout(Layout::contiguous(&metas[v].shape)))).collect();
    let planned_bytes = slots.iter().map(|sl| sl.cap * sl.dtype.size()).sum();
    Ok(Plan { storage, planned_bytes, naive_bytes: naive })
}
