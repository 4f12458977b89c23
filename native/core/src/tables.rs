//! Character tables: what simscan's normalisation does with each code point, which characters are
//! word characters, digits and white space, and the single-byte codecs.
//!
//! They are generated from CPython 3.11's `unicodedata` and codecs by `native/tools/gen_tables.py`
//! (its docstring gives the byte layout) and embedded: the fingerprints are defined by Unicode 14.0
//! as that interpreter sees it, so no crate's Unicode version can change them.

use std::collections::HashMap;
use std::sync::OnceLock;

static DATA: &[u8] = include_bytes!("../data/unicode.bin");

const DROP: u32 = 0xFFFF_FFFF;
const SPACE: u32 = 0xFFFF_FFFE;
const BIAS: u32 = 0x4000_0000;
const MAX_CP: u32 = 0x11_0000;
/// An undefined byte of a single-byte codec.
pub const UNDEFINED: u32 = 0xFFFF_FFFF;

/// What normalisation makes of one code point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mapped<'a> {
    /// Nothing (control and format characters; combining marks under the heavy map).
    Drop,
    /// A space (white space; punctuation and symbols under the heavy map).
    Space,
    /// One code point (never a space).
    One(u32),
    /// Several code points (compatibility decompositions), possibly with spaces among them.
    Many(&'a [u32]),
}

/// A per-code-point map in two stages (blocks of code points share their entries).
pub struct CharMap {
    shift: u32,
    mask: u32,
    stage1: Vec<u16>,
    stage2: Vec<u32>,
    pool: Vec<u32>,
    /// The map of ASCII, for the byte fast path: 0 dropped, else the output byte (a space is 32).
    pub ascii: [u8; 128],
}

impl CharMap {
    #[inline]
    fn entry(&self, cp: u32) -> u32 {
        if cp >= MAX_CP {
            return BIAS; // not a code point: itself
        }
        let block = self.stage1[(cp >> self.shift) as usize] as usize;
        self.stage2[(block << self.shift) | (cp & self.mask) as usize]
    }

    /// The normalised form of `cp`.
    #[inline]
    pub fn get(&self, cp: u32) -> Mapped<'_> {
        let e = self.entry(cp);
        match e {
            DROP => Mapped::Drop,
            SPACE => Mapped::Space,
            _ if e & 0x8000_0000 != 0 => {
                let len = ((e >> 24) & 0x7F) as usize;
                let at = (e & 0x00FF_FFFF) as usize;
                Mapped::Many(&self.pool[at..at + len])
            }
            _ => Mapped::One(cp.wrapping_add(e).wrapping_sub(BIAS)),
        }
    }
}

/// Every table of the native core.
pub struct Tables {
    pub unicode_version: String,
    /// Fingerprint units: NFKD, case folding, marks, controls and format characters dropped,
    /// punctuation, symbols and white space as a space.
    pub heavy: CharMap,
    /// The content hash's form: white space as a space, controls and format characters dropped.
    pub light: CharMap,
    word: Vec<u8>,
    digit: Vec<u8>,
    space: Vec<u8>,
    astral_word: Vec<(u32, u32)>,
    codecs: HashMap<String, [u32; 256]>,
}

impl Tables {
    /// A word character as Python's `re` module's `\w` matches it (any plane).
    #[inline]
    pub fn is_word_re(&self, cp: u32) -> bool {
        if cp < 0x1_0000 {
            return bit(&self.word, cp);
        }
        let i = self.astral_word.partition_point(|&(_, end)| end <= cp);
        i < self.astral_word.len() && self.astral_word[i].0 <= cp
    }

    /// `str.isalnum()` or `_`, in the Basic Multilingual Plane (never a surrogate).
    #[inline]
    pub fn is_word(&self, cp: u32) -> bool {
        bit(&self.word, cp)
    }

    /// `str.isdigit()`, in the Basic Multilingual Plane.
    #[inline]
    pub fn is_digit(&self, cp: u32) -> bool {
        bit(&self.digit, cp)
    }

    /// White space as Python's `re` module's `\s` matches it (any plane).
    #[inline]
    pub fn is_space(&self, cp: u32) -> bool {
        if cp < 0x1_0000 {
            bit(&self.space, cp)
        } else {
            false
        }
    }

    /// The 256 code points of a single-byte codec by its Python name (`codecs.lookup(n).name`),
    /// [`UNDEFINED`] for the bytes it does not map.
    pub fn codec(&self, name: &str) -> Option<&[u32; 256]> {
        self.codecs.get(name)
    }
}

