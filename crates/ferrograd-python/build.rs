//! Exposes PyO3's interpreter cfgs (`Py_LIMITED_API`, `Py_3_11`, ...) to this crate, so that the
//! buffer protocol (which needs `Py_buffer`, part of the stable ABI only from Python 3.11) is
//! compiled exactly when PyO3 supports it.

fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
