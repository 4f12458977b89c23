//! Normalisation of decoded text to *units*, streaming.
//!
//! Every code point goes through a [`CharMap`] (the heavy map gives the fingerprint units, the light
//! map the form whose hash decides "same text, other encoding"); then runs of spaces become one
//! space, and none is kept at either end of the whole text.  Before mapping, white space between two
//! characters of scripts written without spaces (Han, kana, CJK punctuation, full-width forms) is
//! dropped ([`Gaps`]): a line break inside a Chinese or Japanese sentence is no word break, and a
//! re-wrapped text keeps its windows.  Feeding a text in pieces gives the same units as feeding it
//! whole.  [`Pair`] makes both forms in one pass, with a byte fast path for ASCII (most text is ASCII
//! or nearly so), and the source character of each unit.

use crate::tables::{CharMap, Mapped, Tables};

const SPACE: u32 = b' ' as u32;

/// Collapses space runs across pieces: a space is held back until text follows it.
#[derive(Default, Clone, Copy)]
struct Collapse {
    emitted: bool,
    pending: bool,
    pending_src: usize,
}

impl Collapse {
    #[inline(always)]
    fn unit(&mut self, u: u32, src: usize, emit: &mut impl FnMut(u32, usize)) {
        if u == SPACE {
            if self.emitted && !self.pending {
                self.pending = true;
                self.pending_src = src;
            }
        } else {
            if self.pending {
                emit(SPACE, self.pending_src);
                self.pending = false;
            }
            emit(u, src);
            self.emitted = true;
        }
    }

    #[inline(always)]
    fn mapped(&mut self, m: Mapped<'_>, src: usize, emit: &mut impl FnMut(u32, usize)) {
        match m {
            Mapped::Drop => {}
            Mapped::Space => self.unit(SPACE, src, emit),
            Mapped::One(c) => self.unit(c, src, emit),
            Mapped::Many(s) => {
                for &c in s {
                    self.unit(c, src, emit);
                }
            }
        }
    }
}

/// Whether `cp` belongs to a script written without spaces between words.
#[inline]
pub fn unspaced(cp: u32) -> bool {
    matches!(cp, 0x3000..=0x30FF | 0x31F0..=0x31FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF)
}

/// Drops white space between two characters of unspaced scripts, across pieces: white space after
/// such a character is held until the next other character says whether it stays (as one space,
/// which is what any run of white space becomes anyway).
#[derive(Default, Clone, Copy)]
pub struct Gaps {
    last_unspaced: bool,
    /// The source index of the first held white space character.
    held: Option<usize>,
}

impl Gaps {
    /// For the code point `cp` (source index `src`): the source of a held space to write before it,
    /// and whether `cp` itself is to be mapped (white space being held is not).
    #[inline(always)]
    fn step(&mut self, t: &Tables, cp: u32, src: usize) -> (Option<usize>, bool) {
        if t.is_space(cp) {
            if self.last_unspaced {
                self.held.get_or_insert(src);
                return (None, false);
            }
            return (None, true);
        }
        let u = unspaced(cp);
        let held = self.held.take().filter(|_| !u);
        self.last_unspaced = u;
        (held, true)
    }

    /// Nothing is held and no white space would be: ASCII can go the fast way.
    #[inline(always)]
    fn idle(&self) -> bool {
        !self.last_unspaced && self.held.is_none()
    }
}

/// A streaming normaliser of one form.
pub struct Normalizer<'a> {
    map: &'a CharMap,
    state: Collapse,
    gaps: Gaps,
    consumed: usize,
}

impl<'a> Normalizer<'a> {
    pub fn new(map: &'a CharMap) -> Self {
        Normalizer {
            map,
            state: Collapse::default(),
            gaps: Gaps::default(),
            consumed: 0,
        }
    }

