//! The Python module `simscan._native`: a thin layer over `simscan-core`.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// XXH3-128 digest of `data` (16 bytes, as `xxhash.xxh3_128(data).digest()`).
#[pyfunction]
fn checksum<'py>(py: Python<'py>, data: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &simscan_core::checksum::full(data))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(checksum, m)?)?;
    Ok(())
}
