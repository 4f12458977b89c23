//! One file's fingerprints: detection, decoding, normalisation, Manber fingerprints, the code view,
//! simhash and checksums, streamed in chunks (memory does not grow with the file).

use crate::checksum;
use crate::code;
use crate::decode::{utf8_cut, Codec, Decoder, Invalid, REPLACEMENT};
use crate::detect::{self, Detected, SAMPLE};
use crate::manber::{self, Hasher, Params};
use crate::normalize::{Pair, PairOut};
use crate::tables::tables;
use crate::winnow::{Kept, Winnower, D_CAP};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use xxhash_rust::xxh3::Xxh3;

/// The fingerprint parameters of text and binary files (`FingerprintParams` in Python).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FpParams {
    /// Text: the window, and the levels' unit counts (`level_units`); the rest is version 11's.
    pub text: Params,
    /// Text: the winnowing window per level (version 12).
    pub winnow: Vec<usize>,
    pub binary: Params,
    /// Bytes of a text file read, decoded and hashed at once (any size gives the same values).
    pub text_chunk: usize,
    /// Bytes of a binary file read and hashed at once.
    pub binary_chunk: usize,
}

impl Default for FpParams {
    fn default() -> Self {
        FpParams {
            text: Params {
                window: 50,
                density: 32,
                anchor_density: 2,
                anchor_length: 8,
                anchor_level: 0,
                level_units: vec![512, 1024, 2048, 4096, 4096, 8192, 16384],
            },
            // Level 4 never occurs (its limit is level 5's); benchmarks/proto_evidence.py chose these.
            winnow: vec![4, 6, 14, 26, 64, 64, 64, 64],
            binary: Params {
                window: 50,
                density: 256,
                anchor_density: 4096,
                anchor_length: 0,
                anchor_level: 0,
                level_units: vec![],
            },
            text_chunk: 1 << 18,
            binary_chunk: 1 << 20,
        }
    }
}

/// Everything simscan knows about one file's content (`simscan.model.Fingerprints`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprints {
    pub size: u64,
    pub checksum: [u8; 16],
    pub partial: i64,
    pub is_text: bool,
    pub encoding: Option<String>,
    pub content_hash: [u8; 16],
    /// Sorted, distinct; top bit clear.
    pub rolling: Vec<u64>,
    /// Sorted, distinct; top bit set (binary files only since version 12).
    pub anchored: Vec<u64>,
    pub simhash: u64,
    pub units: u64,
    /// Per value of `rolling` then `anchored`: where it comes from (see [`Meta`]).
    pub meta: Meta,
}

/// Where each stored value comes from, in the order of `rolling` then `anchored`: its dominance
/// span (text: a pair counts the value where the span reaches the pair's window; binary: always,
/// `D_CAP`), the unit offset of its window in its view's units, and the window's first character
/// and length in characters of the decoded text (binary: bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    pub d: Vec<u8>,
    pub unit: Vec<u32>,
    pub char: Vec<u32>,
    pub chars: Vec<u16>,
}

impl Meta {
    fn push_kept(&mut self, k: &Kept) {
        self.d.push(k.d);
        self.unit.push(k.unit);
        self.char.push(k.char);
        self.chars.push(k.chars);
    }

    fn push_binary(&mut self, at: u64, w: usize) {
        let at = at.min(u32::MAX as u64) as u32;
        self.d.push(D_CAP as u8);
        self.unit.push(at);
        self.char.push(at);
        self.chars.push(w as u16);
    }
}

/// What fingerprinting a file came to.
#[derive(Debug)]
pub enum Verdict {
    Done(Box<Fingerprints>),
    /// Text in a legacy encoding: the caller's detector (chardet) names it, then asks again.
    Legacy {
        iso2022: bool,
    },
    /// Text in an encoding decoded by the caller's codecs (multi-byte legacy encodings).
    Foreign {
        encoding: String,
    },
}

/// Bytes to fingerprint, read from a position (a file, or memory).
pub trait Source {
    /// Reads at most `buf.len()` bytes at `offset`; 0 at the end.
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
}

