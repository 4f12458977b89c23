//! Sketches of fingerprint sets for `simscan.similarity.minhash` and
//! `simscan.similarity.simhash_compressed`: MinHash signatures of a CSR of sets, and simhash
//! tables (raw or compressed) with batched look-ups.

use numpy::ndarray::Ix2;
use numpy::{PyArray, PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use simscan_core::{minhash, simtables};

use crate::detached;

/// Offsets of a CSR over `n` values, checked (non-decreasing, from 0 up to at most `n`).
fn csr_offsets(offsets: &[i64], n: usize) -> PyResult<Vec<usize>> {
    let ok = offsets.first().is_none_or(|&o| o >= 0)
        && offsets.windows(2).all(|w| w[0] <= w[1])
        && offsets.last().is_none_or(|&o| o as u64 <= n as u64);
    if !ok {
        return Err(PyValueError::new_err(
            "offsets must ascend from 0 within the values",
        ));
    }
    Ok(offsets.iter().map(|&o| o as usize).collect())
}

/// MinHash sketches (uint32, rows × permutations) of the sets `values[offsets[r]:offsets[r+1]]`,
/// one permutation per seed; an empty set's entries are all 2**32 - 1.
#[pyfunction]
fn minhash_sketch<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'py, i64>,
    values: PyReadonlyArray1<'py, u64>,
    seeds: PyReadonlyArray1<'py, u64>,
) -> PyResult<Bound<'py, PyArray<u32, Ix2>>> {
    let values = values.as_slice()?;
    let offsets = csr_offsets(offsets.as_slice()?, values.len())?;
    let seeds = seeds.as_slice()?;
    let rows = offsets.len().saturating_sub(1);
    let out = detached(py, || {
        let mut out = vec![0u32; rows * seeds.len()];
        minhash::sketch_rows(&offsets, values, seeds, &mut out);
        out
    })?;
    PyArray1::from_vec(py, out).reshape([rows, seeds.len()])
}

/// A CSR: (offsets, values).
type Csr<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<u64>>);

/// The k + 1 sorted tables of a set of 64-bit simhashes, raw (`block` 0) or compressed in blocks
/// of `block` entries.
#[pyclass(frozen, module = "simscan._native")]
struct SimhashTables {
    inner: simtables::Tables,
}

#[pymethods]
impl SimhashTables {
    #[new]
    fn new(
        py: Python<'_>,
        values: PyReadonlyArray1<'_, u64>,
        k: u32,
        block: usize,
    ) -> PyResult<Self> {
        if k >= 64 {
            return Err(PyValueError::new_err("k must be in 0..63"));
        }
        let v = values.as_slice()?;
        let inner = detached(py, || simtables::Tables::new(v, k, block))?;
        Ok(SimhashTables { inner })
    }

    /// (offsets, values): for query i, `values[offsets[i]:offsets[i+1]]` are the stored values
    /// within distance k of it, ascending (a value stored twice comes twice).
    fn lookup<'py>(
        &self,
        py: Python<'py>,
        queries: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<Csr<'py>> {
        let q = queries.as_slice()?;
        let (offsets, found) = detached(py, || {
            let mut found = Vec::new();
            let mut offsets = Vec::with_capacity(q.len() + 1);
            offsets.push(0i64);
            for &x in q {
                self.inner.lookup(x, &mut found);
                offsets.push(found.len() as i64);
            }
            (offsets, found)
        })?;
        Ok((
            PyArray1::from_vec(py, offsets),
            PyArray1::from_vec(py, found),
        ))
    }

    /// Table `t`'s entries: the values rotated so that block t leads, ascending.
    fn table<'py>(&self, py: Python<'py>, t: usize) -> PyResult<Bound<'py, PyArray1<u64>>> {
        if t > self.inner.k() as usize {
            return Err(PyValueError::new_err("no such table"));
        }
        Ok(PyArray1::from_vec(
            py,
            detached(py, || self.inner.table(t))?,
        ))
    }

    /// Bytes the tables hold.
    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.bytes()
    }

    #[getter]
    fn k(&self) -> u32 {
        self.inner.k()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SimhashTables>()?;
    m.add_function(wrap_pyfunction!(minhash_sketch, m)?)?;
    Ok(())
}
