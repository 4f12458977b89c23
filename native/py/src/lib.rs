//! The Python module `simscan._native`: a thin, typed layer over `simscan-core`.
//!
//! Few coarse functions cross the boundary (a batch of files, one file, one text), never a call
//! per unit.  Long work runs with the GIL released.  A panic in the core never reaches Python
//! as a crash: per file it becomes a problem line, elsewhere a `RuntimeError`.

use numpy::{PyArray1, PyReadonlyArray1, PyReadwriteArray1};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use simscan_core::code;
use simscan_core::decode::{Codec, Decoder};
use simscan_core::detect::{self as det, Detected};
use simscan_core::evidence;
use simscan_core::fingerprint::{self, Fingerprints, FpParams, TextFingerprinter, Verdict};
use simscan_core::grouping;
use simscan_core::manber::{self, Params};
use simscan_core::normalize::Normalizer;
use simscan_core::read::{self, Problem, Read2};
use simscan_core::runs;
use simscan_core::{checksum, tables};
use std::panic::{catch_unwind, AssertUnwindSafe};

mod sketches;

/// Fingerprint parameters, built once from `FingerprintParams`.
#[pyclass(frozen, module = "simscan._native")]
struct NativeParams {
    p: FpParams,
}

#[pymethods]
impl NativeParams {
    #[new]
    #[pyo3(signature = (window, text_density, binary_density, text_anchor_density, binary_anchor_density,
                        text_anchor_length, level_units, winnow, text_chunk=1 << 18, binary_chunk=1 << 20))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        window: usize,
        text_density: u32,
        binary_density: u32,
        text_anchor_density: u32,
        binary_anchor_density: u32,
        text_anchor_length: usize,
        level_units: Vec<u64>,
        winnow: Vec<usize>,
        text_chunk: usize,
        binary_chunk: usize,
    ) -> PyResult<Self> {
        if winnow.is_empty()
            || winnow
                .iter()
                .any(|&w| w < 1 || w > simscan_core::winnow::D_CAP as usize)
        {
            return Err(PyValueError::new_err("winnowing windows must be 1..=128"));
        }
        let p = FpParams {
            text: Params {
                window,
                density: text_density,
                anchor_density: text_anchor_density,
                anchor_length: text_anchor_length,
                anchor_level: 0,
                level_units,
            },
            winnow,
            binary: Params {
                window,
                density: binary_density,
                anchor_density: binary_anchor_density,
                anchor_length: 0,
                anchor_level: 0,
                level_units: vec![],
            },
            text_chunk: text_chunk.max(1),
            binary_chunk: binary_chunk.max(1),
        };
        p.text.validate().map_err(PyValueError::new_err)?;
        Ok(NativeParams { p })
    }
}

fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| e.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".into())
}

/// Runs `f` with the GIL released; a panic becomes a `RuntimeError`.
fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    py.detach(|| catch_unwind(AssertUnwindSafe(f)))
        .map_err(|e| {
            PyRuntimeError::new_err(format!(
                "internal error in simscan's native core: {}",
                panic_message(e)
            ))
        })
}

/// (rolling, anchored) values.
type ValuePair<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>);
/// Normalised units and, when asked, the index of each one's source character.
type UnitsAndSources<'py> = (Bound<'py, PyArray1<u32>>, Option<Bound<'py, PyArray1<i64>>>);

fn u64s<'py>(py: Python<'py>, v: Vec<u64>) -> Bound<'py, PyArray1<u64>> {
    PyArray1::from_vec(py, v)
}

/// (size, checksum, partial, is_text, encoding, content_hash, rolling, anchored, simhash, units,
/// (d, unit, char, chars)): the meta arrays uint8, uint32, uint32, uint16, in the values' order.
fn fingerprints_tuple<'py>(py: Python<'py>, f: Fingerprints) -> PyResult<Bound<'py, PyTuple>> {
    let m = f.meta;
    (
        f.size,
        PyBytes::new(py, &f.checksum),
        f.partial,
        f.is_text,
        f.encoding,
        PyBytes::new(py, &f.content_hash),
        u64s(py, f.rolling),
        u64s(py, f.anchored),
        f.simhash,
        f.units,
        (
            PyArray1::from_vec(py, m.d),
            PyArray1::from_vec(py, m.unit),
            PyArray1::from_vec(py, m.char),
            PyArray1::from_vec(py, m.chars),
        ),
    )
        .into_pyobject(py)
}

/// The meta arrays as one little-endian blob, column by column (d, unit, char, chars: 11 bytes a
/// value), as the index stores them.
fn meta_blob(m: &simscan_core::fingerprint::Meta) -> Vec<u8> {
    let mut b = Vec::with_capacity(11 * m.d.len());
    b.extend_from_slice(&m.d);
    for x in &m.unit {
        b.extend_from_slice(&x.to_le_bytes());
    }
    for x in &m.char {
        b.extend_from_slice(&x.to_le_bytes());
    }
    for x in &m.chars {
        b.extend_from_slice(&x.to_le_bytes());
    }
    b
}

