//! The evidence of a pair of files: exact shared-fingerprint counts at the pair's window and the
//! passages the shared fingerprints make (ALGORITHM_VERSION 12).
//!
//! Each file is a stored set: sorted distinct values with, aligned, each value's dominance span
//! `d`, the unit offset of its window and the window's characters in the decoded text
//! ([`crate::winnow::Kept`]).  A pair is compared at one winnowing window `w` (the coarser of the two
//! files' windows): a value counts in a file's set when its `d >= w` there, it is of the view being
//! scored, and it is not *common* (held by too many files of the index, or text to ignore).  The
//! intersection counts a value when it counts in both files.
//!
//! Passages: the matched values, ordered by their place in file a, are chained while each next one
//! lies at most `gap` units after the previous in *both* files and on nearly the same diagonal (the
//! offset between the two files moves by at most `drift` units: a word changed or a line re-wrapped
//! moves it a little).  Values held by many files (`frequent`) count in the scores but start or extend
//! no passage.  A passage covers, in each file, the characters from its first window's start to its
//! last window's end; its length is the smaller of its two sides.  `shared` is the number of
//! characters covered by passages, on the side where it is smaller.

/// One file's stored set, value by value.
#[derive(Clone, Copy, Debug)]
pub struct StoredSet<'a> {
    pub values: &'a [u64],
    pub d: &'a [u8],
    pub unit: &'a [u32],
    pub char: &'a [u32],
    pub chars: &'a [u16],
    /// A text file (its values carry a view bit); binary files are all of the text view.
    pub is_text: bool,
}

/// How a pair is compared.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// The pair's winnowing window: a value counts where its `d` reaches it.
    pub w: u8,
    /// The view scored (0 text, 1 code).
    pub view: u8,
    /// Most units between two neighbouring fingerprints of one passage, in both files.
    pub gap: u32,
    /// Most units the diagonal may move between neighbours of one passage.
    pub drift: u32,
    /// Whether the passages themselves are wanted (else only their lengths).
    pub passages: bool,
    /// Leave out common *text*, not only common values (see [`CommonText`]).
    pub common_text: Option<CommonText>,
}

/// Common text: a value lies in it when it starts between two windows of span >= `coarse` that are
/// common and at most `span` units apart (or between the text's start or end and such a window that
/// near).  A short file keeps fine windows that files holding the same text at a coarse window do not
/// keep, so their values look rare; the coarse ones they all keep say where the common text is.
#[derive(Clone, Copy, Debug)]
pub struct CommonText {
    pub coarse: u8,
    pub span: u32,
}

/// A shared passage: character ranges `[a0, a1)` of file a and `[b0, b1)` of file b, made of
/// `fingerprints` matched values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Passage {
    pub a0: u32,
    pub a1: u32,
    pub b0: u32,
    pub b1: u32,
    pub fingerprints: u32,
}

