//! The inverted-index half of the pair search, one partition of the value space at a time: the
//! partition's (value, file, level) entries sorted by value, its runs of equal values (posting
//! lists) measured, and the pairs of files inside the runs under the cut-off counted.
//!
//! Python (`simscan.similarity.core.shared_counts` and the sliced search of
//! `simscan.similarity.slices`) chooses the partitions, the cut-off and the pair budget, and adds
//! up what each partition gives: run lengths, the common and frequent values, each file's values
//! per level, and the shared counts of its pairs.  Here is only the work per value.
//!
//! Sorting: one counting pass on the value's top 16 bits into buckets, then each bucket sorted by
//! the whole value (fingerprints are hash values: the buckets are small).  Any input is sorted
//! correctly; skewed values only make the buckets larger.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What one partition gives.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counted {
    /// `hist[L]`: runs of `L` entries, lengths above `hist.len() - 1` counted in the last bin.
    pub hist: Vec<u64>,
    /// The values of runs longer than the cut-off, ascending.
    pub common: Vec<u64>,
    /// The values of runs longer than the frequent cut-off and not longer than the pair cut-off,
    /// ascending.
    pub frequent: Vec<u64>,
    /// The length of each run of `frequent`.
    pub frequent_len: Vec<u32>,
    /// The values of the *held* runs (longer than the pair cut-off, not longer than the cut-off) when
    /// pairs are made, ascending, and their lengths.
    pub held_runs: Vec<u64>,
    pub held_runs_len: Vec<u32>,
    /// Their entries too when [`Rule::hold_entries`]: values, positions and levels, run after run.
    /// Counted again with the final cut-off, they give what the partition would have given with it
    /// (see [`Rule::pair_cut`]).
    pub held_values: Vec<u64>,
    pub held_own: Vec<u32>,
    pub held_level: Vec<u8>,
    /// Distinct pair keys `lo * n + hi` (positions of the two files, `lo < hi`), ascending.
    pub keys: Vec<u64>,
    /// How many values each pair of `keys` shares.
    pub counts: Vec<u32>,
    /// Pair incidences the runs up to the pair cut-off make (each run of `L` entries: `L (L - 1) / 2`).
    pub made: u64,
    /// The partition's distinct pairs were more than [`Rule::key_limit`]: none are given (`keys` and
    /// `counts` empty).
    pub over: bool,
}

/// How a partition is counted.
#[derive(Debug, Clone)]
pub struct Rule<'a> {
    /// Files taking part (positions are `0..n`).
    pub n: u64,
    /// Runs longer than this are common: no pairs, not counted in `kept`.
    pub cut: usize,
    /// Runs longer than this (and not common) are *held*: no pairs, not counted in `kept`, not
    /// frequent; their entries are given back (`Counted::held_*`) so that the caller can count them
    /// again once it knows its final cut-off (between this and `cut`), without a second pass over
    /// every partition.  `cut` or more: nothing is held.
    pub pair_cut: usize,
    /// Give the held runs' entries back, not only their values.
    pub hold_entries: bool,
    /// Runs longer than this (and not common) are frequent.
    pub frequent_cut: usize,
    /// Bins of the run-length histogram (the last one holds every longer run).
    pub hist_bins: usize,
    /// Make the pairs (else only measure).
    pub pairs: bool,
    /// Most pair incidences the partition may make: when its runs under the cut-off make more, it
    /// makes none (its caller lowers the cut-off and counts again).
    pub pair_limit: u64,
    /// Most distinct pairs the partition may give (the memory they take): when its pairs are more, it
    /// stops making them and gives none, with [`Counted::over`] (its caller lowers the cut-off).
    pub key_limit: u64,
    /// Each position's level: a value counts for a pair where its level reaches both files' levels
    /// (None: every shared value counts).
    pub row_level: Option<&'a [u8]>,
    /// Columns of the per-file level tables (levels above `width - 1` count in the last column).
    pub width: usize,
    /// Threads that count the pairs (1: the calling thread alone; the result is the same).
    pub threads: usize,
}