/// A verdict as Python sees it: the fingerprints' tuple, `("legacy", iso2022)` or `("foreign", encoding)`.
fn verdict_object<'py>(py: Python<'py>, v: Verdict) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Verdict::Done(f) => fingerprints_tuple(py, *f)?.into_any(),
        Verdict::Legacy { iso2022 } => ("legacy", iso2022).into_pyobject(py)?.into_any(),
        Verdict::Foreign { encoding } => ("foreign", encoding).into_pyobject(py)?.into_any(),
    })
}

/// Fingerprints of bytes in memory.  `encoding`: a legacy text's codec (chardet's verdict).
#[pyfunction]
#[pyo3(signature = (data, params, encoding=None, after_iso2022=false))]
fn fingerprint_bytes<'py>(
    py: Python<'py>,
    data: &[u8],
    params: &NativeParams,
    encoding: Option<String>,
    after_iso2022: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let p = &params.p;
    let v = detached(py, || {
        fingerprint::fingerprint_bytes(data, p, encoding.as_deref(), after_iso2022)
    })?;
    verdict_object(py, v)
}

/// Fingerprints of a file (its path as bytes), reading at most `limit` bytes (default: all).
#[pyfunction]
#[pyo3(signature = (path, params, limit=None, encoding=None, after_iso2022=false, follow=true))]
fn fingerprint_file<'py>(
    py: Python<'py>,
    path: &[u8],
    params: &NativeParams,
    limit: Option<u64>,
    encoding: Option<String>,
    after_iso2022: bool,
    follow: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let p = &params.p;
    let v = detached(py, || -> std::io::Result<Verdict> {
        let mut f = read::open_unseen(path, follow)?;
        let size = f.metadata()?.len();
        fingerprint::fingerprint(
            &mut f,
            size,
            limit.unwrap_or(u64::MAX),
            p,
            encoding.as_deref(),
            after_iso2022,
        )
    })?
    .map_err(PyErr::from)?;
    verdict_object(py, v)
}

/// What the reading of one file came to, for [`read_task`].
enum Read {
    Done(Verdict),
    /// Its first bytes may be a document's: Python's sniffing decides.
    MaybeDocument,
}

/// Test-only fault injection: a file whose name is the value of `SIMSCAN_FAULT_PANIC_NAME` makes
/// the core panic while reading it, so that the tests can see that a panic costs only that file.
fn injected_panic(path: &[u8]) {
    static NAME: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    let name = NAME.get_or_init(|| {
        std::env::var_os("SIMSCAN_FAULT_PANIC_NAME").map(|v| {
            use std::os::unix::ffi::OsStrExt;
            v.as_bytes().to_vec()
        })
    });
    if let Some(n) = name {
        if path.rsplit(|&b| b == b'/').next() == Some(n.as_slice()) {
            panic!("injected fault (SIMSCAN_FAULT_PANIC_NAME)");
        }
    }
}

/// Stops the reading of a scan that was cancelled: the files not begun are left (a problem
/// "cancelled", which the scanner never stores) and a large file stops at its next chunk.
#[pyclass(frozen, module = "simscan._native")]
struct StopFlag {
    flag: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

#[pymethods]
impl StopFlag {
    #[new]
    fn new() -> Self {
        StopFlag {
            flag: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
        }
    }