impl Passage {
    /// Characters, on the shorter side.
    pub fn len(&self) -> u32 {
        (self.a1 - self.a0).min(self.b1 - self.b0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Scores and passages of a pair on one view.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evidence {
    /// Values counted in both, in a, in b.
    pub inter: u32,
    pub na: u32,
    pub nb: u32,
    /// Characters of the longest passage (its shorter side).
    pub longest: u32,
    /// Characters covered by passages, on the side where fewer are.
    pub shared: u32,
    /// Only with [`Rule::passages`]; ordered by their start in file a.
    pub passages: Vec<Passage>,
}

/// View of a stored value: binary values are all of view 0; a text value's view is bit 62.
#[inline]
fn view_of(v: u64, is_text: bool) -> u8 {
    if is_text && v >> 63 == 0 {
        ((v >> 62) & 1) as u8
    } else {
        0
    }
}

/// Whether `v` is in the sorted slice `set`.
#[inline]
fn holds(set: &[u64], v: u64) -> bool {
    !set.is_empty() && set.binary_search(&v).is_ok()
}

/// Whether each of `values` is in the sorted slice `set`.
fn flags(values: &[u64], set: &[u64]) -> Vec<bool> {
    values.iter().map(|&v| holds(set, v)).collect()
}

/// Which values of `s` count under `rule`: their span reaches the window, they are of the view, not
/// common (`common[i]`: value i is), and (with [`Rule::common_text`]) not inside common text.
fn counted(s: &StoredSet<'_>, rule: &Rule, common: &[bool]) -> Vec<bool> {
    let of_view = |i: usize| view_of(s.values[i], s.is_text) == rule.view;
    let mut m: Vec<bool> = (0..s.values.len())
        .map(|i| s.d[i] >= rule.w && of_view(i) && !common[i])
        .collect();
    let Some(ct) = rule.common_text else { return m };
    // Common text: the stretches between two common coarse windows at most `span` units apart (and
    // from the text's start or end to a common coarse window that near).  Every file holding such a
    // text keeps its coarse windows at least every `coarse` windows (the winnowing guarantee), so
    // the stretch is known in each, whatever the file's own window; a value starting in one is
    // common there.
    let mut anchors: Vec<u32> = (0..s.values.len())
        .filter(|&i| s.d[i] >= ct.coarse && of_view(i) && common[i])
        .map(|i| s.unit[i])
        .collect();
    if anchors.is_empty() {
        return m;
    }
    anchors.sort_unstable();
    let end = (0..s.values.len())
        .filter(|&i| of_view(i))
        .map(|i| s.unit[i])
        .max()
        .unwrap_or(0);
    let mut spans: Vec<(u32, u32)> = Vec::new();
    if anchors[0] <= ct.span {
        spans.push((0, anchors[0]));
    }
    for w in anchors.windows(2) {
        if w[1] - w[0] <= ct.span {
            spans.push((w[0], w[1]));
        }
    }
    let last = anchors[anchors.len() - 1];
    if end - last <= ct.span {
        spans.push((last, end));
    }
    for (i, keep) in m.iter_mut().enumerate() {
        if *keep {
            let u = s.unit[i];
            // The last stretch starting at or before u (stretches are sorted and may touch).
            let k = spans.partition_point(|&(a, _)| a <= u);
            if k > 0 && u <= spans[k - 1].1 {
                *keep = false;
            }
        }
    }
    m
}

/// A matched value: its window in a and in b (unit offset, first character, end character).
#[derive(Clone, Copy, Debug)]
struct Match {
    ua: u32,
    ub: u32,
    a0: u32,
    a1: u32,
    b0: u32,
    b1: u32,
}

/// The evidence of `a` against `b` under `rule`; `common` and `frequent` are sorted.
pub fn evidence(
    a: &StoredSet<'_>,
    b: &StoredSet<'_>,
    common: &[u64],
    frequent: &[u64],
    rule: &Rule,
) -> Evidence {
    let fa = Flags {
        common: &flags(a.values, common),
        frequent: &flags(a.values, frequent),
    };
    let fb = Flags {
        common: &flags(b.values, common),
        frequent: &[],
    };
    let (ma, mb) = (counted(a, rule, fa.common), counted(b, rule, fb.common));
    flagged_evidence(a, &fa, &ma, b, &mb, rule)
}

/// Which values of a stored set are common and which frequent (aligned with its values; `frequent`
/// is read for the set in place a only).
struct Flags<'f> {
    common: &'f [bool],
    frequent: &'f [bool],
}

/// [`evidence`] with each value's membership in the common and frequent values known, and which
/// values count in each file ([`counted`]).
fn flagged_evidence(
    a: &StoredSet<'_>,
    fa: &Flags<'_>,
    ma: &[bool],
    b: &StoredSet<'_>,
    mb: &[bool],
    rule: &Rule,
) -> Evidence {
    let mut ev = Evidence::default();
    let mut matches = Vec::new();
    ev.na = ma.iter().filter(|&&x| x).count() as u32;
    ev.nb = mb.iter().filter(|&&x| x).count() as u32;
    let (mut i, mut j) = (0, 0);
    // A merge of the two sorted sets.
    while i < a.values.len() && j < b.values.len() {
        let (va, vb) = (a.values[i], b.values[j]);
        if va == vb && ma[i] && mb[j] {
            ev.inter += 1;
            if !fa.frequent[i] {
                matches.push(Match {
                    ua: a.unit[i],
                    ub: b.unit[j],
                    a0: a.char[i],
                    a1: a.char[i].saturating_add(a.chars[i] as u32),
                    b0: b.char[j],
                    b1: b.char[j].saturating_add(b.chars[j] as u32),
                });
            }
        }
        i += (va <= vb) as usize;
        j += (vb <= va) as usize;
    }
    if !matches.is_empty() {
        chain(&mut matches, rule, &mut ev);
    }
    ev
}

/// Chains the matches into passages (see the module's text) and fills `longest`, `shared` and,
/// when wanted, `passages`.
fn chain(matches: &mut [Match], rule: &Rule, ev: &mut Evidence) {
    matches.sort_unstable_by_key(|m| (m.ua, m.ub));
    // Open passages: the index of their last match, and their extent so far.
    struct Open {
        last: usize,
        p: Passage,
    }
    let mut open: Vec<Open> = Vec::new();
    let mut done: Vec<Passage> = Vec::new();
    for (k, m) in matches.iter().enumerate() {
        // Passages whose last match lies more than `gap` units before this one are closed.
        let mut o = 0;
        while o < open.len() {
            if m.ua - matches[open[o].last].ua > rule.gap {
                done.push(open.swap_remove(o).p);
            } else {
                o += 1;
            }
        }
        let joins = open.iter().position(|r| {
            let l = &matches[r.last];
            let (da, db) = (m.ua as i64 - l.ua as i64, m.ub as i64 - l.ub as i64);
            da > 0
                && db > 0
                && da <= rule.gap as i64
                && db <= rule.gap as i64
                && (db - da).abs() <= rule.drift as i64
        });
        match joins {
            Some(r) => {
                let p = &mut open[r].p;
                p.a0 = p.a0.min(m.a0);
                p.a1 = p.a1.max(m.a1);
                p.b0 = p.b0.min(m.b0);
                p.b1 = p.b1.max(m.b1);
                p.fingerprints += 1;
                open[r].last = k;
            }
            None => open.push(Open {
                last: k,
                p: Passage {
                    a0: m.a0,
                    a1: m.a1,
                    b0: m.b0,
                    b1: m.b1,
                    fingerprints: 1,
                },
            }),
        }
    }
    done.extend(open.into_iter().map(|r| r.p));
    done.sort_unstable_by_key(|p| (p.a0, p.b0, p.a1, p.b1));
    ev.longest = done.iter().map(Passage::len).max().unwrap_or(0);
    let side_a = union_length(done.iter().map(|p| (p.a0, p.a1)).collect());
    let side_b = union_length(done.iter().map(|p| (p.b0, p.b1)).collect());
    ev.shared = side_a.min(side_b);
    if rule.passages {
        ev.passages = done;
    }
}

/// [`flags`] of `values` in `set`, on up to `threads` threads, through a [`LowBits`] filter (most
/// values are in no set: one bit read says so, where a binary search of a large set misses the cache
/// at each step).
fn flags_on_threads(values: &[u64], set: &[u64], threads: usize) -> Vec<bool> {
    if set.is_empty() {
        return vec![false; values.len()];
    }
    let filter = LowBits::of(set);
    let one = |part: &[u64]| -> Vec<bool> {
        part.iter()
            .map(|&v| filter.may_hold(v) && holds(set, v))
            .collect()
    };
    on_threads(
        values,
        if values.len() < 1 << 16 { 1 } else { threads },
        one,
    )
}

/// `work` of `items` in contiguous shares on up to `threads` threads, the results in the items'
/// order (one thread when `threads` is 1 or there are few items).
fn on_threads<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    work: impl Fn(&[T]) -> Vec<R> + Sync,
) -> Vec<R> {
    if threads <= 1 || items.len() < 256 {
        return work(items);
    }
    let share = items.len().div_ceil(threads);
    let work = &work;
    std::thread::scope(|s| {
        let parts: Vec<_> = items
            .chunks(share)
            .map(|part| s.spawn(move || work(part)))
            .collect();
        parts
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// The low [`LowBits::BITS`] bits of every value of a set, as a bit table (128 KiB): a value whose
/// low bits are not there is not in the set (stored values are hashes: their low bits are uniform).
struct LowBits {
    table: Vec<u64>,
}

impl LowBits {
    const BITS: u32 = 20;

    fn of(set: &[u64]) -> Self {
        let mut table = vec![0u64; 1 << (Self::BITS - 6)];
        for &v in set {
            let k = (v & ((1 << Self::BITS) - 1)) as usize;
            table[k >> 6] |= 1 << (k & 63);
        }
        LowBits { table }
    }

    #[inline]
    fn may_hold(&self, v: u64) -> bool {
        let k = (v & ((1 << Self::BITS) - 1)) as usize;
        (self.table[k >> 6] >> (k & 63)) & 1 == 1
    }
}

/// Length of the union of half-open ranges.
fn union_length(mut spans: Vec<(u32, u32)>) -> u32 {
    spans.sort_unstable();
    let (mut total, mut end) = (0u32, 0u32);
    for (s, e) in spans {
        if e <= end {
            continue;
        }
        total += e - s.max(end);
        end = e;
    }
    total
}

/// Stored sets of many files, CSR-style: file `r` is `offsets[r]..offsets[r + 1]` of each array.
#[derive(Clone, Copy, Debug)]
pub struct StoredSets<'a> {
    pub offsets: &'a [i64],
    pub values: &'a [u64],
    pub d: &'a [u8],
    pub unit: &'a [u32],
    pub char: &'a [u32],
    pub chars: &'a [u16],
    pub is_text: &'a [bool],
}

impl<'a> StoredSets<'a> {
    /// The positions of row `r`'s values; `None` when the offsets are not a range.
    pub fn range(&self, r: usize) -> Option<std::ops::Range<usize>> {
        let (lo, hi) = (*self.offsets.get(r)?, *self.offsets.get(r + 1)?);
        if lo < 0 || hi < lo {
            return None;
        }
        Some(lo as usize..hi as usize)
    }

    /// Row `r`; `None` when the arrays do not agree with the offsets.
    pub fn row(&self, r: usize) -> Option<StoredSet<'a>> {
        let std::ops::Range { start: lo, end: hi } = self.range(r)?;
        Some(StoredSet {
            values: self.values.get(lo..hi)?,
            d: self.d.get(lo..hi)?,
            unit: self.unit.get(lo..hi)?,
            char: self.char.get(lo..hi)?,
            chars: self.chars.get(lo..hi)?,
            is_text: *self.is_text.get(r)?,
        })
    }
}

/// One pair to weigh: rows of [`StoredSets`] and the pair's winnowing window.
#[derive(Clone, Copy, Debug)]
pub struct PairJob {
    pub a: usize,
    pub b: usize,
    pub w: u8,
}

/// How a batch of pairs is weighed: [`Rule`] less each pair's own window, the gap given per unit of
/// that window.
#[derive(Clone, Copy, Debug)]
pub struct BatchRule {
    pub view: u8,
    pub gap_per_w: u32,
    pub drift: u32,
    pub passages: bool,
    pub common_text: Option<CommonText>,
}

/// [`evidence`] of every pair, on up to `threads` threads (each takes a contiguous share).  `None`
/// for a pair whose rows are out of range.
pub fn evidence_of_pairs(
    sets: &StoredSets<'_>,
    jobs: &[PairJob],
    batch: &BatchRule,
    common: &[u64],
    frequent: &[u64],
    threads: usize,
) -> Vec<Option<Evidence>> {
    let threads = threads.clamp(1, 64);
    // Each stored value's membership in the common and frequent values, once for all the pairs (a
    // file takes part in many pairs: looking them up per pair was most of the work).
    let (is_common, is_frequent) = (
        flags_on_threads(sets.values, common, threads),
        flags_on_threads(sets.values, frequent, threads),
    );
    let flags_of = |r: usize| -> Option<Flags<'_>> {
        let at = sets.range(r)?;
        Some(Flags {
            common: is_common.get(at.clone())?,
            frequent: is_frequent.get(at)?,
        })
    };
    // Which values count in each file at each window its pairs are weighed at, once for all the pairs
    // (a file takes part in many pairs; its common text is found once): per window, a flag per stored
    // value, set for the files weighed at that window.
    let mut windows: Vec<u8> = Vec::new();
    for j in jobs {
        if !windows.contains(&j.w) {
            windows.push(j.w);
        }
    }
    let n_rows = sets.offsets.len().saturating_sub(1);
    let mut masks: Vec<Vec<bool>> = Vec::with_capacity(windows.len());
    for &w in &windows {
        let mut need = vec![false; n_rows];
        for j in jobs.iter().filter(|j| j.w == w) {
            for r in [j.a, j.b] {
                if let Some(x) = need.get_mut(r) {
                    *x = true;
                }
            }
        }
        let rows: Vec<usize> = (0..n_rows).filter(|&r| need[r]).collect();
        let rule = Rule {
            w,
            view: batch.view,
            gap: 0,
            drift: 0,
            passages: false,
            common_text: batch.common_text,
        };
        let count = |part: &[usize]| -> Vec<(usize, Vec<bool>)> {
            part.iter()
                .filter_map(|&r| Some((r, counted(&sets.row(r)?, &rule, flags_of(r)?.common))))
                .collect()
        };
        let got = on_threads(&rows, threads, count);
        let mut flat = vec![false; sets.values.len()];
        for (r, m) in got {
            if let Some(dst) = sets.range(r).and_then(|at| flat.get_mut(at)) {
                if dst.len() == m.len() {
                    dst.copy_from_slice(&m);
                }
            }
        }
        masks.push(flat);
    }
    let mask = |r: usize, w: u8| -> Option<&[bool]> {
        let k = windows.iter().position(|&x| x == w)?;
        masks[k].get(sets.range(r)?)
    };
    let run = |part: &[PairJob]| -> Vec<Option<Evidence>> {
        let one = |job: &PairJob| -> Option<Evidence> {
            let (a, b) = (sets.row(job.a)?, sets.row(job.b)?);
            let fa = flags_of(job.a)?;
            let rule = Rule {
                w: job.w,
                view: batch.view,
                gap: batch.gap_per_w.saturating_mul(job.w as u32),
                drift: batch.drift,
                passages: batch.passages,
                common_text: batch.common_text,
            };
            let (ma, mb) = (mask(job.a, job.w)?, mask(job.b, job.w)?);
            Some(flagged_evidence(&a, &fa, ma, &b, mb, &rule))
        };
        part.iter().map(one).collect()
    };
    on_threads(jobs, threads, run)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Owned {
        values: Vec<u64>,
        d: Vec<u8>,
        unit: Vec<u32>,
        char: Vec<u32>,
        chars: Vec<u16>,
    }

    impl Owned {
        /// Values at unit offsets (characters = units + 10, windows of 50).
        fn new(mut items: Vec<(u64, u8, u32)>) -> Self {
            items.sort_unstable();
            Owned {
                values: items.iter().map(|x| x.0).collect(),
                d: items.iter().map(|x| x.1).collect(),
                unit: items.iter().map(|x| x.2).collect(),
                char: items.iter().map(|x| x.2 + 10).collect(),
                chars: items.iter().map(|_| 50).collect(),
            }
        }

        fn set(&self) -> StoredSet<'_> {
            StoredSet {
                values: &self.values,
                d: &self.d,
                unit: &self.unit,
                char: &self.char,
                chars: &self.chars,
                is_text: true,
            }
        }
    }