    /// Maps the next code points, calling `emit(unit, source index)` for each output unit; the
    /// source index is the code point's index in everything fed so far (a space: the first
    /// character of the run it stands for).
    #[inline]
    fn run(&mut self, cps: &[u32], mut emit: impl FnMut(u32, usize)) {
        let base = self.consumed;
        let t = crate::tables::tables();
        for (k, &cp) in cps.iter().enumerate() {
            let (held, map) = self.gaps.step(t, cp, base + k);
            if let Some(h) = held {
                self.state.unit(SPACE, h, &mut emit);
            }
            if !map {
                continue;
            }
            let m = if cp < 128 {
                match self.map.ascii[cp as usize] {
                    0 => Mapped::Drop,
                    b' ' => Mapped::Space,
                    c => Mapped::One(c as u32),
                }
            } else {
                self.map.get(cp)
            };
            self.state.mapped(m, base + k, &mut emit);
        }
        self.consumed += cps.len();
    }

    /// The units of the next code points, appended to `out`.
    pub fn feed(&mut self, cps: &[u32], out: &mut Vec<u32>) {
        out.reserve(cps.len());
        self.run(cps, |u, _| out.push(u));
    }

    /// The units and, per unit, the index of the code point it came from.
    pub fn feed_offsets(&mut self, cps: &[u32], out: &mut Vec<u32>, src: &mut Vec<usize>) {
        self.run(cps, |u, s| {
            out.push(u);
            src.push(s);
        });
    }
}

/// The heavy units (with the source character of each) and the light form (as UTF-8) of one text,
/// made in one pass.
///
/// Spaces are written *eagerly*: a space when the last unit written is not one (nor at the start),
/// so both outputs may end with one space that belongs to no text yet: the caller holds a final
/// space back until more follows, and drops it at the end ([`Pair::trailing_space`]).  ASCII is read
/// eight bytes at a time (SWAR: per-byte compares in one 64-bit word): a word without a dropped
/// byte is mapped at once, and a space right after a space is cut out of it.
pub struct Pair {
    heavy: &'static CharMap,
    light: &'static CharMap,
    tables: &'static Tables,
    /// The last unit written to each form is a space, or nothing was written yet.
    hs: bool,
    ls: bool,
    gaps: Gaps,
    /// Characters consumed so far (the source index of the next one).
    chars: usize,
    swar: bool,
    /// Bit c: the ASCII byte c is dropped (a control character), as the SWAR classes say.
    drop: u128,
}

/// What [`Pair`] writes: heavy units, the source character of each, the light form as UTF-8.
#[derive(Default)]
pub struct PairOut {
    pub units: Vec<u32>,
    pub src: Vec<u32>,
    pub light: Vec<u8>,
}

const L8: u64 = 0x0101_0101_0101_0101;
const H8: u64 = 0x8080_8080_8080_8080;
/// Byte k of this word is k: compacted like a word of units, it gives each unit's byte offset.
const OFFSETS: u64 = 0x0706_0504_0302_0100;

/// High bit of each byte of `x` (all below 0x80) that is at least `n` (1..=128).
#[inline(always)]
fn ge(x: u64, n: u8) -> u64 {
    x.wrapping_add((0x80 - n as u64) * L8) & H8
}

#[inline(always)]
fn lt(x: u64, n: u8) -> u64 {
    !ge(x, n) & H8
}

/// Bytes whose high-bit flag is set in `m`, as full 0xFF bytes.
#[inline(always)]
fn bytes_of(m: u64) -> u64 {
    (m >> 7).wrapping_mul(0xFF)
}

/// SWAR classes of eight ASCII bytes: (dropped, light spaces, heavy spaces, heavy bytes).
#[inline(always)]
fn classes(x: u64) -> (u64, u64, u64, u64) {
    let drop = lt(x, 9) | (ge(x, 14) & lt(x, 28)) | ge(x, 127);
    let lsp = lt(x, 33) & !drop;
    let upper = ge(x, 0x41) & lt(x, 0x5B);
    let alnum = (ge(x, 0x30) & lt(x, 0x3A)) | upper | (ge(x, 0x61) & lt(x, 0x7B));
    let hsp = !alnum & H8 & !drop;
    let hb = ((x | (upper >> 2)) & bytes_of(alnum)) | ((0x20 * L8) & bytes_of(hsp));
    (drop, lsp, hsp, hb)
}