    fn set(&self) {
        self.flag.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    #[getter]
    fn is_set(&self) -> bool {
        self.flag.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Reads and fingerprints a scanner task's files, `[(slot, path, size), ...]`, with the GIL
/// released.  Returns `[(slot, key, payload), ...]`: `key` the (device, inode, size, mtime_ns,
/// ctime_ns) read; `payload` the scanner's tuple (is_text, encoding, checksum, partial,
/// content_hash, simhash, units, fingerprints as little-endian uint64 bytes, rolling count, bytes
/// read, note, meta blob (see `meta_blob`)), for a legacy text `("legacy", data or None, iso2022)`,
/// for a file whose first bytes may be a document's `("maybe-document", data or None)`; with `key` None,
/// `payload` is the problem: a sentence, or an errno for the caller to word.
#[pyfunction]
#[pyo3(signature = (items, follow, params, max_fingerprints, stop=None))]
fn read_task<'py>(
    py: Python<'py>,
    items: Vec<(usize, Vec<u8>, u64)>,
    follow: bool,
    params: &NativeParams,
    max_fingerprints: usize,
    stop: Option<&StopFlag>,
) -> PyResult<Vec<Bound<'py, PyTuple>>> {
    let p = &params.p;
    let never = std::sync::atomic::AtomicBool::new(false);
    let stop: &std::sync::atomic::AtomicBool = stop.map_or(&never, |s| &s.flag);
    let done = py.detach(|| {
        items
            .iter()
            .map(|(slot, path, _)| {
                let r = catch_unwind(AssertUnwindSafe(
                    || -> Result<(read::StatKey, Read, Option<Vec<u8>>), Problem> {
                        injected_panic(path);
                        match read::read_file(path, follow, p, stop)? {
                            Read2::Small(key, data) => {
                                if read::maybe_document(
                                    &data[..data.len().min(read::DOCUMENT_HEAD)],
                                ) {
                                    return Ok((key, Read::MaybeDocument, Some(data)));
                                }
                                let v = fingerprint::fingerprint_bytes(&data, p, None, false);
                                let keep =
                                    matches!(v, Verdict::Legacy { .. } | Verdict::Foreign { .. });
                                Ok((key, Read::Done(v), keep.then_some(data)))
                            }
                            Read2::Large(key, v) => Ok((key, Read::Done(v), None)),
                            Read2::MaybeDocument(key) => Ok((key, Read::MaybeDocument, None)),
                        }
                    },
                ));
                (*slot, r)
            })
            .collect::<Vec<_>>()
    });
    let mut out = Vec::with_capacity(done.len());
    for (slot, r) in done {
        let t = match r {
            Err(e) => (
                slot,
                py.None(),
                format!(
                    "could not be fingerprinted: internal error ({})",
                    panic_message(e)
                ),
            )
                .into_pyobject(py)?,
            Ok(Err(Problem::Message(m))) => (slot, py.None(), m).into_pyobject(py)?,
            Ok(Err(Problem::Os(code))) => (slot, py.None(), code).into_pyobject(py)?,
            Ok(Ok((key, Read::MaybeDocument, data))) => {
                let d = data.map(|d| PyBytes::new(py, &d));
                (slot, key, ("maybe-document", d)).into_pyobject(py)?
            }
            Ok(Ok((key, Read::Done(Verdict::Done(f)), _))) => {
                (slot, key, payload(py, *f, max_fingerprints)?).into_pyobject(py)?
            }
            Ok(Ok((key, Read::Done(Verdict::Legacy { iso2022 }), data))) => {
                let d = data.map(|d| PyBytes::new(py, &d));
                (slot, key, ("legacy", d, iso2022)).into_pyobject(py)?
            }
            Ok(Ok((key, Read::Done(Verdict::Foreign { .. }), data))) => {
                // Only a caller's encoding makes a foreign verdict: not reached without one.
                let d = data.map(|d| PyBytes::new(py, &d));
                (slot, key, ("legacy", d, false)).into_pyobject(py)?
            }
        };
        out.push(t);
    }
    Ok(out)
}

/// The scanner's payload of a fingerprinted file (see [`read_task`]).
fn payload<'py>(
    py: Python<'py>,
    f: Fingerprints,
    max_fingerprints: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let n = f.rolling.len() + f.anchored.len();
    let (blob, meta, n_roll, note) = if n > max_fingerprints {
        (
            Vec::new(),
            Vec::new(),
            0,
            Some(format!(
                "too large for content fingerprints ({} > {}); indexed by checksum only (exact copies are still found)",
                group(n),
                group(max_fingerprints)
            )),
        )
    } else {
        let mut b = Vec::with_capacity(8 * n);
        for v in f.rolling.iter().chain(&f.anchored) {
            b.extend_from_slice(&v.to_le_bytes());
        }
        (b, meta_blob(&f.meta), f.rolling.len(), None)
    };
    (
        f.is_text,
        f.encoding,
        PyBytes::new(py, &f.checksum),
        f.partial,
        PyBytes::new(py, &f.content_hash),
        f.simhash,
        f.units,
        PyBytes::new(py, &blob),
        n_roll,
        f.size,
        note,
        PyBytes::new(py, &meta),
    )
        .into_pyobject(py)
}

/// `n` with thousands separators, as Python's `f"{n:,}"`.
fn group(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Fingerprints of text decoded by Python (legacy multi-byte encodings) or extracted from a document:
/// its raw bytes through `raw()`, its text through `text()`.
#[pyclass(module = "simscan._native")]
struct TextStream {
    inner: Option<TextFingerprinter<'static>>,
}

fn leaked_params(p: &FpParams) -> &'static FpParams {
    use std::sync::Mutex;
    static KEPT: Mutex<Vec<&'static FpParams>> = Mutex::new(Vec::new());
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&k) = kept.iter().find(|k| ***k == *p) {
        return k;
    }
    let k: &'static FpParams = Box::leak(Box::new(p.clone()));
    kept.push(k);
    k
}

#[pymethods]
impl TextStream {
    #[new]
    fn new(params: &NativeParams) -> Self {
        TextStream {
            inner: Some(TextFingerprinter::new(leaked_params(&params.p), None)),
        }
    }