    const RULE: Rule = Rule {
        w: 4,
        view: 0,
        gap: 100,
        drift: 0,
        passages: true,
        common_text: None,
    };

    /// Counts by their definition: one value at a time, by search.
    fn counts_slow(a: &Owned, b: &Owned, rule: &Rule, common: &[u64]) -> (u32, u32, u32) {
        let ok = |o: &Owned, k: usize| {
            o.d[k] >= rule.w
                && view_of(o.values[k], true) == rule.view
                && !common.contains(&o.values[k])
        };
        let na = (0..a.values.len()).filter(|&k| ok(a, k)).count() as u32;
        let nb = (0..b.values.len()).filter(|&k| ok(b, k)).count() as u32;
        let inter = (0..a.values.len())
            .filter(|&k| {
                ok(a, k)
                    && b.values
                        .iter()
                        .position(|&v| v == a.values[k])
                        .is_some_and(|m| ok(b, m))
            })
            .count() as u32;
        (inter, na, nb)
    }

    #[test]
    fn counts_follow_levels_views_and_common_values() {
        let mut x = 0x1234_5678_9abc_def1u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..200 {
            let n = 1 + round % 40;
            let shared: Vec<u64> = (0..n).map(|_| next() >> 1).collect();
            let mut ia = Vec::new();
            let mut ib = Vec::new();
            for (k, &v) in shared.iter().enumerate() {
                let r = next();
                if r % 3 != 0 {
                    ia.push((v, (r >> 8) as u8 % 12, k as u32 * 7));
                }
                if r % 5 != 0 {
                    ib.push((v, (r >> 16) as u8 % 12, k as u32 * 9));
                }
            }
            ia.dedup_by_key(|t| t.0);
            ib.dedup_by_key(|t| t.0);
            let (a, b) = (Owned::new(ia), Owned::new(ib));
            let common: Vec<u64> = {
                let mut c: Vec<u64> = shared.iter().copied().filter(|v| v % 7 == 0).collect();
                c.sort_unstable();
                c
            };
            for w in [1u8, 4, 8] {
                for view in [0u8, 1] {
                    let rule = Rule { w, view, ..RULE };
                    let ev = evidence(&a.set(), &b.set(), &common, &[], &rule);
                    assert_eq!(
                        (ev.inter, ev.na, ev.nb),
                        counts_slow(&a, &b, &rule, &common)
                    );
                }
            }
        }
    }