/// Bits of the bucket pass of [`sorted_entries`] (4,096 buckets: their write positions stay in
/// the core's cache).
const BUCKET_BITS: u32 = 12;

/// Sorts the entries by their value turned left by two bits (ties in any order), which puts equal
/// values together: fingerprints keep their top two bits for kind and view, so the bits below them
/// choose the buckets.  Returns them packed as (value turned, position << 8 | level).
fn sorted_entries(values: &[u64], own: &[u32], level: &[u8]) -> Vec<(u64, u64)> {
    let m = values.len();
    let nb = 1usize << BUCKET_BITS;
    let shift = 64 - BUCKET_BITS;
    let mut start = vec![0usize; nb + 1];
    for &v in values {
        start[(v.rotate_left(2) >> shift) as usize + 1] += 1;
    }
    for b in 0..nb {
        start[b + 1] += start[b];
    }
    let mut next = start.clone();
    let mut out = vec![(0u64, 0u64); m];
    for k in 0..m {
        let key = values[k].rotate_left(2);
        let b = (key >> shift) as usize;
        out[next[b]] = (key, (u64::from(own[k]) << 8) | u64::from(level[k]));
        next[b] += 1;
    }
    for b in 0..nb {
        let (lo, hi) = (start[b], start[b + 1]);
        if hi - lo > 1 {
            out[lo..hi].sort_unstable_by_key(|e| e.0);
        }
    }
    out
}

/// Counts one partition: `values`, `own` (each entry's position, `< rule.n`) and `level` aligned.
/// `full` and `kept` (each `n * width`, row-major by position), when given, receive per position
/// and level the entries of every run / of the runs under the cut-off.  Panics when the arrays
/// disagree in length or a position is out of range.
pub fn count_partition(
    values: &[u64],
    own: &[u32],
    level: &[u8],
    rule: &Rule,
    mut full: Option<&mut [i32]>,
    mut kept: Option<&mut [i32]>,
) -> Counted {
    let m = values.len();
    assert!(
        own.len() == m && level.len() == m,
        "values, owners and levels must be as long"
    );
    let width = rule.width.max(1);
    let cell = |e: u64| -> usize {
        let pos = (e >> 8) as usize;
        assert!((pos as u64) < rule.n, "a position is out of range");
        pos * width + ((e & 0xFF) as usize).min(width - 1)
    };
    // Per file and level, in the input's order (a file's values lie together there: the tables are
    // written in order), every entry; the runs over the cut-off are taken back out of ``kept`` below.
    for (k, &o) in own.iter().enumerate() {
        let c = cell((u64::from(o) << 8) | u64::from(level[k]));
        if let Some(f) = full.as_deref_mut() {
            f[c] += 1;
        }
        if let Some(f) = kept.as_deref_mut() {
            f[c] += 1;
        }
    }
    let entries = sorted_entries(values, own, level);
    let bins = rule.hist_bins.max(1);
    let mut out = Counted {
        hist: vec![0; bins],
        ..Counted::default()
    };
    // The runs (start, length) first: whether their pairs fit the limit is known before any is made.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut s = 0usize;
    while s < m {
        let mut e = s + 1;
        while e < m && entries[e].0 == entries[s].0 {
            e += 1;
        }
        runs.push((s, e - s));
        s = e;
    }
    let pair_cut = rule.pair_cut.min(rule.cut);
    for &(_, len) in &runs {
        out.hist[len.min(bins - 1)] += 1;
        if len <= pair_cut && len >= 2 {
            out.made += (len as u64) * (len as u64 - 1) / 2;
        }
    }
    let make = rule.pairs && out.made <= rule.pair_limit;
    let mut paired: Vec<(usize, usize)> = Vec::new();
    let mut frequent: Vec<(u64, u32)> = Vec::new();
    let mut held: Vec<(u64, u32)> = Vec::new();
    for &(s, len) in &runs {
        let run = &entries[s..s + len];
        let v = entries[s].0.rotate_right(2);
        if len > pair_cut {
            if len > rule.cut {
                out.common.push(v);
            } else if make {
                held.push((v, len as u32));
                if rule.hold_entries {
                    for x in run {
                        out.held_values.push(v);
                        out.held_own.push((x.1 >> 8) as u32);
                        out.held_level.push((x.1 & 0xFF) as u8);
                    }
                }
            }
            if let Some(k) = kept.as_deref_mut() {
                for x in run {
                    k[cell(x.1)] -= 1;
                }
            }
            continue;
        }
        if len > rule.frequent_cut {
            frequent.push((v, len as u32));
        }
        if make && len >= 2 {
            paired.push((s, len));
        }
    }
    out.common.sort_unstable();
    frequent.sort_unstable();
    (out.frequent, out.frequent_len) = frequent.into_iter().unzip();
    held.sort_unstable();
    (out.held_runs, out.held_runs_len) = held.into_iter().unzip();
    match pair_counts(&entries, &paired, rule, out.made) {
        Some(made) => (out.keys, out.counts) = made,
        None => out.over = true,
    }
    out
}