    /// The next raw bytes of the file (checksum only).
    fn raw(&mut self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        let t = self
            .inner
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("finished"))?;
        detached(py, || t.raw(data))
    }

    /// The next piece of the decoded text.
    fn text(&mut self, py: Python<'_>, text: &str) -> PyResult<()> {
        let t = self
            .inner
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("finished"))?;
        detached(py, || {
            let cps: Vec<u32> = text.chars().map(|c| c as u32).collect();
            t.code_points(&cps)
        })
    }

    /// The fingerprints' tuple (as `fingerprint_bytes` returns it).
    fn finish<'py>(
        &mut self,
        py: Python<'py>,
        size: u64,
        head: &[u8],
        tail: &[u8],
        encoding: String,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let t = self
            .inner
            .take()
            .ok_or_else(|| PyValueError::new_err("finished"))?;
        let partial = checksum::partial(size, head, tail);
        let f = detached(py, || t.finish(size, partial, encoding))?;
        fingerprints_tuple(py, f)
    }
}

/// A Manber hasher over units fed in pieces (bytes for binary files, code points for text),
/// with explicit parameters: for tests and benchmarks that examine the hash itself.
#[pyclass(module = "simscan._native")]
struct UnitHasher {
    bytes: Option<manber::Hasher<u8>>,
    text: Option<manber::Hasher<u32>>,
}

#[pymethods]
impl UnitHasher {
    #[new]
    #[pyo3(signature = (window, density, anchor_density, anchor_length=0, anchor_level=0, level_units=vec![], binary=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        window: usize,
        density: u32,
        anchor_density: u32,
        anchor_length: usize,
        anchor_level: u32,
        level_units: Vec<u64>,
        binary: bool,
    ) -> PyResult<Self> {
        let p = Params {
            window,
            density,
            anchor_density,
            anchor_length,
            anchor_level,
            level_units,
        };
        p.validate().map_err(PyValueError::new_err)?;
        Ok(if binary {
            UnitHasher {
                bytes: Some(manber::Hasher::new(&p, true)),
                text: None,
            }
        } else {
            UnitHasher {
                bytes: None,
                text: Some(manber::Hasher::new(&p, false)),
            }
        })
    }

    /// The next units: uint8 (binary) or uint32 (text) array.
    fn feed<'py>(&mut self, py: Python<'py>, units: &Bound<'py, PyAny>) -> PyResult<()> {
        if let Some(h) = self.bytes.as_mut() {
            let u: PyReadonlyArray1<'py, u8> = units.extract()?;
            let u = u.as_slice()?;
            detached(py, || h.feed(u))
        } else if let Some(h) = self.text.as_mut() {
            let u: PyReadonlyArray1<'py, u32> = units.extract()?;
            let u = u.as_slice()?;
            detached(py, || h.feed(u))
        } else {
            Err(PyValueError::new_err("finished"))
        }
    }

    /// Units fed so far.
    #[getter]
    fn units(&self) -> u64 {
        self.bytes
            .as_ref()
            .map(|h| h.units)
            .or(self.text.as_ref().map(|h| h.units))
            .unwrap_or(0)
    }

    /// (rolling, anchored) values, sorted and distinct (no view bit set).  The hasher is spent.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<ValuePair<'py>> {
        let (r, a) = if let Some(h) = self.bytes.take() {
            h.finish()
        } else if let Some(h) = self.text.take() {
            h.finish()
        } else {
            return Err(PyValueError::new_err("finished"));
        };
        Ok((u64s(py, r), u64s(py, a)))
    }
}

/// Detection of a file's first bytes: `("binary",)`, `("text", encoding, bom_length)` or
/// `("legacy", iso2022)`.
#[pyfunction]
#[pyo3(signature = (sample, after_iso2022=false))]
fn detect<'py>(
    py: Python<'py>,
    sample: &[u8],
    after_iso2022: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let d = if after_iso2022 {
        det::after_iso2022(sample)
    } else {
        det::detect(sample)
    };
    match d {
        Detected::Binary => ("binary",).into_pyobject(py),
        Detected::Text { encoding, bom } => ("text", encoding, bom).into_pyobject(py),
        Detected::Legacy { iso2022 } => ("legacy", iso2022).into_pyobject(py),
    }
}

/// `data` decoded by a natively decoded codec (strictly: None when it does not decode), else None.
#[pyfunction]
#[pyo3(signature = (data, encoding, replace=false))]
fn decode(py: Python<'_>, data: &[u8], encoding: &str, replace: bool) -> PyResult<Option<String>> {
    let Some(codec) = Codec::for_name(encoding) else {
        return Ok(None);
    };
    detached(py, || {
        let mut cps = Vec::new();
        Decoder::new(codec, replace)
            .decode(data, true, &mut cps)
            .ok()?;
        Some(
            cps.into_iter()
                .map(|c| char::from_u32(c).unwrap_or('\u{FFFD}'))
                .collect(),
        )
    })
}