    #[test]
    fn a_batch_weighs_each_pair_as_alone() {
        // Files drawn from one pool of values at random places and spans (some common, some common
        // coarse anchors: common text), weighed in one batch at several windows, on 1 and 3 threads.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let pool: Vec<u64> = (0..60).map(|_| next() >> 2).collect();
        let files: Vec<Owned> = (0..260)
            .map(|_| {
                let mut items: Vec<(u64, u8, u32)> = Vec::new();
                for &v in &pool {
                    let r = next();
                    if r % 3 != 0 {
                        items.push((v, (r >> 8) as u8 % 80, (r >> 20) as u32 % 400));
                    }
                }
                Owned::new(items)
            })
            .collect();
        let mut common: Vec<u64> = pool.iter().copied().filter(|v| v % 5 == 0).collect();
        common.sort_unstable();
        let mut frequent: Vec<u64> = pool.iter().copied().filter(|v| v % 7 == 0).collect();
        frequent.sort_unstable();
        let mut offsets = vec![0i64];
        let (mut values, mut d, mut unit, mut char, mut chars) =
            (vec![], vec![], vec![], vec![], vec![]);
        for f in &files {
            values.extend(&f.values);
            d.extend(&f.d);
            unit.extend(&f.unit);
            char.extend(&f.char);
            chars.extend(&f.chars);
            offsets.push(values.len() as i64);
        }
        let is_text = vec![true; files.len()];
        let sets = StoredSets {
            offsets: &offsets,
            values: &values,
            d: &d,
            unit: &unit,
            char: &char,
            chars: &chars,
            is_text: &is_text,
        };
        // Every file in a few pairs (with itself too), enough of both to be shared among threads.
        let mut jobs = Vec::new();
        for a in 0..files.len() {
            for k in 0..3 {
                let b = (a * 7 + k * 31) % files.len();
                jobs.push(PairJob {
                    a,
                    b,
                    w: [4u8, 14, 64][(a + k) % 3],
                });
            }
        }
        let common_text = Some(CommonText {
            coarse: 40,
            span: 150,
        });
        for threads in [1, 3] {
            let batch = BatchRule {
                view: 0,
                gap_per_w: 2,
                drift: 12,
                passages: false,
                common_text,
            };
            let got = evidence_of_pairs(&sets, &jobs, &batch, &common, &frequent, threads);
            for (job, ev) in jobs.iter().zip(got) {
                let rule = Rule {
                    w: job.w,
                    view: 0,
                    gap: 2 * job.w as u32,
                    drift: 12,
                    passages: false,
                    common_text,
                };
                let want = evidence(
                    &files[job.a].set(),
                    &files[job.b].set(),
                    &common,
                    &frequent,
                    &rule,
                );
                let ev = ev.expect("rows in range");
                assert_eq!(
                    (ev.inter, ev.na, ev.nb, ev.longest, ev.shared),
                    (want.inter, want.na, want.nb, want.longest, want.shared)
                );
            }
        }
    }

