//! Decoding bytes to code points, chunk by chunk, exactly as CPython's codecs decode them: strictly
//! (an error stops decoding) or with replacement (each undecodable sequence becomes U+FFFD, in the
//! places CPython puts it).  Chunked decoding gives the same code points as decoding the whole input.
//!
//! UTF-8, UTF-16, UTF-32 and the single-byte codecs of [`crate::tables`] are decoded here; the
//! multi-byte legacy encodings (GBK, Shift_JIS, Big5, EUC-*, ISO-2022-*) by Python's own codecs,
//! whose mappings the WHATWG decoders (`encoding_rs`) do not share: on the evaluation corpus 45 of
//! its 142 such pages decoded to other text.

use crate::tables::{tables, UNDEFINED};

pub const REPLACEMENT: u32 = 0xFFFD;

/// The codecs decoded natively.
#[derive(Clone, Copy)]
pub enum Codec {
    Utf8,
    Utf16 { big_endian: bool },
    Utf32 { big_endian: bool },
    Table(&'static [u32; 256]),
}

impl Codec {
    /// The codec of a Python codec name (`codecs.lookup(name).name`), if decoded natively.
    pub fn for_name(name: &str) -> Option<Codec> {
        Some(match name {
            "utf-8" => Codec::Utf8,
            "utf-16-le" => Codec::Utf16 { big_endian: false },
            "utf-16-be" => Codec::Utf16 { big_endian: true },
            "utf-32-le" => Codec::Utf32 { big_endian: false },
            "utf-32-be" => Codec::Utf32 { big_endian: true },
            _ => Codec::Table(tables().codec(name)?),
        })
    }
}

/// Input that the strict decoder refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalid;

/// A stream decoder: bytes in, code points out.
pub struct Decoder {
    codec: Codec,
    replace: bool,
    carry: Vec<u8>,
}

impl Decoder {
    pub fn new(codec: Codec, replace: bool) -> Self {
        Decoder {
            codec,
            replace,
            carry: Vec::new(),
        }
    }

    /// UTF-8: whether with replacement; other codecs: None.
    pub fn utf8_mode(&self) -> Option<bool> {
        matches!(self.codec, Codec::Utf8).then_some(self.replace)
    }

