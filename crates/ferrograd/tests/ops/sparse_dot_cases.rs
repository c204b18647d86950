//! `_sparse_dot_csr` and `_sparse_dot_dense_csr` against products written out by hand.

use ferrograd::DType;

use crate::common::*;

/// The csr matrix [[0, 1, 0], [2, 0, 3]]: (data, indices, indptr).
fn csr() -> [ferrograd::NDArray; 3] {
    [f64s(&[1.0, 2.0, 3.0], &[3]), arr(&[1.0, 0.0, 2.0], &[3], DType::I64), arr(&[0.0, 1.0, 3.0], &[3], DType::I64)]
}

pub fn csr_dense(name: &'static str) {
    let [data, idx, ptr] = csr();
    let rhs = f64s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]);
    let y = call1(name, &[data.clone(), idx.clone(), ptr.clone(), rhs], &[("num_cols", int(3))]);
    // row 0 = rhs[1]; row 1 = 2 rhs[0] + 3 rhs[2]
    check_arr("csr·dense", &y, &[2, 2], DType::F64, &[3.0, 4.0, 17.0, 22.0], 0.0, 0.0);
    let rhs_t = f64s(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let params = [("num_cols", int(3)), ("transpose_a", boolean(true))];
    let yt = call1(name, &[data.clone(), idx.clone(), ptr.clone(), rhs_t], &params);
    // csrᵀ = [[0, 2], [1, 0], [0, 3]]
    check_arr("csrᵀ·dense", &yt, &[3, 2], DType::F64, &[6.0, 8.0, 1.0, 2.0, 9.0, 12.0], 0.0, 0.0);
    let bad = ferrograd::call(name, &[data, idx, ptr, f64s(&[1.0; 4], &[2, 2])], &[("num_cols", int(3))]);
    assert!(matches!(bad, Err(ferrograd::Error::Shape(m)) if m.contains(name)));
}

pub fn dense_csr(name: &'static str) {
    let [data, idx, ptr] = csr();
    let lhs = f64s(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let y = call1(name, &[lhs, data.clone(), idx.clone(), ptr.clone()], &[("num_cols", int(3))]);
    // [[1, 2], [3, 4]] · [[0, 1, 0], [2, 0, 3]]
    check_arr("dense·csr", &y, &[2, 3], DType::F64, &[4.0, 1.0, 6.0, 8.0, 3.0, 12.0], 0.0, 0.0);
    let out_of_bounds = arr(&[1.0, 0.0, 7.0], &[3], DType::I64);
    let bad = ferrograd::call(name, &[f64s(&[1.0; 4], &[2, 2]), data, out_of_bounds, ptr], &[("num_cols", int(3))]);
    assert!(matches!(bad, Err(ferrograd::Error::Value(m)) if m.contains("outside")));
}