impl Source for &[u8] {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let start = (offset as usize).min(self.len());
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }
}

/// Reads `src` from the start in chunks of `step`, at most `limit` bytes in all.
fn each_chunk(
    src: &mut dyn Source,
    step: usize,
    limit: u64,
    stop: &AtomicBool,
    mut f: impl FnMut(&[u8]) -> Result<(), Invalid>,
) -> io::Result<Result<u64, Invalid>> {
    // Sized to the file when it is smaller than a chunk: zeroing a whole chunk (1 MiB for binary
    // data) cost a small file more than reading it.
    let mut buf = vec![0u8; (step as u64).min(limit.max(1)) as usize];
    let mut at = 0u64;
    while at < limit {
        if stop.load(Ordering::Relaxed) {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled"));
        }
        let want = (step as u64).min(limit - at) as usize;
        let n = src.read_at(at, &mut buf[..want])?;
        if n == 0 {
            break;
        }
        at += n as u64;
        if let Err(e) = f(&buf[..n]) {
            return Ok(Err(e));
        }
    }
    Ok(Ok(at))
}

fn read_exact_at(src: &mut dyn Source, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut out = vec![0u8; len];
    let mut got = 0;
    while got < len {
        let n = src.read_at(offset + got as u64, &mut out[got..])?;
        if n == 0 {
            break;
        }
        got += n;
    }
    out.truncate(got);
    Ok(out)
}

/// Fingerprints of `src`, whose `fstat` size is `size`, reading at most `limit` bytes (the
/// scanner reads one byte past the size, to see a file that grew).  `encoding`: the caller's
/// verdict on a legacy text (see [`Verdict::Legacy`]); `after_iso2022`: the caller's detector did
/// not take the ISO-2022 escapes for ISO-2022, so detection goes on without them.
pub fn fingerprint(
    src: &mut dyn Source,
    size: u64,
    limit: u64,
    p: &FpParams,
    encoding: Option<&str>,
    after_iso2022: bool,
) -> io::Result<Verdict> {
    fingerprint_until(
        src,
        size,
        limit,
        p,
        encoding,
        after_iso2022,
        &AtomicBool::new(false),
    )
}

/// [`fingerprint`], stopped (an `Interrupted` error) once `stop` is set.
pub fn fingerprint_until(
    src: &mut dyn Source,
    size: u64,
    limit: u64,
    p: &FpParams,
    encoding: Option<&str>,
    after_iso2022: bool,
    stop: &AtomicBool,
) -> io::Result<Verdict> {
    let sample = read_exact_at(src, 0, SAMPLE.min(limit as usize))?;
    let det = match encoding {
        Some(e) => Detected::Text {
            encoding: leak_name(e),
            bom: 0,
        },
        None if after_iso2022 => detect::after_iso2022(&sample),
        None => detect::detect(&sample),
    };
    let head = &sample[..sample.len().min(checksum::PARTIAL_SAMPLE)];
    let tail = if size > checksum::PARTIAL_SAMPLE as u64 {
        read_exact_at(src, checksum::tail_offset(size), checksum::PARTIAL_SAMPLE)?
    } else {
        Vec::new()
    };
    let partial = |read: u64| {
        let h = &head[..head.len().min(read as usize)];
        checksum::partial(read, h, if read == size { &tail } else { &[] })
    };
    match det {
        Detected::Legacy { iso2022 } => Ok(Verdict::Legacy { iso2022 }),
        Detected::Binary => {
            let mut full = Xxh3::new();
            let mut h = Hasher::<u8>::new(&p.binary, true);
            let read = each_chunk(src, p.binary_chunk.max(1), limit, stop, |c| {
                full.update(c);
                h.feed(c);
                Ok(())
            })?
            .expect("binary never fails to decode");
            let units = h.units;
            let (r, a) = h.finish_with_positions();
            let mut meta = Meta::default();
            for &(_, at) in r.iter().chain(&a) {
                meta.push_binary(at, p.binary.window);
            }
            let rolling: Vec<u64> = r.into_iter().map(|x| x.0).collect();
            let anchored: Vec<u64> = a.into_iter().map(|x| x.0).collect();
            let digest = full.digest128().to_be_bytes();
            let mut all = rolling.clone();
            all.extend_from_slice(&anchored);
            Ok(Verdict::Done(Box::new(Fingerprints {
                size: read,
                checksum: digest,
                partial: partial(read),
                is_text: false,
                encoding: None,
                content_hash: digest,
                simhash: manber::simhash(&all),
                rolling,
                anchored,
                units,
                meta,
            })))
        }
        Detected::Text { encoding, bom } => {
            let Some(codec) = Codec::for_name(encoding) else {
                return Ok(Verdict::Foreign {
                    encoding: encoding.to_string(),
                });
            };
            for replace in [false, true] {
                let mut t = TextFingerprinter::new(p, Some(Decoder::new(codec, replace)));
                let mut skip = bom;
                let res = each_chunk(src, p.text_chunk.max(1), limit, stop, |c| {
                    t.raw(c);
                    let s = skip.min(c.len());
                    skip -= s;
                    t.bytes(&c[s..], false)
                })?;
                let Ok(read) = res else { continue };
                if t.bytes(&[], true).is_err() {
                    continue;
                }
                let enc = if replace {
                    format!("{encoding}+replace")
                } else {
                    encoding.to_string()
                };
                return Ok(Verdict::Done(Box::new(t.finish(read, partial(read), enc))));
            }
            unreachable!("decoding with replacement never fails")
        }
    }
}