/// Whether a codec is decoded natively.
#[pyfunction]
fn native_codec(encoding: &str) -> bool {
    Codec::for_name(encoding).is_some()
}

fn code_points(text: &str) -> Vec<u32> {
    text.chars().map(|c| c as u32).collect()
}

/// Normalised units (uint32) of a text, and with `offsets` the index of each unit's source
/// character (int64); `heavy` False: the light form.
#[pyfunction]
#[pyo3(signature = (text, heavy=true, offsets=false))]
fn normalize<'py>(
    py: Python<'py>,
    text: &str,
    heavy: bool,
    offsets: bool,
) -> PyResult<UnitsAndSources<'py>> {
    let (units, src) = detached(py, || {
        let t = tables::tables();
        let mut n = Normalizer::new(if heavy { &t.heavy } else { &t.light });
        let cps = code_points(text);
        let mut units = Vec::with_capacity(cps.len());
        if offsets {
            let mut src = Vec::with_capacity(cps.len());
            n.feed_offsets(&cps, &mut units, &mut src);
            (
                units,
                Some(src.into_iter().map(|s| s as i64).collect::<Vec<_>>()),
            )
        } else {
            n.feed(&cps, &mut units);
            (units, None)
        }
    })?;
    Ok((
        PyArray1::from_vec(py, units),
        src.map(|s| PyArray1::from_vec(py, s)),
    ))
}

/// Whether a text reads as C-family program source.
#[pyfunction]
fn looks_like_code(py: Python<'_>, text: &str) -> PyResult<bool> {
    detached(py, || code::looks_like_code(&code_points(text)))
}

/// The code form of a text (names as a placeholder and fillers: the same length).
#[pyfunction]
fn code_form(py: Python<'_>, text: &str) -> PyResult<String> {
    detached(py, || {
        code::code_form(&code_points(text))
            .into_iter()
            .map(|c| char::from_u32(c).unwrap_or('\u{FFFD}'))
            .collect()
    })
}

/// The code view's units (uint32) of a text.
#[pyfunction]
fn code_units<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let u = detached(py, || code::code_units(&code_points(text)))?;
    Ok(PyArray1::from_vec(py, u))
}

/// The 64-bit value (kind bit clear) of the windows of `units` starting at `starts`: text values
/// (mixed with their selection hash) from uint32 units, binary ones from uint8.
#[pyfunction]
#[pyo3(signature = (units, starts, window, binary=false))]
fn window_values<'py>(
    py: Python<'py>,
    units: &Bound<'py, PyAny>,
    starts: PyReadonlyArray1<'py, i64>,
    window: usize,
    binary: bool,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let starts = starts.as_slice()?.to_vec();
    let out = if binary {
        let u: PyReadonlyArray1<'py, u8> = units.extract()?;
        let u = u.as_slice()?;
        check_starts(&starts, u.len(), window)?;
        detached(py, || {
            starts
                .iter()
                .map(|&s| manber::window_value(u, s as usize, window, None))
                .collect()
        })?
    } else {
        let u: PyReadonlyArray1<'py, u32> = units.extract()?;
        let u = u.as_slice()?;
        check_starts(&starts, u.len(), window)?;
        detached(py, || {
            starts
                .iter()
                .map(|&s| {
                    let g = manber::selection(u, s as usize, window);
                    manber::window_value(u, s as usize, window, Some(g))
                })
                .collect::<Vec<u64>>()
        })?
    };
    Ok(u64s(py, out))
}

fn check_starts(starts: &[i64], n: usize, window: usize) -> PyResult<()> {
    if !(2..=manber::MAX_SPAN / 2).contains(&window)
        || starts.iter().any(|&s| s < 0 || s as usize + window > n)
    {
        return Err(PyValueError::new_err("window out of range of the units"));
    }
    Ok(())
}

/// The level (0..32) of nested anchored values.
#[pyfunction]
fn anchored_levels<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, u64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let v = values.as_slice()?;
    let out: Vec<i64> = detached(py, || {
        v.iter()
            .map(|&x| manber::anchored_level(x) as i64)
            .collect()
    })?;
    Ok(PyArray1::from_vec(py, out))
}