/// `w` less its bytes flagged in `remove`, the rest moved down; and how many are left.
#[inline(always)]
fn squeeze(mut w: u64, mut remove: u64) -> (u64, usize) {
    let mut n = 8;
    while remove != 0 {
        // Highest flagged byte first: removing it does not move the lower ones.
        let k = (63 - remove.leading_zeros()) / 8;
        let low = if k == 0 { 0 } else { u64::MAX >> (64 - 8 * k) };
        w = (w & low) | ((w >> 8) & !low);
        remove &= !(0xFFu64 << (8 * k));
        n -= 1;
    }
    (w, n)
}

impl Pair {
    pub fn new(t: &'static Tables) -> Self {
        Pair {
            heavy: &t.heavy,
            light: &t.light,
            tables: t,
            hs: true,
            ls: true,
            gaps: Gaps::default(),
            chars: 0,
            swar: swar_matches(t),
            drop: (0..128u8)
                .filter(|&c| classes(c as u64).0 & 0x80 != 0)
                .fold(0, |m, c| m | 1u128 << c),
        }
    }

    /// Whether the outputs end with a space that no text follows yet (see [`Pair`]).
    pub fn trailing_space(units: &[u32], light: &[u8]) -> (bool, bool) {
        (units.last() == Some(&SPACE), light.last() == Some(&b' '))
    }

    #[inline(always)]
    fn unit_h(&mut self, u: u32, src: usize, out: &mut PairOut) {
        if u == SPACE {
            if !self.hs {
                out.units.push(SPACE);
                out.src.push(src as u32);
                self.hs = true;
            }
        } else {
            out.units.push(u);
            out.src.push(src as u32);
            self.hs = false;
        }
    }

    #[inline(always)]
    fn unit_l(&mut self, u: u32, out: &mut PairOut) {
        if u == SPACE {
            if !self.ls {
                out.light.push(b' ');
                self.ls = true;
            }
        } else {
            push_utf8(u, &mut out.light);
            self.ls = false;
        }
    }

    /// One code point (not through the ASCII fast path), at source index `self.chars`.
    #[inline]
    fn general(&mut self, cp: u32, out: &mut PairOut) {
        let src = self.chars;
        self.chars += 1;
        let (held, map) = self.gaps.step(self.tables, cp, src);
        if let Some(h) = held {
            self.unit_h(SPACE, h, out);
            self.unit_l(SPACE, out);
        }
        if !map {
            return;
        }
        let (hm, lm) = if cp < 128 {
            let (h, l) = ascii_table()[cp as usize];
            (ascii_mapped(h), ascii_mapped(l))
        } else {
            (self.heavy.get(cp), self.light.get(cp))
        };
        match hm {
            Mapped::Drop => {}
            Mapped::Space => self.unit_h(SPACE, src, out),
            Mapped::One(c) => self.unit_h(c, src, out),
            Mapped::Many(s) => {
                for &c in s {
                    self.unit_h(c, src, out);
                }
            }
        }
        match lm {
            Mapped::Drop => {}
            Mapped::Space => self.unit_l(SPACE, out),
            Mapped::One(c) => self.unit_l(c, out),
            Mapped::Many(s) => {
                for &c in s {
                    self.unit_l(c, out);
                }
            }
        }
    }

    /// The next code points.
    pub fn code_points(&mut self, cps: &[u32], out: &mut PairOut) {
        out.units.reserve(cps.len());
        out.src.reserve(cps.len());
        out.light.reserve(cps.len());
        for &cp in cps {
            self.general(cp, out);
        }
    }