/// A codec name as a static string (the few names a process meets are kept for its lifetime).
fn leak_name(name: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut guard = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let set = guard.get_or_insert_with(HashSet::new);
    if let Some(&n) = set.get(name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_string().into_boxed_str());
    set.insert(n);
    n
}

/// Fingerprints of text that arrives in pieces: bytes in a natively decoded codec, or code points
/// decoded elsewhere; the raw bytes (for the checksums) apart.
pub struct TextFingerprinter<'p> {
    p: &'p FpParams,
    decoder: Option<Decoder>,
    /// UTF-8 (its pieces are normalised from their bytes): strict or with replacement, and the
    /// bytes of a character cut by a chunk border.
    utf8: Option<(bool, Vec<u8>)>,
    full: Xxh3,
    content: Xxh3,
    pair: Pair,
    winnower: Winnower,
    cps: Vec<u32>,
    out: PairOut,
    code_text: CodeText,
}

/// The text kept while it may still get a code view (at most [`code::MAX_CODE_CHARS`] characters,
/// a CR LF counted once: certainly too long at twice that).
enum CodeText {
    Utf8(Vec<u8>, usize),
    Cps(Vec<u32>),
    TooLong,
}

/// Units and light bytes gathered before they are hashed.
const FLUSH: usize = 1 << 16;

impl<'p> TextFingerprinter<'p> {
    /// `decoder`: the codec of the bytes given to [`TextFingerprinter::bytes`] (None: the text comes
    /// as code points).
    pub fn new(p: &'p FpParams, decoder: Option<Decoder>) -> Self {
        let utf8 = decoder
            .as_ref()
            .and_then(|d| d.utf8_mode())
            .map(|replace| (replace, Vec::new()));
        TextFingerprinter {
            p,
            code_text: if utf8.is_some() {
                CodeText::Utf8(Vec::new(), 0)
            } else {
                CodeText::Cps(Vec::new())
            },
            decoder,
            utf8,
            full: Xxh3::new(),
            content: Xxh3::new(),
            pair: Pair::new(tables()),
            winnower: Winnower::new(p.text.window, &p.winnow, &p.text.level_units, 0),
            cps: Vec::new(),
            out: PairOut::default(),
        }
    }

    /// Raw bytes of the file, for its checksum.
    pub fn raw(&mut self, data: &[u8]) {
        self.full.update(data);
    }