/// Per pair: (inter, na, nb, longest, shared) as uint32 arrays, and with `passages` also
/// (pair, a0, a1, b0, b1, fingerprints) of every passage (pair: int64 index into the pairs; the
/// rest uint32).  See `simscan_core::evidence` and `simscan.similarity.evidence`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (offsets, values, d, unit, char, chars, is_text, rows_a, rows_b, w, view, common, frequent, gap_per_w, drift, passages=false, threads=1, common_coarse=0, common_span=0))]
fn pair_evidence<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'py, i64>,
    values: PyReadonlyArray1<'py, u64>,
    d: PyReadonlyArray1<'py, u8>,
    unit: PyReadonlyArray1<'py, u32>,
    char: PyReadonlyArray1<'py, u32>,
    chars: PyReadonlyArray1<'py, u16>,
    is_text: PyReadonlyArray1<'py, bool>,
    rows_a: PyReadonlyArray1<'py, i64>,
    rows_b: PyReadonlyArray1<'py, i64>,
    w: PyReadonlyArray1<'py, u8>,
    view: u8,
    common: PyReadonlyArray1<'py, u64>,
    frequent: PyReadonlyArray1<'py, u64>,
    gap_per_w: u32,
    drift: u32,
    passages: bool,
    threads: usize,
    common_coarse: u8,
    common_span: u32,
) -> PyResult<Bound<'py, PyTuple>> {
    let sets = evidence::StoredSets {
        offsets: offsets.as_slice()?,
        values: values.as_slice()?,
        d: d.as_slice()?,
        unit: unit.as_slice()?,
        char: char.as_slice()?,
        chars: chars.as_slice()?,
        is_text: is_text.as_slice()?,
    };
    let (ra, rb, w) = (rows_a.as_slice()?, rows_b.as_slice()?, w.as_slice()?);
    if ra.len() != rb.len() || ra.len() != w.len() || ra.iter().chain(rb).any(|&r| r < 0) {
        return Err(PyValueError::new_err(
            "rows_a, rows_b and w must be as long, rows not negative",
        ));
    }
    let jobs: Vec<evidence::PairJob> = (0..ra.len())
        .map(|k| evidence::PairJob {
            a: ra[k] as usize,
            b: rb[k] as usize,
            w: w[k],
        })
        .collect();
    let (common, frequent) = (common.as_slice()?, frequent.as_slice()?);
    if !common.is_sorted() || !frequent.is_sorted() {
        return Err(PyValueError::new_err("common and frequent must be sorted"));
    }
    let batch = evidence::BatchRule {
        view,
        gap_per_w,
        drift,
        passages,
        common_text: (common_coarse > 0).then_some(evidence::CommonText {
            coarse: common_coarse,
            span: common_span,
        }),
    };
    let out = detached(py, || {
        evidence::evidence_of_pairs(&sets, &jobs, &batch, common, frequent, threads)
    })?;
    if out.iter().any(Option::is_none) {
        return Err(PyValueError::new_err(
            "a pair's row is out of range of the stored sets",
        ));
    }
    let n = out.len();
    let mut cols: [Vec<u32>; 5] = std::array::from_fn(|_| Vec::with_capacity(n));
    let mut pc: [Vec<u32>; 5] = Default::default();
    let mut pair = Vec::new();
    for (k, e) in out.into_iter().flatten().enumerate() {
        for (c, x) in cols
            .iter_mut()
            .zip([e.inter, e.na, e.nb, e.longest, e.shared])
        {
            c.push(x);
        }
        for p in e.passages {
            pair.push(k as i64);
            for (c, x) in pc.iter_mut().zip([p.a0, p.a1, p.b0, p.b1, p.fingerprints]) {
                c.push(x);
            }
        }
    }
    let [inter, na, nb, longest, shared] = cols.map(|c| PyArray1::from_vec(py, c));
    let scores = (inter, na, nb, longest, shared).into_pyobject(py)?;
    if !passages {
        return Ok(scores);
    }
    let [a0, a1, b0, b1, fps] = pc.map(|c| PyArray1::from_vec(py, c));
    let p = (PyArray1::from_vec(py, pair), a0, a1, b0, b1, fps).into_pyobject(py)?;
    (scores, p).into_pyobject(py)
}