    #[test]
    fn a_shared_run_is_one_passage_and_a_far_match_another() {
        // a: values 1..=5 at units 0, 20, .., 80; b holds them 300 units later, and value 9 far away.
        let a = Owned::new(
            (1..=5)
                .map(|v| (v, 10, (v as u32 - 1) * 20))
                .chain([(9, 10, 2000)])
                .collect(),
        );
        let b = Owned::new(
            (1..=5)
                .map(|v| (v, 10, 300 + (v as u32 - 1) * 20))
                .chain([(9, 10, 50)])
                .collect(),
        );
        let ev = evidence(&a.set(), &b.set(), &[], &[], &RULE);
        assert_eq!(ev.inter, 6);
        assert_eq!(
            ev.passages,
            vec![
                Passage {
                    a0: 10,
                    a1: 140,
                    b0: 310,
                    b1: 440,
                    fingerprints: 5
                },
                Passage {
                    a0: 2010,
                    a1: 2060,
                    b0: 60,
                    b1: 110,
                    fingerprints: 1
                },
            ]
        );
        assert_eq!(ev.longest, 130);
        assert_eq!(ev.shared, 180);
        // Frequent values count but make no passage.
        let ev = evidence(&a.set(), &b.set(), &[], &[3], &RULE);
        assert_eq!(ev.inter, 6);
        assert_eq!(ev.passages[0].fingerprints, 4);
        // A gap above the rule's splits the run.
        let ev = evidence(&a.set(), &b.set(), &[], &[], &Rule { gap: 19, ..RULE });
        assert_eq!(ev.passages.len(), 6);
    }