    /// A run of ASCII bytes: eight at a time (see [`Pair`]), the rest one by one.
    fn ascii_run(&mut self, mut run: &[u8], out: &mut PairOut) {
        // White space right after an unspaced-script character waits for the next character, and
        // the run's first other byte decides: one by one until then.
        while !self.gaps.idle() && !run.is_empty() {
            self.general(run[0] as u32, out);
            run = &run[1..];
        }
        if !self.swar {
            // (not reached with the generated tables; exact for any ASCII map)
            for &c in run {
                self.general(c as u32, out);
            }
            return;
        }
        // Between dropped bytes (the CR of every CR LF line end), eight bytes at a time; each dropped
        // byte alone.  (Handling a word holding one by a byte-wise fallback re-sized the outputs for
        // the rest of the run each time: quadratic in a long run of CR LF lines.)
        while !run.is_empty() {
            let seg = run
                .iter()
                .position(|&c| (self.drop >> c) & 1 != 0)
                .unwrap_or(run.len());
            self.ascii_words(&run[..seg], out);
            if seg == run.len() {
                break;
            }
            self.general(run[seg] as u32, out);
            run = &run[seg + 1..];
        }
    }

    /// An ASCII run with no dropped byte (a word holding one, should the classes ever disagree with
    /// `drop`, goes byte by byte): the SWAR path.
    fn ascii_words(&mut self, run: &[u8], out: &mut PairOut) {
        let mut words = run.chunks_exact(8);
        let (mut ua, mut la) = (out.units.len(), out.light.len());
        slack(&mut out.units, run.len() + 8);
        slack(&mut out.src, run.len() + 8);
        slack(&mut out.light, run.len() + 8);
        for word in &mut words {
            let x = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            let (drop, lsp, hsp, hb) = classes(x);
            if drop != 0 {
                // A dropped byte (a control character): this word one byte at a time.
                out.units.truncate(ua);
                out.src.truncate(ua);
                out.light.truncate(la);
                for &c in word {
                    self.general(c as u32, out);
                }
                ua = out.units.len();
                la = out.light.len();
                slack(&mut out.units, run.len() + 8);
                slack(&mut out.src, run.len() + 8);
                slack(&mut out.light, run.len() + 8);
                continue;
            }
            // A space right after a space (or at the start) is not written.
            let hrem = hsp & ((hsp << 8) | if self.hs { 0x80 } else { 0 });
            let lrem = lsp & ((lsp << 8) | if self.ls { 0x80 } else { 0 });
            let lb = (x & !bytes_of(lsp)) | ((0x20 * L8) & bytes_of(lsp));
            let (h, n) = squeeze(hb, hrem);
            let (offs, _) = squeeze(OFFSETS, hrem);
            let base = self.chars as u32;
            for k in 0..8 {
                out.units[ua + k] = ((h >> (8 * k)) & 0xFF) as u32;
                out.src[ua + k] = base + ((offs >> (8 * k)) & 0xFF) as u32;
            }
            ua += n;
            let (l, m) = squeeze(lb, lrem);
            out.light[la..la + 8].copy_from_slice(&l.to_le_bytes());
            la += m;
            self.hs = hsp >> 63 != 0;
            self.ls = lsp >> 63 != 0;
            self.chars += 8;
        }
        out.units.truncate(ua);
        out.src.truncate(ua);
        out.light.truncate(la);
        for &c in words.remainder() {
            self.general(c as u32, out);
        }
    }

    /// The next piece of text (valid UTF-8): as [`Pair::code_points`], read from its bytes.
    pub fn str(&mut self, s: &str, out: &mut PairOut) {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let run = ascii_prefix(&b[i..]);
            if run > 0 {
                self.ascii_run(&b[i..i + run], out);
                i += run;
                continue;
            }
            // One character of valid UTF-8 (the lead byte gives its length).
            let c = b[i];
            let n = if c < 0xE0 {
                2
            } else if c < 0xF0 {
                3
            } else {
                4
            };
            let ch = s[i..i + n].chars().next().map_or(0xFFFD, |c| c as u32);
            self.general(ch, out);
            i += n;
        }
    }
}

#[inline(always)]
fn ascii_mapped(m: u8) -> Mapped<'static> {
    match m {
        0 => Mapped::Drop,
        b' ' => Mapped::Space,
        c => Mapped::One(c as u32),
    }
}