/// One partition of the pair search's inverted index (`simscan_core::runs`): `values` (uint64),
/// `own` (uint32 positions `< n`) and `level` (uint8) aligned; `row_level` (uint8 per position,
/// empty: every shared value counts); `full` / `kept` (int32, `n * width`, or None) receive each
/// position's entries per level; `pair_limit`: most pair incidences to make (more: none);
/// `pair_cut`: runs longer than it (not common) are held, not paired (`runs::Rule::pair_cut`), and
/// with `hold_entries` their entries given back; `threads`: threads that count the pairs (the
/// result does not depend on them); `key_limit`: most distinct pairs to give (more: none, and
/// `over`).  Returns (hist uint64, common uint64, frequent uint64, keys int64, counts int32, made,
/// frequent_len uint32, (held runs uint64, their lengths uint32), (held values uint64, held
/// positions uint32, held levels uint8), over).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (values, own, level, row_level, n, cut, frequent_cut, hist_bins, pairs, width, full=None, kept=None, pair_limit=u64::MAX, pair_cut=usize::MAX, hold_entries=true, threads=1, key_limit=u64::MAX))]
fn partition_counts<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, u64>,
    own: PyReadonlyArray1<'py, u32>,
    level: PyReadonlyArray1<'py, u8>,
    row_level: PyReadonlyArray1<'py, u8>,
    n: u64,
    cut: usize,
    frequent_cut: usize,
    hist_bins: usize,
    pairs: bool,
    width: usize,
    mut full: Option<PyReadwriteArray1<'py, i32>>,
    mut kept: Option<PyReadwriteArray1<'py, i32>>,
    pair_limit: u64,
    pair_cut: usize,
    hold_entries: bool,
    threads: usize,
    key_limit: u64,
) -> PyResult<Bound<'py, PyTuple>> {
    let (v, o, l, rl) = (
        values.as_slice()?,
        own.as_slice()?,
        level.as_slice()?,
        row_level.as_slice()?,
    );
    if o.len() != v.len() || l.len() != v.len() {
        return Err(PyValueError::new_err(
            "values, own and level must be as long",
        ));
    }
    if o.iter().any(|&p| u64::from(p) >= n) || (!rl.is_empty() && rl.len() as u64 != n) {
        return Err(PyValueError::new_err(
            "a position is out of range, or row_level is not one a position",
        ));
    }
    if n.checked_mul(n).is_none() || width == 0 {
        return Err(PyValueError::new_err(
            "too many positions, or no level column",
        ));
    }
    let cells = (n as usize) * width;
    let full_s = match full.as_mut() {
        Some(a) => Some(a.as_slice_mut()?),
        None => None,
    };
    let kept_s = match kept.as_mut() {
        Some(a) => Some(a.as_slice_mut()?),
        None => None,
    };
    if full_s.as_ref().is_some_and(|a| a.len() != cells)
        || kept_s.as_ref().is_some_and(|a| a.len() != cells)
    {
        return Err(PyValueError::new_err(
            "full and kept must hold n * width counts",
        ));
    }
    let rule = runs::Rule {
        n,
        cut,
        pair_cut,
        hold_entries,
        frequent_cut,
        hist_bins,
        pairs,
        pair_limit,
        key_limit,
        row_level: (!rl.is_empty()).then_some(rl),
        width,
        threads,
    };
    let c = detached(py, || runs::count_partition(v, o, l, &rule, full_s, kept_s))?;
    let keys: Vec<i64> = c.keys.into_iter().map(|k| k as i64).collect();
    let counts: Vec<i32> = c.counts.into_iter().map(|k| k as i32).collect();
    let runs = (
        PyArray1::from_vec(py, c.held_runs),
        PyArray1::from_vec(py, c.held_runs_len),
    );
    let held = (
        PyArray1::from_vec(py, c.held_values),
        PyArray1::from_vec(py, c.held_own),
        PyArray1::from_vec(py, c.held_level),
    );
    (
        PyArray1::from_vec(py, c.hist),
        PyArray1::from_vec(py, c.common),
        PyArray1::from_vec(py, c.frequent),
        PyArray1::from_vec(py, keys),
        PyArray1::from_vec(py, counts),
        c.made,
        PyArray1::from_vec(py, c.frequent_len),
        runs,
        held,
        c.over,
    )
        .into_pyobject(py)
}

/// Batches of (sorted distinct pair keys, counts) merged (`simscan_core::runs::merge_counts`):
/// (sorted distinct keys int64, summed counts int32).
#[pyfunction]
fn merge_counts<'py>(
    py: Python<'py>,
    keys: Vec<PyReadonlyArray1<'py, i64>>,
    counts: Vec<PyReadonlyArray1<'py, i32>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let ks = keys
        .iter()
        .map(|k| k.as_slice())
        .collect::<Result<Vec<_>, _>>()?;
    let cs = counts
        .iter()
        .map(|c| c.as_slice())
        .collect::<Result<Vec<_>, _>>()?;
    let (k, c) = detached(py, || runs::merge_counts(&ks, &cs))?.ok_or_else(|| {
        PyValueError::new_err("merge_counts: a batch is not sorted distinct keys with a count each")
    })?;
    (PyArray1::from_vec(py, k), PyArray1::from_vec(py, c)).into_pyobject(py)
}