    /// The next bytes to decode (after any byte-order mark); `last` at the end of the text.
    pub fn bytes(&mut self, data: &[u8], last: bool) -> Result<(), Invalid> {
        if let Some((replace, mut carry)) = self.utf8.take() {
            let r = self.utf8_bytes(data, last, replace, &mut carry);
            self.utf8 = Some((replace, carry));
            return r;
        }
        let mut cps = std::mem::take(&mut self.cps);
        let dec = self.decoder.as_mut().expect("a decoder");
        let r = dec.decode(data, last, &mut cps);
        if r.is_ok() {
            self.code_points(&cps);
        }
        cps.clear();
        self.cps = cps;
        r
    }

    fn utf8_bytes(
        &mut self,
        data: &[u8],
        last: bool,
        replace: bool,
        carry: &mut Vec<u8>,
    ) -> Result<(), Invalid> {
        let joined;
        let data: &[u8] = if carry.is_empty() {
            data
        } else {
            carry.extend_from_slice(data);
            joined = std::mem::take(carry);
            &joined
        };
        let end = if last { data.len() } else { utf8_cut(data) };
        let mut at = 0;
        while at < end {
            let mut stop = (at + FLUSH).min(end);
            if stop < end {
                stop = at + utf8_cut(&data[at..stop]).max(1);
            }
            let part = &data[at..stop];
            if !replace {
                let s = std::str::from_utf8(part).map_err(|_| Invalid)?;
                self.str_piece(s);
            } else {
                for chunk in part.utf8_chunks() {
                    self.str_piece(chunk.valid());
                    if !chunk.invalid().is_empty() {
                        self.code_points(&[REPLACEMENT]);
                    }
                }
            }
            at = stop;
        }
        *carry = data[end..].to_vec();
        Ok(())
    }

    fn str_piece(&mut self, s: &str) {
        self.pair.str(s, &mut self.out);
        match &mut self.code_text {
            CodeText::Utf8(b, chars) => {
                *chars += s.len() - s.bytes().filter(|&c| c & 0xC0 == 0x80).count();
                if *chars > 2 * code::MAX_CODE_CHARS {
                    self.code_text = CodeText::TooLong;
                } else {
                    b.extend_from_slice(s.as_bytes());
                }
            }
            CodeText::Cps(v) => v.extend(s.chars().map(|c| c as u32)),
            CodeText::TooLong => {}
        }
        self.flush(false);
    }

    /// The next decoded code points.
    pub fn code_points(&mut self, cps: &[u32]) {
        for piece in cps.chunks(FLUSH) {
            self.pair.code_points(piece, &mut self.out);
            match &mut self.code_text {
                CodeText::Cps(t) => {
                    if t.len() + piece.len() > 2 * code::MAX_CODE_CHARS {
                        self.code_text = CodeText::TooLong;
                    } else {
                        t.extend_from_slice(piece);
                    }
                }
                CodeText::Utf8(b, chars) => {
                    // A replacement character in UTF-8 text: from now on kept as code points.
                    let mut t: Vec<u32> = String::from_utf8_lossy(b)
                        .chars()
                        .map(|c| c as u32)
                        .collect();
                    t.extend_from_slice(piece);
                    *chars += piece.len();
                    self.code_text = if t.len() > 2 * code::MAX_CODE_CHARS {
                        CodeText::TooLong
                    } else {
                        CodeText::Cps(t)
                    };
                }
                CodeText::TooLong => {}
            }
            self.flush(false);
        }
    }

    /// Hands the units and light bytes gathered so far on (`all`: the text is over).  A final
    /// space is held back until more text follows it, and dropped at the end (see [`Pair`]).
    fn flush(&mut self, all: bool) {
        let out = &mut self.out;
        let (hs, ls) = Pair::trailing_space(&out.units, &out.light);
        if all || out.units.len() >= FLUSH {
            let n = out.units.len() - hs as usize;
            self.winnower.feed(&out.units[..n], &out.src[..n]);
            out.units.drain(..n);
            out.src.drain(..n);
            if all {
                out.units.clear();
                out.src.clear();
            }
        }
        if all || out.light.len() >= FLUSH {
            let n = out.light.len() - ls as usize;
            self.content.update(&out.light[..n]);
            out.light.drain(..n);
            if all {
                out.light.clear();
            }
        }
    }