/// Makes `v` at least `n` elements longer (zeros), for writes past its end that [`Vec::truncate`]
/// then cuts to what was written.
#[inline]
fn slack<T: Copy + Default>(v: &mut Vec<T>, n: usize) {
    let len = v.len();
    if v.capacity() < len + n {
        v.reserve((len + n).max(2 * v.capacity()) - len);
    }
    v.resize(len + n, T::default());
}

/// The length of the ASCII prefix of `b` (eight bytes at a time).
#[inline]
fn ascii_prefix(b: &[u8]) -> usize {
    let mut words = b.chunks_exact(8);
    let mut n = 0;
    for w in &mut words {
        let x = u64::from_le_bytes(w.try_into().expect("8 bytes")) & H8;
        if x != 0 {
            return n + (x.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n + words
        .remainder()
        .iter()
        .position(|&c| c >= 0x80)
        .unwrap_or(words.remainder().len())
}

/// Whether the SWAR classes give exactly the tables' map of every ASCII byte.
fn swar_matches(t: &Tables) -> bool {
    (0..128u8).all(|c| {
        // Byte 0 of the word (the other seven are NULs, which are dropped).
        let (drop, lsp, hsp, hb) = classes(c as u64);
        let (drop, lsp, hsp) = (drop & 0x80, lsp & 0x80, hsp & 0x80);
        let h = if drop != 0 { 0 } else { (hb & 0xFF) as u8 };
        let l = if drop != 0 {
            0
        } else if lsp != 0 {
            b' '
        } else {
            c
        };
        h == t.heavy.ascii[c as usize]
            && l == t.light.ascii[c as usize]
            && (hsp != 0) == (h == b' ')
    })
}

/// One ASCII byte through both maps: (heavy, light), 0 for dropped.
fn ascii_pairs(t: &Tables) -> [(u8, u8); 128] {
    let mut out = [(0, 0); 128];
    for (b, o) in out.iter_mut().enumerate() {
        *o = (t.heavy.ascii[b], t.light.ascii[b]);
    }
    out
}

fn ascii_table() -> &'static [(u8, u8); 128] {
    use std::sync::OnceLock;
    static T: OnceLock<[(u8, u8); 128]> = OnceLock::new();
    T.get_or_init(|| ascii_pairs(crate::tables::tables()))
}

/// Appends the UTF-8 encoding of `cp` (a lone surrogate as Python's "surrogatepass" encodes it).
#[inline]
pub fn push_utf8(cp: u32, out: &mut Vec<u8>) {
    if cp < 0x80 {
        out.push(cp as u8);
    } else if cp < 0x800 {
        out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]);
    } else if cp < 0x1_0000 {
        out.extend_from_slice(&[
            0xE0 | (cp >> 12) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    } else {
        out.extend_from_slice(&[
            0xF0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    }
}

/// The units of a whole text.
pub fn normalize(map: &CharMap, cps: &[u32]) -> Vec<u32> {
    let mut out = Vec::new();
    Normalizer::new(map).feed(cps, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::tables;

    fn cps(s: &str) -> Vec<u32> {
        s.chars().map(|c| c as u32).collect()
    }

    fn text(u: &[u32]) -> String {
        u.iter().map(|&c| char::from_u32(c).unwrap()).collect()
    }

    #[test]
    fn collapses_and_strips_spaces() {
        let t = tables();
        assert_eq!(
            text(&normalize(&t.heavy, &cps("  Hello,\r\n  WORLD!  "))),
            "hello world"
        );
        assert_eq!(
            text(&normalize(&t.light, &cps("  Hello,\r\n  WORLD!  "))),
            "Hello, WORLD!"
        );
        assert_eq!(text(&normalize(&t.heavy, &cps("Ça\u{0301} ﬁn"))), "ca fin");
    }

    #[test]
    fn pieces_give_the_units_of_the_whole() {
        let t = tables();
        let s = cps(" a,  b -- ﬁ \u{200b} c.  ");
        let whole = normalize(&t.heavy, &s);
        for cut in 0..=s.len() {
            let mut n = Normalizer::new(&t.heavy);
            let mut out = Vec::new();
            n.feed(&s[..cut], &mut out);
            n.feed(&s[cut..], &mut out);
            assert_eq!(out, whole, "cut at {cut}");
        }
    }

    /// The Pair's outputs, the final space dropped: (units, sources, light).
    fn pair_of(pieces: &[&[u32]]) -> (Vec<u32>, Vec<u32>, Vec<u8>) {
        let mut p = Pair::new(tables());
        let mut out = PairOut::default();
        for piece in pieces {
            p.code_points(piece, &mut out);
        }
        finish(out)
    }

    fn pair_of_str(pieces: &[&str]) -> (Vec<u32>, Vec<u32>, Vec<u8>) {
        let mut p = Pair::new(tables());
        let mut out = PairOut::default();
        for piece in pieces {
            p.str(piece, &mut out);
        }
        finish(out)
    }

    fn finish(mut out: PairOut) -> (Vec<u32>, Vec<u32>, Vec<u8>) {
        let (a, b) = Pair::trailing_space(&out.units, &out.light);
        if a {
            out.units.pop();
            out.src.pop();
        }
        if b {
            out.light.pop();
        }
        (out.units, out.src, out.light)
    }

    /// Each form alone, through the single-form normaliser (with offsets).
    fn expected(c: &[u32]) -> (Vec<u32>, Vec<u32>, Vec<u8>) {
        let t = tables();
        let (mut u, mut src) = (Vec::new(), Vec::new());
        Normalizer::new(&t.heavy).feed_offsets(c, &mut u, &mut src);
        let light = text(&normalize(&t.light, c)).into_bytes();
        (u, src.into_iter().map(|x| x as u32).collect(), light)
    }

    #[test]
    fn the_pair_equals_each_form_alone() {
        for s in [
            " Ça va, l'ÉTÉ?\r\n\tﬁn — 東京 ①  \u{200b}x ",
            "漢字\n漢字 abc\r\n漢\u{3000} 字。\n字 x\n  東",
        ] {
            let c = cps(s);
            let want = expected(&c);
            for cut in 0..=c.len() {
                assert_eq!(pair_of(&[&c[..cut], &c[cut..]]), want, "cut at {cut}");
                let split: String = s.chars().take(cut).collect();
                let rest: String = s.chars().skip(cut).collect();
                assert_eq!(pair_of_str(&[&split, &rest]), want, "str cut at {cut}");
            }
        }
    }

    #[test]
    fn white_space_between_unspaced_characters_is_dropped() {
        let t = tables();
        let n = |s: &str| text(&normalize(&t.heavy, &cps(s)));
        assert_eq!(n("漢字\n漢字"), "漢字漢字");
        assert_eq!(n("漢。\n字"), "漢 字"); // the full stop is still a word break
        assert_eq!(n("漢\nx"), "漢 x");
        assert_eq!(n("a\u{3000}字"), "a 字");
        assert_eq!(n("word\nword"), "word word");
    }

    #[test]
    fn the_swar_path_equals_the_tables_on_ascii_texts() {
        assert!(Pair::new(tables()).swar);
        let mut rng = 99u64;
        for n in 0..600usize {
            let s: String = (0..n)
                .map(|_| {
                    rng = rng
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let r = (rng >> 33) as u8;
                    // Mostly letters, spaces and punctuation, any ASCII byte now and then, and
                    // unspaced-script characters around white space.
                    if r < 200 {
                        b"aB ,.\r\n\t1z-"[r as usize % 11] as char
                    } else if r < 220 {
                        '漢'
                    } else {
                        (r & 0x7F) as char
                    }
                })
                .collect();
            assert_eq!(pair_of_str(&[&s]), expected(&cps(&s)), "{s:?}");
        }
    }

    #[test]
    fn offsets_point_at_the_source() {
        let t = tables();
        let s = cps("ab,  cd");
        let (mut u, mut src) = (Vec::new(), Vec::new());
        Normalizer::new(&t.heavy).feed_offsets(&s, &mut u, &mut src);
        assert_eq!(text(&u), "ab cd");
        assert_eq!(src, vec![0, 1, 2, 5, 6]);
    }
}