/// The sequential half of grouping (`simscan_core::grouping::place`): the walk (visit position,
/// unit, edge range of each unit with edges, in visit order), the edge columns (partner unit, best
/// score, pair index), per unit below `n` its file count and whether it is marked (under a
/// reference folder), and `move_keeps`.  Returns (group positions, then per block: position,
/// sequence, unit, pair), int64 each.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn place_groups<'py>(
    py: Python<'py>,
    n: usize,
    walk_pos: PyReadonlyArray1<'py, i64>,
    walk_unit: PyReadonlyArray1<'py, i64>,
    walk_start: PyReadonlyArray1<'py, i64>,
    walk_end: PyReadonlyArray1<'py, i64>,
    dst: PyReadonlyArray1<'py, i32>,
    score: PyReadonlyArray1<'py, f64>,
    pair: PyReadonlyArray1<'py, i64>,
    count: PyReadonlyArray1<'py, i64>,
    marked: PyReadonlyArray1<'py, u8>,
    move_keeps: f64,
) -> PyResult<Bound<'py, PyTuple>> {
    let walk = grouping::Walk {
        pos: walk_pos.as_slice()?,
        unit: walk_unit.as_slice()?,
        start: walk_start.as_slice()?,
        end: walk_end.as_slice()?,
        dst: dst.as_slice()?,
        score: score.as_slice()?,
        pair: pair.as_slice()?,
    };
    let units = grouping::Units {
        count: count.as_slice()?,
        marked: marked.as_slice()?,
    };
    let w = walk.unit.len();
    let m = walk.dst.len();
    let in_range = |u: i64| u >= 0 && (u as u64) < n as u64;
    if walk.pos.len() != w
        || walk.start.len() != w
        || walk.end.len() != w
        || walk.score.len() != m
        || walk.pair.len() != m
        || units.count.len() != n
        || units.marked.len() != n
        || n >= u32::MAX as usize
    {
        return Err(PyValueError::new_err(
            "place_groups: columns of different lengths",
        ));
    }
    if !walk.unit.iter().all(|&u| in_range(u))
        || !walk.dst.iter().all(|&v| in_range(i64::from(v)))
        || !walk
            .start
            .iter()
            .zip(walk.end)
            .all(|(&s, &t)| 0 <= s && s <= t && t as u64 <= m as u64)
    {
        return Err(PyValueError::new_err(
            "place_groups: a unit or an edge range is out of range",
        ));
    }
    // A NaN score orders nowhere: the pass compares scores as Python floats do, and sorting members
    // by a NaN breaks the sort's total order (a panic).  group_rows never passes one (`passes`).
    if walk.score.iter().any(|s| s.is_nan()) {
        return Err(PyValueError::new_err("place_groups: a score is NaN"));
    }
    let mut seen = vec![false; n];
    for &u in walk.unit {
        if std::mem::replace(&mut seen[u as usize], true) {
            return Err(PyValueError::new_err(
                "place_groups: a unit is walked twice",
            ));
        }
    }
    // Every partner must be walked too (an edge has two ends).
    if !walk.dst.iter().all(|&v| seen[v as usize]) {
        return Err(PyValueError::new_err(
            "place_groups: a partner without edges of its own",
        ));
    }
    drop(seen);
    let p = detached(py, || grouping::place(n, &walk, &units, move_keeps))?;
    (
        PyArray1::from_vec(py, p.group_pos),
        PyArray1::from_vec(py, p.block_pos),
        PyArray1::from_vec(py, p.block_seq),
        PyArray1::from_vec(py, p.block_unit),
        PyArray1::from_vec(py, p.block_pair),
    )
        .into_pyobject(py)
}

/// The Unicode version the tables were generated from, and a code point's heavy and light forms
/// (for the tests that check the tables against this interpreter).
#[pyfunction]
fn unicode_version() -> String {
    tables::tables().unicode_version.clone()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeParams>()?;
    m.add_class::<TextStream>()?;
    m.add_class::<UnitHasher>()?;
    m.add_class::<StopFlag>()?;
    m.add_function(wrap_pyfunction!(fingerprint_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(fingerprint_file, m)?)?;
    m.add_function(wrap_pyfunction!(read_task, m)?)?;
    m.add_function(wrap_pyfunction!(detect, m)?)?;
    m.add_function(wrap_pyfunction!(decode, m)?)?;
    m.add_function(wrap_pyfunction!(native_codec, m)?)?;
    m.add_function(wrap_pyfunction!(normalize, m)?)?;
    m.add_function(wrap_pyfunction!(looks_like_code, m)?)?;
    m.add_function(wrap_pyfunction!(code_form, m)?)?;
    m.add_function(wrap_pyfunction!(code_units, m)?)?;
    m.add_function(wrap_pyfunction!(window_values, m)?)?;
    m.add_function(wrap_pyfunction!(anchored_levels, m)?)?;
    m.add_function(wrap_pyfunction!(pair_evidence, m)?)?;
    m.add_function(wrap_pyfunction!(partition_counts, m)?)?;
    m.add_function(wrap_pyfunction!(merge_counts, m)?)?;
    m.add_function(wrap_pyfunction!(place_groups, m)?)?;
    m.add_function(wrap_pyfunction!(unicode_version, m)?)?;
    sketches::register(m)?;
    m.add("LARGE_FILE", read::LARGE_FILE)?;
    m.add("SAMPLE", det::SAMPLE)?;
    Ok(())
}