#[inline]
fn bit(set: &[u8], cp: u32) -> bool {
    cp < 0x1_0000 && set[(cp >> 3) as usize] & (1 << (cp & 7)) != 0
}

struct Cursor {
    at: usize,
}

impl Cursor {
    fn bytes(&mut self, n: usize) -> &'static [u8] {
        let out = &DATA[self.at..self.at + n];
        self.at += n;
        out
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.bytes(4).try_into().expect("4 bytes"))
    }
    fn u32s(&mut self, n: usize) -> Vec<u32> {
        self.bytes(4 * n)
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect()
    }
    fn map(&mut self) -> CharMap {
        let block = self.u32();
        let blocks = self.u32() as usize;
        let pool = self.u32() as usize;
        let n1 = (MAX_CP / block) as usize;
        let stage1 = self
            .bytes(2 * n1)
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes(c.try_into().expect("2 bytes")))
            .collect();
        let stage2 = self.u32s(blocks * block as usize);
        let pool = self.u32s(pool);
        let mut map = CharMap {
            shift: block.trailing_zeros(),
            mask: block - 1,
            stage1,
            stage2,
            pool,
            ascii: [0; 128],
        };
        for b in 0..128u32 {
            map.ascii[b as usize] = match map.get(b) {
                Mapped::Drop => 0,
                Mapped::Space => b' ',
                Mapped::One(c) if c < 128 => c as u8,
                _ => unreachable!("ASCII maps to ASCII"),
            };
        }
        map
    }
}

fn load() -> Tables {
    let mut c = Cursor { at: 0 };
    assert_eq!(c.bytes(4), b"SSUT", "unicode.bin: bad magic");
    assert_eq!(c.u32(), 1, "unicode.bin: unknown format version");
    let version = String::from_utf8_lossy(c.bytes(8))
        .trim_end_matches('\0')
        .to_string();
    let heavy = c.map();
    let light = c.map();
    let word = c.bytes(8192).to_vec();
    let digit = c.bytes(8192).to_vec();
    let space = c.bytes(8192).to_vec();
    let nr = c.u32() as usize;
    let astral_word = c
        .u32s(2 * nr)
        .chunks_exact(2)
        .map(|r| (r[0], r[1]))
        .collect();
    let n = c.u32() as usize;
    let mut codecs = HashMap::with_capacity(n);
    for _ in 0..n {
        let len = c.u32() as usize;
        let name = String::from_utf8_lossy(c.bytes(len)).to_string();
        let table: [u32; 256] = c.u32s(256).try_into().expect("256 entries");
        codecs.insert(name, table);
    }
    assert_eq!(c.at, DATA.len(), "unicode.bin: trailing bytes");
    Tables {
        unicode_version: version,
        heavy,
        light,
        word,
        digit,
        space,
        astral_word,
        codecs,
    }
}

/// The tables, parsed once per process.
pub fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(load)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_load_and_map_basic_characters() {
        let t = tables();
        assert_eq!(t.unicode_version, "14.0.0");
        assert_eq!(t.heavy.get('A' as u32), Mapped::One('a' as u32));
        assert_eq!(t.heavy.get('é' as u32), Mapped::One('e' as u32));
        assert_eq!(t.heavy.get(',' as u32), Mapped::Space);
        assert_eq!(t.heavy.get('\u{200b}' as u32), Mapped::Drop);
        assert_eq!(t.light.get('A' as u32), Mapped::One('A' as u32));
        assert_eq!(t.light.get('\r' as u32), Mapped::Space);
        assert_eq!(t.heavy.get(0xFB01), Mapped::Many(&['f' as u32, 'i' as u32])); // the ligature fi
        assert!(t.is_word('_' as u32) && t.is_word('z' as u32) && !t.is_word('-' as u32));
        assert!(t.is_digit('7' as u32) && !t.is_digit('x' as u32));
        assert!(t.is_space('\t' as u32) && !t.is_space('x' as u32));
        assert!(t.is_word_re(0x1D400) && !t.is_word_re(0x1F600)); // MATHEMATICAL BOLD A; an emoji
        assert_eq!(t.codec("cp1252").unwrap()[0x80], 0x20AC);
        assert_eq!(t.codec("cp1252").unwrap()[0x81], UNDEFINED);
        assert_eq!(t.heavy.ascii[b'A' as usize], b'a');
        assert_eq!(t.heavy.ascii[0], 0);
    }
}