    /// The fingerprints, once every piece is in.
    pub fn finish(mut self, size: u64, partial: i64, encoding: String) -> Fingerprints {
        self.flush(true);
        let units = self.winnower.units;
        let w = self.winnower.window_for(units);
        let mut kept = self.winnower.finish();
        let text_values: Vec<u64> = kept.iter().map(|k| k.value).collect();
        let sim = manber::simhash(&text_values);
        let text = match self.code_text {
            // Prose almost never has a brace among its first characters: no decoding then.
            CodeText::Utf8(b, _)
                if memchr::memchr(b'{', &b[..b.len().min(8 * code::SAMPLE_CHARS)]).is_some() =>
            {
                Some(
                    std::str::from_utf8(&b)
                        .map_or_else(|_| Vec::new(), |s| s.chars().map(|c| c as u32).collect()),
                )
            }
            CodeText::Cps(t) => Some(t),
            _ => None,
        };
        if let Some(text) = text.filter(|t| code::looks_like_code(t)) {
            // The code view, at the text's window: its values that the text view lacks, tagged CODE.
            let (cu, csrc) = code::code_units_with_offsets(&text);
            let mut h = Winnower::new(self.p.text.window, &[w], &[], 1);
            h.feed(&cu, &csrc);
            kept.extend(
                h.finish()
                    .into_iter()
                    .filter(|k| text_values.binary_search(&manber::tag(k.value, 0)).is_err()),
            );
            kept.sort_unstable_by_key(|k| k.value);
        }
        let mut meta = Meta::default();
        for k in &kept {
            meta.push_kept(k);
        }
        Fingerprints {
            size,
            checksum: self.full.digest128().to_be_bytes(),
            partial,
            is_text: true,
            encoding: Some(encoding),
            content_hash: self.content.digest128().to_be_bytes(),
            rolling: kept.iter().map(|k| k.value).collect(),
            anchored: Vec::new(),
            simhash: sim,
            units,
            meta,
        }
    }
}