    #[test]
    fn drift_lets_a_passage_bend_a_little() {
        // b's copy has 3 units more between the third and fourth value (a word longer).
        let a = Owned::new((1..=5).map(|v| (v, 10, (v as u32 - 1) * 20)).collect());
        let b = Owned::new(
            (1..=5)
                .map(|v| (v, 10, (v as u32 - 1) * 20 + if v > 3 { 3 } else { 0 }))
                .collect(),
        );
        assert_eq!(
            evidence(&a.set(), &b.set(), &[], &[], &RULE).passages.len(),
            2
        );
        let ev = evidence(&a.set(), &b.set(), &[], &[], &Rule { drift: 3, ..RULE });
        assert_eq!(ev.passages.len(), 1);
        assert_eq!(ev.longest, 130);
    }

    #[test]
    fn common_text_takes_the_fine_values_between_common_coarse_ones() {
        // a: a licence (units 0..400) with coarse common values at 0, 120, 240, 360 and fine values
        // between them, then its own text from 1000 on (a coarse common value alone there, and fine
        // values near it but more than `span` from any other common coarse one).
        let mut items: Vec<(u64, u8, u32)> =
            vec![(1, 120, 0), (2, 120, 120), (3, 120, 240), (4, 120, 360)];
        items.extend((0..8).map(|k| (100 + k, 5, 10 + 45 * k as u32)));
        items.extend([(9, 120, 1000), (200, 5, 1010), (201, 5, 1400)]);
        let a = Owned::new(items);
        let b = Owned::new(vec![(100, 5, 0), (101, 5, 45), (200, 5, 70), (201, 5, 500)]);
        let common = [1u64, 2, 3, 4, 9];
        let plain = evidence(&a.set(), &b.set(), &common, &[], &RULE);
        assert_eq!((plain.inter, plain.na, plain.nb), (4, 10, 4));
        let rule = Rule {
            common_text: Some(CommonText {
                coarse: 100,
                span: 150,
            }),
            ..RULE
        };
        let ev = evidence(&a.set(), &b.set(), &common, &[], &rule);
        // The 8 fine licence values of a are common text there; b has no common anchor, so its are not.
        assert_eq!((ev.inter, ev.na, ev.nb), (2, 2, 4));
    }

    #[test]
    fn union_of_ranges() {
        assert_eq!(union_length(vec![(0, 10), (5, 15), (20, 25), (21, 22)]), 20);
        assert_eq!(union_length(vec![]), 0);
    }
}