    /// Decodes the next chunk (`last`: the end of the input), appending code points to `out`.
    /// Strict decoding returns `Err(Invalid)` at the first undecodable sequence.
    pub fn decode(&mut self, chunk: &[u8], last: bool, out: &mut Vec<u32>) -> Result<(), Invalid> {
        let joined;
        let data: &[u8] = if self.carry.is_empty() {
            chunk
        } else {
            let mut j = std::mem::take(&mut self.carry);
            j.extend_from_slice(chunk);
            joined = j;
            &joined
        };
        let used = match self.codec {
            Codec::Utf8 => utf8(data, last, self.replace, out)?,
            Codec::Utf16 { big_endian } => utf16(data, last, big_endian, self.replace, out)?,
            Codec::Utf32 { big_endian } => utf32(data, last, big_endian, self.replace, out)?,
            Codec::Table(t) => {
                out.reserve(data.len());
                for &b in data {
                    let c = t[b as usize];
                    if c == UNDEFINED {
                        if !self.replace {
                            return Err(Invalid);
                        }
                        out.push(REPLACEMENT);
                    } else {
                        out.push(c);
                    }
                }
                data.len()
            }
        };
        self.carry = data[used..].to_vec();
        Ok(())
    }
}

/// Where to cut UTF-8 `data` so that no character is split: before a last lead byte whose sequence
/// is longer than what follows it (as `text.utf8_cut` does).
pub fn utf8_cut(data: &[u8]) -> usize {
    let n = data.len();
    for back in 1..=4.min(n) {
        let b = data[n - back];
        if b < 0x80 {
            break;
        }
        if b >= 0xC0 {
            let need = if b < 0xE0 {
                2
            } else if b < 0xF0 {
                3
            } else {
                4
            };
            if need > back {
                return n - back;
            }
            break;
        }
    }
    n
}

/// Appends the code points of valid UTF-8 `s` (ASCII bytes without decoding).
#[inline]
pub fn push_str(s: &str, out: &mut Vec<u32>) {
    let b = s.as_bytes();
    if b.is_ascii() {
        out.extend(b.iter().map(|&c| c as u32));
    } else {
        out.extend(s.chars().map(|c| c as u32));
    }
}

fn utf8(data: &[u8], last: bool, replace: bool, out: &mut Vec<u32>) -> Result<usize, Invalid> {
    let end = if last { data.len() } else { utf8_cut(data) };
    let part = &data[..end];
    out.reserve(part.len());
    if !replace {
        let s = std::str::from_utf8(part).map_err(|_| Invalid)?;
        push_str(s, out);
        return Ok(end);
    }
    // Each maximal ill-formed subsequence becomes one U+FFFD, as CPython (and the Unicode
    // standard's recommended practice) replace it.
    for chunk in part.utf8_chunks() {
        push_str(chunk.valid(), out);
        if !chunk.invalid().is_empty() {
            out.push(REPLACEMENT);
        }
    }
    Ok(end)
}

#[inline]
fn unit16(d: &[u8], at: usize, be: bool) -> u32 {
    let pair = [d[at], d[at + 1]];
    (if be {
        u16::from_be_bytes(pair)
    } else {
        u16::from_le_bytes(pair)
    }) as u32
}

fn utf16(
    data: &[u8],
    last: bool,
    be: bool,
    replace: bool,
    out: &mut Vec<u32>,
) -> Result<usize, Invalid> {
    let n = data.len();
    let mut i = 0;
    out.reserve(n / 2);
    while i < n {
        if n - i < 2 {
            // An odd byte at the end: "truncated data".
            if !last {
                break;
            }
            if !replace {
                return Err(Invalid);
            }
            out.push(REPLACEMENT);
            i = n;
            break;
        }
        let u = unit16(data, i, be);
        if !(0xD800..0xE000).contains(&u) {
            out.push(u);
            i += 2;
        } else if u < 0xDC00 {
            if n - i < 4 {
                // A high surrogate with nothing after it: "unexpected end of data".
                if !last {
                    break;
                }
                if !replace {
                    return Err(Invalid);
                }
                out.push(REPLACEMENT);
                i = n;
                break;
            }
            let u2 = unit16(data, i + 2, be);
            if (0xDC00..0xE000).contains(&u2) {
                out.push(0x10000 + ((u - 0xD800) << 10) + (u2 - 0xDC00));
                i += 4;
            } else {
                // "illegal UTF-16 surrogate": the high surrogate alone is replaced.
                if !replace {
                    return Err(Invalid);
                }
                out.push(REPLACEMENT);
                i += 2;
            }
        } else {
            // A low surrogate alone: "illegal encoding".
            if !replace {
                return Err(Invalid);
            }
            out.push(REPLACEMENT);
            i += 2;
        }
    }
    Ok(i)
}

fn utf32(
    data: &[u8],
    last: bool,
    be: bool,
    replace: bool,
    out: &mut Vec<u32>,
) -> Result<usize, Invalid> {
    let n = data.len();
    let mut i = 0;
    out.reserve(n / 4);
    while i + 4 <= n {
        let q = [data[i], data[i + 1], data[i + 2], data[i + 3]];
        let c = if be {
            u32::from_be_bytes(q)
        } else {
            u32::from_le_bytes(q)
        };
        if c > 0x10_FFFF || (0xD800..0xE000).contains(&c) {
            if !replace {
                return Err(Invalid);
            }
            out.push(REPLACEMENT);
        } else {
            out.push(c);
        }
        i += 4;
    }
    if i < n && last {
        // 1 to 3 bytes left at the end: "truncated data".
        if !replace {
            return Err(Invalid);
        }
        out.push(REPLACEMENT);
        i = n;
    }
    Ok(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(codec: Codec, data: &[u8], replace: bool) -> Result<Vec<u32>, Invalid> {
        let mut out = Vec::new();
        Decoder::new(codec, replace).decode(data, true, &mut out)?;
        Ok(out)
    }

    fn chunked(codec: Codec, data: &[u8], step: usize, replace: bool) -> Result<Vec<u32>, Invalid> {
        let mut d = Decoder::new(codec, replace);
        let mut out = Vec::new();
        let mut at = 0;
        while at < data.len() {
            let end = (at + step).min(data.len());
            d.decode(&data[at..end], end == data.len(), &mut out)?;
            at = end;
        }
        if data.is_empty() {
            d.decode(&[], true, &mut out)?;
        }
        Ok(out)
    }

    #[test]
    fn chunked_decoding_equals_whole_decoding() {
        let mut rng = 0x1234_5678_u64;
        for round in 0..300 {
            let n = (round * 7) % 61;
            let data: Vec<u8> = (0..n)
                .map(|_| {
                    rng = rng
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let b = (rng >> 56) as u8;
                    // Mostly plausible UTF-8/16 bytes, some garbage.
                    if round % 3 == 0 {
                        b
                    } else {
                        [
                            0x41, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0xD8, 0x00, 0xDC,
                        ][b as usize % 11]
                    }
                })
                .collect();
            for codec in [
                Codec::Utf8,
                Codec::Utf16 { big_endian: false },
                Codec::Utf16 { big_endian: true },
                Codec::Utf32 { big_endian: false },
                Codec::for_name("cp1252").unwrap(),
            ] {
                for replace in [false, true] {
                    let w = whole(codec, &data, replace);
                    for step in [1, 2, 3, 5, 64] {
                        assert_eq!(
                            chunked(codec, &data, step, replace),
                            w,
                            "round {round} step {step}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn replacement_follows_cpython() {
        // b"\xf0\x80\x80".decode("utf-8", "replace") == "\ufffd\ufffd\ufffd"
        assert_eq!(
            whole(Codec::Utf8, b"\xf0\x80\x80", true).unwrap(),
            vec![REPLACEMENT; 3]
        );
        // b"a\xe2\x82".decode("utf-8", "replace") == "a\ufffd"
        assert_eq!(
            whole(Codec::Utf8, b"a\xe2\x82", true).unwrap(),
            vec![0x61, REPLACEMENT]
        );
        assert!(whole(Codec::Utf8, b"a\xe2\x82", false).is_err());
        assert_eq!(
            whole(
                Codec::Utf16 { big_endian: false },
                b"a\x00\x00\xd8b\x00",
                true
            )
            .unwrap(),
            vec![0x61, REPLACEMENT, 0x62]
        );
    }
}