/// Pair incidences under which one thread makes them all (a thread's start costs more); the tests
/// share even their small partitions among threads.
#[cfg(not(test))]
const THREADED_PAIRS: u64 = 1 << 18;
#[cfg(test)]
const THREADED_PAIRS: u64 = 1;

/// The distinct pair keys of the runs `paired` (start, length in `entries`), ascending, and how many
/// runs hold each pair (where the value's level reaches both files' levels, see [`Rule::row_level`]);
/// None when they are more than [`Rule::key_limit`] (the threads stop once their keys together are).
///
/// No sort of the pairs: each run's entries are put in position order, and each file `a` adds, for
/// every run it is in, one to a counter of every file after it in the run (a counter per file taking
/// part, the ones touched listed); its pairs `(a, b)` are then the counters it touched, in order.  A
/// run of L files costs L (L - 1) / 2 counter increments where a sort of its pair keys cost several
/// times that (20,000 near-copies in clusters of 50: 6.4 M incidences a partition).  Files are shared among
/// up to `rule.threads` threads in contiguous ranges of about equal work, each with its counters; the
/// ranges' keys follow one another, so they are in order as they come.
fn pair_counts(
    entries: &[(u64, u64)],
    paired: &[(usize, usize)],
    rule: &Rule,
    made: u64,
) -> Option<(Vec<u64>, Vec<u32>)> {
    let total: usize = paired.iter().map(|&(_, len)| len).sum();
    if total == 0 {
        return Some((Vec::new(), Vec::new()));
    }
    assert!(
        total <= u32::MAX as usize,
        "a partition's paired entries must be numbered in 32 bits"
    );
    // The runs' entries in position order, run after run: (position, level), and each entry's run end.
    let mut pos: Vec<u32> = Vec::with_capacity(total);
    let mut lvl: Vec<u8> = Vec::with_capacity(total);
    let mut end: Vec<usize> = Vec::with_capacity(total);
    let mut run: Vec<(u32, u8)> = Vec::new();
    for &(s, len) in paired {
        run.clear();
        run.extend(
            entries[s..s + len]
                .iter()
                .map(|e| ((e.1 >> 8) as u32, (e.1 & 0xFF) as u8)),
        );
        run.sort_unstable();
        let stop = pos.len() + len;
        for &(p, l) in &run {
            pos.push(p);
            lvl.push(l);
            end.push(stop);
        }
    }
    // Files numbered 0..d in position order, each file's entries together (`at[first[x]..first[x + 1]]`)
    // and each entry's file number (`local`).  When the index's files are few beside the entries, the
    // positions themselves (a counting sort); else the files taking part renumbered by one sort of
    // (position, entry), so that no array is as long as the index's files (a partition of the
    // 1,000,000-file mix holds ~700,000 entries: arrays of n cost 11 ms a call, 256 calls a search).
    // The numbering keeps the positions' order, so keys built from it come out in order.
    let n = rule.n as usize;
    let (file, first, at, local): (Vec<u32>, Vec<usize>, Vec<usize>, Vec<u32>) = if n <= 4 * total {
        let mut first = vec![0usize; n + 1];
        for &p in &pos {
            first[p as usize + 1] += 1;
        }
        for a in 0..n {
            first[a + 1] += first[a];
        }
        let mut next = first.clone();
        let mut at = vec![0usize; total];
        for (k, &p) in pos.iter().enumerate() {
            at[next[p as usize]] = k;
            next[p as usize] += 1;
        }
        ((0..n as u32).collect(), first, at, pos.clone())
    } else {
        let mut order: Vec<u64> = pos
            .iter()
            .enumerate()
            .map(|(k, &p)| (u64::from(p) << 32) | k as u64)
            .collect();
        order.sort_unstable();
        let mut file: Vec<u32> = Vec::new();
        let mut first: Vec<usize> = Vec::new();
        let mut at: Vec<usize> = Vec::with_capacity(total);
        let mut local = vec![0u32; total];
        for &e in &order {
            let (p, k) = ((e >> 32) as u32, (e & 0xFFFF_FFFF) as usize);
            if file.last() != Some(&p) {
                first.push(at.len());
                file.push(p);
            }
            local[k] = (file.len() - 1) as u32;
            at.push(k);
        }
        first.push(total);
        (file, first, at, local)
    };
    let d = file.len();
    // Keys made so far by every thread: a thread that takes them over the limit stops them all (so
    // they stop exactly when the partition's distinct pairs are more than the limit).
    let given = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let one = |range: std::ops::Range<usize>| -> Option<(Vec<u64>, Vec<u32>)> {
        let (mut keys, mut counts) = (Vec::new(), Vec::new());
        let mut count = vec![0u32; d];
        let mut touched: Vec<u32> = Vec::new();
        for x in range {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            let a = file[x] as usize;
            for &k in &at[first[x]..first[x + 1]] {
                let la = lvl[k];
                for j in k + 1..end[k] {
                    if let Some(rl) = rule.row_level {
                        if la.min(lvl[j]) < rl[a].max(rl[pos[j] as usize]) {
                            continue;
                        }
                    }
                    let y = local[j];
                    let c = &mut count[y as usize];
                    if *c == 0 {
                        touched.push(y);
                    }
                    *c += 1;
                }
            }
            touched.sort_unstable();
            for &y in &touched {
                keys.push(a as u64 * rule.n + u64::from(file[y as usize]));
                counts.push(count[y as usize]);
                count[y as usize] = 0;
            }
            if rule.key_limit < u64::MAX {
                let t = touched.len() as u64;
                if given.fetch_add(t, Ordering::Relaxed) + t > rule.key_limit {
                    stop.store(true, Ordering::Relaxed);
                    return None;
                }
            }
            touched.clear();
        }
        Some((keys, counts))
    };
    let threads = rule.threads.clamp(1, 64);
    if threads == 1 || made < THREADED_PAIRS {
        return one(0..d);
    }
    // Contiguous ranges of files of about equal work (the entries after each of a file's entries).
    let per = made.div_ceil(threads as u64);
    let mut bounds = vec![0usize];
    let mut work = 0u64;
    for x in 0..d {
        work += at[first[x]..first[x + 1]]
            .iter()
            .map(|&k| (end[k] - k - 1) as u64)
            .sum::<u64>();
        if work >= per * bounds.len() as u64 && x + 1 < d {
            bounds.push(x + 1);
        }
    }
    bounds.push(d);
    let one = &one;
    let parts: Vec<Option<(Vec<u64>, Vec<u32>)>> = std::thread::scope(|sc| {
        let handles: Vec<_> = bounds
            .windows(2)
            .map(|w| sc.spawn(move || one(w[0]..w[1])))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let (mut keys, mut counts) = (Vec::new(), Vec::new());
    for part in parts {
        let (k, c) = part?;
        keys.extend(k);
        counts.extend(c);
    }
    Some((keys, counts))
}

/// Calls `emit(key, summed count)` for each distinct key of `keys` (batches, each sorted strictly
/// ascending; `counts` aligned), in ascending order: a k-way merge on a heap of each batch's next key.
fn merged(keys: &[&[i64]], counts: &[&[i32]], mut emit: impl FnMut(i64, i64)) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut at = vec![0usize; keys.len()];
    let mut heap: BinaryHeap<Reverse<(i64, usize)>> = keys
        .iter()
        .enumerate()
        .filter(|(_, k)| !k.is_empty())
        .map(|(b, k)| Reverse((k[0], b)))
        .collect();
    let mut run: Option<(i64, i64)> = None;
    while let Some(Reverse((key, b))) = heap.pop() {
        let c = i64::from(counts[b][at[b]]);
        at[b] += 1;
        if let Some(&next) = keys[b].get(at[b]) {
            heap.push(Reverse((next, b)));
        }
        run = match run {
            Some((k, sum)) if k == key => Some((k, sum + c)),
            Some((k, sum)) => {
                emit(k, sum);
                Some((key, c))
            }
            None => Some((key, c)),
        };
    }
    if let Some((k, sum)) = run {
        emit(k, sum);
    }
}

/// The batches of (sorted distinct keys, counts) that a pair search makes merged into one: sorted
/// distinct keys, the counts of each key summed (saturating at `i32::MAX`).  `None` when a batch is
/// not sorted strictly ascending or its counts are not as many as its keys.  Two passes over the
/// batches (one counts the distinct keys, one fills them), so that at the peak the batches and the
/// result alone are held: 12 bytes a key of each, where a sort of them all took ~50 (Python's
/// `merge_counts` before).
pub fn merge_counts(keys: &[&[i64]], counts: &[&[i32]]) -> Option<(Vec<i64>, Vec<i32>)> {
    if keys.len() != counts.len()
        || keys.iter().zip(counts).any(|(k, c)| k.len() != c.len())
        || keys.iter().any(|k| k.windows(2).any(|w| w[0] >= w[1]))
    {
        return None;
    }
    let mut n = 0usize;
    merged(keys, counts, |_, _| n += 1);
    let (mut out_k, mut out_c) = (Vec::with_capacity(n), Vec::with_capacity(n));
    merged(keys, counts, |k, c| {
        out_k.push(k);
        out_c.push(c.min(i64::from(i32::MAX)) as i32);
    });
    Some((out_k, out_c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A deterministic generator (xorshift) for the tests.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// `m` entries drawn from `pool` for `n` positions (each (value, position) once), their levels,
    /// and a level per position.
    fn draw(rng: &mut Rng, pool: &[u64], n: u64, m: u64) -> (Vec<u64>, Vec<u32>, Vec<u8>, Vec<u8>) {
        let mut seen = std::collections::HashSet::new();
        let (mut values, mut own) = (Vec::new(), Vec::new());
        for _ in 0..m {
            let v = pool[(rng.next() % pool.len() as u64) as usize];
            let p = (rng.next() % n) as u32;
            if seen.insert((v, p)) {
                values.push(v);
                own.push(p);
            }
        }
        let level: Vec<u8> = values.iter().map(|_| (rng.next() % 9) as u8).collect();
        let row_level: Vec<u8> = (0..n).map(|_| (rng.next() % 5) as u8).collect();
        (values, own, level, row_level)
    }

    /// The same counts, one value at a time with maps.
    fn plain(
        values: &[u64],
        own: &[u32],
        level: &[u8],
        rule: &Rule,
    ) -> (Counted, Vec<i32>, Vec<i32>) {
        let w = rule.width;
        let mut holders: BTreeMap<u64, Vec<(u64, u8)>> = BTreeMap::new();
        for k in 0..values.len() {
            holders
                .entry(values[k])
                .or_default()
                .push((u64::from(own[k]), level[k]));
        }
        let mut out = Counted {
            hist: vec![0; rule.hist_bins],
            ..Counted::default()
        };
        let mut full = vec![0i32; rule.n as usize * w];
        let mut kept = full.clone();
        let mut shared: BTreeMap<u64, u32> = BTreeMap::new();
        let mut held: Vec<(u64, Vec<(u64, u8)>)> = Vec::new();
        for (&v, h) in &holders {
            let len = h.len();
            out.hist[len.min(rule.hist_bins - 1)] += 1;
            for &(p, l) in h {
                full[p as usize * w + (l as usize).min(w - 1)] += 1;
            }
            if len > rule.cut {
                out.common.push(v);
                continue;
            }
            if len > rule.pair_cut {
                held.push((v, h.clone()));
                continue;
            }
            if len > rule.frequent_cut {
                out.frequent.push(v);
                out.frequent_len.push(len as u32);
            }
            for &(p, l) in h {
                kept[p as usize * w + (l as usize).min(w - 1)] += 1;
            }
            if len >= 2 {
                out.made += (len * (len - 1) / 2) as u64;
            }
            for i in 0..len {
                for j in i + 1..len {
                    let ((pa, la), (pb, lb)) = (h[i], h[j]);
                    if let Some(rl) = rule.row_level {
                        if la.min(lb) < rl[pa as usize].max(rl[pb as usize]) {
                            continue;
                        }
                    }
                    *shared.entry(pa.min(pb) * rule.n + pa.max(pb)).or_default() += 1;
                }
            }
        }
        if rule.pairs && out.made <= rule.pair_limit {
            if shared.len() as u64 > rule.key_limit {
                out.over = true;
                shared.clear();
            }
            for (k, c) in shared {
                out.keys.push(k);
                out.counts.push(c);
            }
            for (v, h) in held {
                out.held_runs.push(v);
                out.held_runs_len.push(h.len() as u32);
                if !rule.hold_entries {
                    continue;
                }
                for (p, l) in h {
                    out.held_values.push(v);
                    out.held_own.push(p as u32);
                    out.held_level.push(l);
                }
            }
        }
        (out, full, kept)
    }

    #[test]
    fn equals_a_plain_count() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut overs = 0;
        for case in 0..40u64 {
            // (every fourth case: files many beside the entries, so that the pairs' count renumbers them)
            let n = if case % 4 == 3 {
                50_000 + rng.next() % 50_000
            } else {
                1 + (rng.next() % 60)
            };
            // A pool with few values so that runs of every length occur; some values share their
            // top 16 bits (one bucket) and some are skewed (all in bucket 0).
            let pool: Vec<u64> = (0..(5 + rng.next() % 200))
                .map(|k| match k % 3 {
                    0 => rng.next(),
                    1 => rng.next() >> 20,
                    _ => (0xABCD << 48) | (rng.next() >> 16),
                })
                .collect();
            let m = rng.next() % 3000;
            let (values, own, level, row_level) = draw(&mut rng, &pool, n, m);
            let cut = 1 + (rng.next() % 12) as usize;
            let rule = Rule {
                n,
                cut,
                pair_cut: if case % 3 == 1 {
                    cut
                } else {
                    (rng.next() % 14) as usize
                },
                hold_entries: case % 4 != 2,
                frequent_cut: (rng.next() % 4) as usize,
                hist_bins: 2 + (rng.next() % 20) as usize,
                pairs: case % 5 != 0,
                pair_limit: if case % 7 == 3 { 10 } else { u64::MAX },
                // (every sixth case: a limit on the distinct pairs, often under them)
                key_limit: if case % 6 == 5 {
                    rng.next() % 60
                } else {
                    u64::MAX
                },
                row_level: (case % 2 == 0).then_some(&row_level[..]),
                width: 8,
                threads: 1 + (case % 3) as usize,
            };
            let (want, wfull, wkept) = plain(&values, &own, &level, &rule);
            let mut full = vec![0i32; n as usize * 8];
            let mut kept = full.clone();
            let got = count_partition(
                &values,
                &own,
                &level,
                &rule,
                Some(&mut full),
                Some(&mut kept),
            );
            overs += usize::from(got.over);
            assert_eq!(sorted_held(got), sorted_held(want), "case {case}");
            assert_eq!(full, wfull, "case {case}");
            assert_eq!(kept, wkept, "case {case}");
        }
        assert!(overs > 0, "no case went over its key limit");
    }

    /// A partition stops making pairs exactly when its distinct pairs are more than the key limit,
    /// on one thread or several (each counting its share).
    #[test]
    fn key_limit_is_exact_on_every_thread_count() {
        let mut rng = Rng(77);
        let pool: Vec<u64> = (0..300).map(|_| rng.next()).collect();
        let (values, own, level, _) = draw(&mut rng, &pool, 400, 6000);
        let rule = |key_limit: u64, threads: usize| Rule {
            n: 400,
            cut: 1000,
            pair_cut: 1000,
            hold_entries: false,
            frequent_cut: 1000,
            hist_bins: 2,
            pairs: true,
            pair_limit: u64::MAX,
            key_limit,
            row_level: None,
            width: 1,
            threads,
        };
        let all = count_partition(&values, &own, &level, &rule(u64::MAX, 1), None, None);
        let distinct = all.keys.len() as u64;
        assert!(distinct > 1000 && !all.over);
        for threads in 1..=4 {
            let at = count_partition(&values, &own, &level, &rule(distinct, threads), None, None);
            assert!(!at.over && at.keys == all.keys && at.counts == all.counts);
            let under = count_partition(
                &values,
                &own,
                &level,
                &rule(distinct - 1, threads),
                None,
                None,
            );
            assert!(under.over && under.keys.is_empty() && under.counts.is_empty());
            assert_eq!(under.made, all.made);
        }
    }

    /// The counts with the held entries in one order (within a run the sort leaves ties in any order).
    fn sorted_held(mut c: Counted) -> Counted {
        let mut h: Vec<(u64, u32, u8)> = (0..c.held_values.len())
            .map(|k| (c.held_values[k], c.held_own[k], c.held_level[k]))
            .collect();
        h.sort_unstable();
        c.held_values = h.iter().map(|x| x.0).collect();
        c.held_own = h.iter().map(|x| x.1).collect();
        c.held_level = h.iter().map(|x| x.2).collect();
        c
    }

    /// Counting the held entries again at a final cut-off between the pair cut-off and the cut-off
    /// gives what one count at that cut-off gives.
    #[test]
    fn held_runs_counted_again_equal_one_count() {
        let mut rng = Rng(0x1234_5678_9ABC_DEF1);
        for case in 0..40u64 {
            let n = 2 + (rng.next() % 50);
            let pool: Vec<u64> = (0..(5 + rng.next() % 150)).map(|_| rng.next()).collect();
            let m = rng.next() % 2500;
            let (values, own, level, row_level) = draw(&mut rng, &pool, n, m);
            let cut = 2 + (rng.next() % 30) as usize;
            let pair_cut = 1 + (rng.next() % cut as u64) as usize;
            let last = pair_cut + (rng.next() % (cut - pair_cut + 1) as u64) as usize;
            let rule = |c: usize, pc: usize| Rule {
                n,
                cut: c,
                pair_cut: pc,
                hold_entries: true,
                frequent_cut: 1,
                hist_bins: 40,
                pairs: true,
                pair_limit: u64::MAX,
                key_limit: u64::MAX,
                row_level: (case % 2 == 0).then_some(&row_level[..]),
                width: 8,
                threads: 2,
            };
            let cells = n as usize * 8;
            let mut kept_one = vec![0i32; cells];
            let one = count_partition(
                &values,
                &own,
                &level,
                &rule(last, last),
                None,
                Some(&mut kept_one),
            );
            let mut kept = vec![0i32; cells];
            let first = count_partition(
                &values,
                &own,
                &level,
                &rule(cut, pair_cut),
                None,
                Some(&mut kept),
            );
            let again = count_partition(
                &first.held_values,
                &first.held_own,
                &first.held_level,
                &rule(last, last),
                None,
                Some(&mut kept),
            );
            assert_eq!(kept, kept_one, "case {case}");
            let mut shared: BTreeMap<u64, u32> = BTreeMap::new();
            for (k, c) in first
                .keys
                .iter()
                .zip(&first.counts)
                .chain(again.keys.iter().zip(&again.counts))
            {
                *shared.entry(*k).or_default() += c;
            }
            let want: BTreeMap<u64, u32> = one
                .keys
                .iter()
                .copied()
                .zip(one.counts.iter().copied())
                .collect();
            assert_eq!(shared, want, "case {case}");
            let mut common = first.common.clone();
            common.extend(&again.common);
            common.sort_unstable();
            assert_eq!(common, one.common, "case {case}");
            let mut frequent: Vec<u64> = first.frequent.clone();
            frequent.extend(&again.frequent);
            frequent.sort_unstable();
            assert_eq!(frequent, one.frequent, "case {case}");
        }
    }

    #[test]
    fn empty_partition() {
        let rule = Rule {
            n: 3,
            cut: 5,
            pair_cut: 5,
            hold_entries: true,
            frequent_cut: 1,
            hist_bins: 7,
            pairs: true,
            pair_limit: u64::MAX,
            key_limit: u64::MAX,
            row_level: None,
            width: 8,
            threads: 1,
        };
        let got = count_partition(&[], &[], &[], &rule, None, None);
        assert_eq!(got.hist, vec![0; 7]);
        assert!(got.keys.is_empty() && got.common.is_empty() && got.made == 0);
    }

    #[test]
    fn merge_counts_equals_a_plain_sum() {
        let mut rng = Rng(0x5eed);
        for case in 0..300u64 {
            let batches = (rng.next() % 6) as usize;
            let span = 1 + rng.next() % 60;
            let (mut keys, mut counts) = (Vec::new(), Vec::new());
            let mut want: BTreeMap<i64, i64> = BTreeMap::new();
            for _ in 0..batches {
                let mut k: Vec<i64> = (0..rng.next() % 40)
                    .map(|_| (rng.next() % span) as i64 - 5)
                    .collect();
                k.sort_unstable();
                k.dedup();
                let c: Vec<i32> = k.iter().map(|_| 1 + (rng.next() % 1000) as i32).collect();
                for (&key, &cnt) in k.iter().zip(&c) {
                    *want.entry(key).or_default() += i64::from(cnt);
                }
                keys.push(k);
                counts.push(c);
            }
            let kr: Vec<&[i64]> = keys.iter().map(|k| k.as_slice()).collect();
            let cr: Vec<&[i32]> = counts.iter().map(|c| c.as_slice()).collect();
            let (k, c) = merge_counts(&kr, &cr).expect("sorted batches");
            let got: Vec<(i64, i64)> = k.into_iter().zip(c.into_iter().map(i64::from)).collect();
            assert_eq!(got, want.into_iter().collect::<Vec<_>>(), "case {case}");
        }
        // Refused: a batch out of order, a repeated key, counts not one a key; a sum past i32 saturates.
        assert!(merge_counts(&[&[2, 1]], &[&[1, 1]]).is_none());
        assert!(merge_counts(&[&[1, 1]], &[&[1, 1]]).is_none());
        assert!(merge_counts(&[&[1, 2]], &[&[1]]).is_none());
        let big = [i32::MAX];
        assert_eq!(
            merge_counts(&[&[7], &[7]], &[&big, &big]),
            Some((vec![7], vec![i32::MAX]))
        );
        assert_eq!(merge_counts(&[], &[]), Some((vec![], vec![])));
    }
}