/// Fingerprints of bytes in memory (`fingerprint_bytes`).
pub fn fingerprint_bytes(
    data: &[u8],
    p: &FpParams,
    encoding: Option<&str>,
    after_iso2022: bool,
) -> Verdict {
    let mut src: &[u8] = data;
    fingerprint(
        &mut src,
        data.len() as u64,
        data.len() as u64,
        p,
        encoding,
        after_iso2022,
    )
    .expect("reading memory never fails")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(v: Verdict) -> Fingerprints {
        match v {
            Verdict::Done(f) => *f,
            other => panic!("not done: {other:?}"),
        }
    }

    #[test]
    fn same_text_in_other_encodings_gives_the_same_fingerprints() {
        let p = FpParams::default();
        let text = "Où est la bibliothèque? Elle est près de la gare, à côté du café. ".repeat(40);
        let utf8 = done(fingerprint_bytes(text.as_bytes(), &p, None, false));
        let mut utf16 = vec![0xFF, 0xFE];
        for u in text.encode_utf16() {
            utf16.extend_from_slice(&u.to_le_bytes());
        }
        let u16 = done(fingerprint_bytes(&utf16, &p, None, false));
        let latin: Vec<u8> = text.chars().map(|c| c as u32 as u8).collect();
        assert!(matches!(
            fingerprint_bytes(&latin, &p, None, false),
            Verdict::Legacy { .. }
        ));
        let l1 = done(fingerprint_bytes(&latin, &p, Some("cp1252"), false));
        assert!(!utf8.rolling.is_empty() && utf8.anchored.is_empty());
        assert_eq!(utf8.meta.d.len(), utf8.rolling.len());
        for other in [&u16, &l1] {
            assert_eq!(other.rolling, utf8.rolling);
            assert_eq!(other.meta, utf8.meta);
            assert_eq!(other.content_hash, utf8.content_hash);
            assert_eq!(other.simhash, utf8.simhash);
        }
        assert_eq!(u16.encoding.as_deref(), Some("utf-16-le"));
        assert_ne!(u16.checksum, utf8.checksum);
    }

    #[test]
    fn invalid_utf8_is_decoded_with_replacement() {
        let p = FpParams::default();
        let mut data = "plain text ".repeat(10_000).into_bytes();
        data.extend_from_slice(b"\xff tail");
        let f = done(fingerprint_bytes(&data, &p, None, false));
        assert_eq!(f.encoding.as_deref(), Some("utf-8+replace"));
    }

    #[test]
    fn binary_and_empty_files() {
        let p = FpParams::default();
        let data: Vec<u8> = (0..200_000u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let f = done(fingerprint_bytes(&data, &p, None, false));
        assert!(!f.is_text && f.encoding.is_none() && !f.rolling.is_empty());
        assert_eq!(f.content_hash, f.checksum);
        let e = done(fingerprint_bytes(b"", &p, None, false));
        assert!(e.is_text && e.rolling.is_empty() && e.units == 0);
    }
}

#[cfg(test)]
mod fuzz {
    //! Random inputs through every entry point (a deterministic fuzzing loop: the toolchain here
    //! has no cargo-fuzz): nothing panics, and the outputs keep their invariants.
    use super::*;
    use crate::code;
    use crate::decode::{Codec, Decoder};
    use crate::normalize::normalize;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 11
        }
        fn bytes(&mut self, n: usize) -> Vec<u8> {
            let flavour = self.next() % 4;
            (0..n)
                .map(|_| {
                    let r = self.next();
                    match flavour {
                        0 => r as u8,
                        1 => b"ab {};\n\r\t\"'/*\\#0"[(r % 16) as usize],
                        2 => [
                            0x00, 0xD8, 0xDC, 0xFF, 0xFE, 0xEF, 0xBB, 0xBF, 0xC3, 0xA9, 0x41,
                        ][(r % 11) as usize],
                        _ => (r % 128) as u8,
                    }
                })
                .collect()
        }
    }

    fn check(f: &Fingerprints) {
        assert!(
            f.rolling.windows(2).all(|p| p[0] < p[1]) && f.rolling.iter().all(|v| v >> 63 == 0)
        );
        assert!(
            f.anchored.windows(2).all(|p| p[0] < p[1]) && f.anchored.iter().all(|v| v >> 63 == 1)
        );
    }

    #[test]
    fn random_inputs_never_panic() {
        let mut rng = Rng(20261127);
        let p = FpParams {
            text_chunk: 61,
            binary_chunk: 67,
            ..FpParams::default()
        };
        let names = [
            "utf-8",
            "utf-16-le",
            "utf-16-be",
            "utf-32-le",
            "utf-32-be",
            "cp1252",
            "cp855",
            "ascii",
        ];
        for round in 0..3000 {
            let n = (rng.next() % 900) as usize;
            let data = rng.bytes(n);
            for params in [&p, &FpParams::default()] {
                match fingerprint_bytes(&data, params, None, round % 2 == 0) {
                    Verdict::Done(f) => check(&f),
                    Verdict::Legacy { .. } | Verdict::Foreign { .. } => {}
                }
            }
            let name = names[round % names.len()];
            if let Verdict::Done(f) = fingerprint_bytes(&data, &p, Some(name), false) {
                check(&f);
            }
            for replace in [false, true] {
                let mut out = Vec::new();
                let _ = Decoder::new(Codec::for_name(name).unwrap(), replace)
                    .decode(&data, true, &mut out);
                assert!(out.iter().all(|&c| char::from_u32(c).is_some()));
            }
            let text: Vec<u32> = String::from_utf8_lossy(&data)
                .chars()
                .map(|c| c as u32)
                .collect();
            let t = tables();
            let _ = normalize(&t.heavy, &text);
            let form = code::code_form(&text);
            assert_eq!(form.len(), text.len());
            let _ = code::code_units(&text);
            let _ = code::looks_like_code(&text);
        }
    }
}
