"""MinHash sketches and LSH banding (simscan.similarity.minhash) on real fingerprint sets, against
slow, obviously correct references: the minimum of each hash function taken row by row, exact
Jaccard by set arithmetic, band equality checked pair by pair, and the S-curve of banding."""

from __future__ import annotations

import random

import numpy as np
import pytest

from simscan.fingerprint import views as fviews
from simscan.index import Index
from simscan.similarity import minhash
from simscan.similarity.views import view_values
from tests.similarity_support import words, write_index

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def reference_hash(values: np.ndarray, seed: np.uint64) -> np.ndarray:
    """fmix64(value ^ seed) >> 32, as minhash.rs defines permutation ``seed``."""
    h = values ^ seed
    with np.errstate(over="ignore"):
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xC4CEB9FE1A85EC53)
        h ^= h >> np.uint64(33)
    return (h >> np.uint64(32)).astype(np.uint32)


def reference_sketch(values: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """One set's sketch: the smallest hash of its values under each seed, one seed at a time."""
    if values.size == 0:
        return np.full(seeds.size, minhash.EMPTY, np.uint32)
    return np.array([reference_hash(values, s).min() for s in seeds], dtype=np.uint32)


def edited(text: str, fraction: float, rng: random.Random) -> str:
    """``text`` with a passage of ``fraction`` of its words, somewhere, replaced by new random words."""
    w = text.split()
    n = int(fraction * len(w))
    at = rng.randint(0, len(w) - n)
    w[at : at + n] = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
                      for _ in range(n)]
    return " ".join(w)


C_SOURCE = """#include <stdio.h>
/* A small program: enough lines ending in ; { } to be read as code. */
static int count_items(const int *items, int n, int limit) {
    int total = 0;
    for (int i = 0; i < n; i++) {
        if (items[i] > limit) {
            total += items[i] - limit;
        } else {
            total -= 1;
        }
    }
    return total;
}

int main(void) {
    int values[8] = {3, 9, 27, 81, 243, 729, 2187, 6561};
    int result = count_items(values, 8, 100);
    printf("%d\\n", result);
    for (int j = 0; j < 8; j++) {
        printf("%d ", values[j] * 2 + result);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Real files fingerprinted into a real index: 40 texts, each with 5 edited versions (a passage of
    2-90 % of its words replaced), a C source and an empty file.  (ids, offsets, values, is_text, names)."""
    root = tmp_path_factory.mktemp("minhash")
    rng = random.Random(19)
    paths = []
    for i in range(40):
        base = words(1000 + i, rng.randint(300, 2500))
        (root / f"t{i:02d}.txt").write_text(base)
        paths.append(root / f"t{i:02d}.txt")
        for f in (0.02, 0.1, 0.3, 0.6, 0.9):
            p = root / f"t{i:02d}_{int(f * 100):02d}.txt"
            p.write_text(edited(base, f, rng))
            paths.append(p)
    (root / "prog.c").write_text(C_SOURCE)
    (root / "empty.txt").write_text("")
    paths += [root / "prog.c", root / "empty.txt"]
    write_index(root / "ix.sqlite3", paths)
    with Index.open(root / "ix.sqlite3", readonly=True) as ix:
        files = ix.files()
        ids, offsets, values = ix.fingerprints(kind="all")
    by_id = dict(zip(np.asarray(files.ids).tolist(), files.paths))
    is_text = dict(zip(np.asarray(files.ids).tolist(), np.asarray(files.is_text).tolist()))
    names = [by_id[int(i)].rsplit("/", 1)[-1] for i in ids]
    return ids, offsets, values, np.array([is_text[int(i)] for i in ids]), names


def test_sketch_equals_the_minimum_of_each_permutation(corpus):
    _ids, offsets, values, _t, names = corpus
    seeds = minhash.permutation_seeds()
    sk = minhash.sketch(offsets, values)
    assert sk.shape == (len(names), minhash.NUM_PERM) and sk.dtype == np.uint32
    for r in range(len(names)):
        want = reference_sketch(values[offsets[r] : offsets[r + 1]], seeds)
        assert np.array_equal(sk[r], want), names[r]


def test_estimates_within_the_binomial_error_of_exact_jaccard(corpus):
    _ids, offsets, values, _t, names = corpus
    sk = minhash.sketch(offsets, values)
    row = {n: r for r, n in enumerate(names)}
    zs, exact = [], []
    for i in range(40):
        base = row[f"t{i:02d}.txt"]
        a = values[offsets[base] : offsets[base + 1]]
        for f in (2, 10, 30, 60, 90):
            o = row[f"t{i:02d}_{f:02d}.txt"]
            b = values[offsets[o] : offsets[o + 1]]
            j = np.intersect1d(a, b).size / np.union1d(a, b).size
            est = float(minhash.estimate_jaccard(sk[base], sk[o])[0])
            exact.append(j)
            if 0 < j < 1:
                zs.append((est - j) / np.sqrt(j * (1 - j) / minhash.NUM_PERM))
            else:
                assert est == j
    zs = np.array(zs)
    # The edits spread the resemblances over the whole range.
    assert min(exact) < 0.1 and max(exact) > 0.85 and len(zs) >= 150
    # A binomial estimate: unbiased, ~95 % within two standard errors, none beyond five.
    assert abs(zs.mean()) < 3 / np.sqrt(zs.size)
    assert np.mean(np.abs(zs) <= 2) >= 0.9
    assert np.abs(zs).max() < 5


def test_copies_and_unrelated_files(corpus):
    _ids, offsets, values, _t, names = corpus
    sk = minhash.sketch(offsets, values)
    row = {n: r for r, n in enumerate(names)}
    assert minhash.estimate_jaccard(sk[row["t00.txt"]], sk[row["t00.txt"]])[0] == 1.0
    unrelated = minhash.estimate_jaccard(sk[[row[f"t{i:02d}.txt"] for i in range(39)]],
                                         sk[[row[f"t{i:02d}.txt"] for i in range(1, 40)]])
    assert unrelated.max() <= 0.02
    empty = row["empty.txt"]
    assert minhash.empty_rows(sk)[empty] and minhash.empty_rows(sk).sum() == 1
    assert minhash.estimate_jaccard(sk[empty], sk[empty])[0] == 0.0


def test_sketches_by_view(corpus):
    _ids, offsets, values, is_text, names = corpus
    text, code = minhash.sketch_views(offsets, values, is_text)
    assert code is not None
    prog = names.index("prog.c")
    for view, sk in ((fviews.TEXT, text), (fviews.CODE, code)):
        off, val = view_values(offsets, values[: offsets[-1]], is_text, view)
        assert np.array_equal(sk, minhash.sketch(off, val)), view
    assert not minhash.empty_rows(code)[prog]
    assert minhash.empty_rows(code).sum() == len(names) - 1  # prose has no code view
    assert np.array_equal(text[:prog], minhash.sketch(offsets, values)[:prog])


def test_estimated_scores_from_exact_jaccard_are_exact():
    rng = np.random.default_rng(5)
    for _ in range(50):
        a = np.unique(rng.integers(0, 400, int(rng.integers(1, 300))))
        b = np.unique(rng.integers(0, 400, int(rng.integers(1, 300))))
        inter = np.intersect1d(a, b).size
        j = inter / np.union1d(a, b).size
        r, ca, cb = minhash.estimated_scores(np.array([j]), np.array([a.size]), np.array([b.size]))
        assert r[0] == pytest.approx(100 * j)
        assert ca[0] == pytest.approx(100 * inter / a.size)
        assert cb[0] == pytest.approx(100 * inter / b.size)


def brute_force_candidates(sk: np.ndarray, bands: int, rows: int) -> set[tuple[int, int]]:
    """Pairs (i, j), i < j, of non-empty sketches equal on every entry of some band."""
    out = set()
    empty = minhash.empty_rows(sk)
    for i in range(sk.shape[0]):
        eq = (sk[i + 1 :, : bands * rows] == sk[i, : bands * rows]).reshape(-1, bands, rows)
        for j in np.flatnonzero(eq.all(axis=2).any(axis=1)) + i + 1:
            if not (empty[i] or empty[j]):
                out.add((i, int(j)))
    return out


def test_lsh_candidates_are_the_pairs_sharing_a_band(corpus):
    _ids, offsets, values, _t, _names = corpus
    sk = minhash.sketch(offsets, values)
    for bands, rows in ((20, 10), (51, 2), (4, 50), (200, 1)):
        i, j = minhash.lsh_candidates(sk, bands, rows)
        got = set(zip(i.tolist(), j.tolist()))
        assert got == brute_force_candidates(sk, bands, rows), (bands, rows)
        assert np.all(i < j) and len(got) == i.size


def test_banding_follows_the_s_curve():
    """Pairs of sets of exact resemblance s become candidates with probability 1 - (1 - s^r)^b."""
    rng = np.random.default_rng(1919)
    bands, rows, pairs, union = 20, 5, 400, 150
    levels = (0.2, 0.35, 0.45, 0.55, 0.65, 0.8)
    sets = []
    for s in levels:
        for _ in range(pairs):
            v = rng.integers(0, 2**64 - 1, union, dtype=np.uint64, endpoint=True)
            shared = round(s * union)
            rest = rng.permutation(np.arange(shared, union))
            sets += [np.concatenate((v[:shared], v[rest[: rest.size // 2]])),
                     np.concatenate((v[:shared], v[rest[rest.size // 2 :]]))]
    offsets = np.concatenate(([0], np.cumsum([x.size for x in sets])))
    sk = minhash.sketch(offsets, np.concatenate(sets))
    i, j = minhash.lsh_candidates(sk, bands, rows)
    cand = set(zip(i.tolist(), j.tolist()))
    for li, s in enumerate(levels):
        s_exact = round(s * union) / union
        first = 2 * pairs * li
        hit = np.mean([(first + 2 * k, first + 2 * k + 1) in cand for k in range(pairs)])
        p = float(minhash.candidate_probability(s_exact, bands, rows))
        assert abs(hit - p) <= 4 * np.sqrt(p * (1 - p) / pairs) + 1 / pairs, (s, hit, p)


def midpoint_error(t: float, b: int, r: int, wfp: float, wfn: float, n: int = 20000) -> float:
    """The weighted error of (b, r) by the midpoint rule: a different integration than the module's."""
    lo = (np.arange(n) + 0.5) * (t / n)
    hi = t + (np.arange(n) + 0.5) * ((1 - t) / n)
    fp = (1 - (1 - lo**r) ** b).sum() * (t / n)
    fn = (1 - (1 - (1 - hi**r) ** b)).sum() * ((1 - t) / n)
    return wfp * fp + wfn * fn


@pytest.mark.parametrize("t", [0.1, 0.15, 0.3, 0.5, 0.8])
def test_optimal_bands_minimise_the_weighted_error(t):
    n = 60  # every (b, r) with b * r <= n is checked by the reference
    b, r = minhash.optimal_bands(t, num_perm=n)
    assert b * r <= n
    best = min(midpoint_error(t, bb, rr, 0.5, 0.5) for bb in range(1, n + 1) for rr in range(1, n // bb + 1))
    assert midpoint_error(t, b, r, 0.5, 0.5) <= best + 1e-6
    # Missing similar pairs weighing more moves the curve's rise to lower resemblances.
    b2, r2 = minhash.optimal_bands(t, num_perm=n, fp_weight=0.1, fn_weight=0.9)
    assert (1 / b2) ** (1 / r2) <= (1 / b) ** (1 / r)


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        minhash.sketch(np.array([0, 5]), np.arange(3, dtype=np.uint64))
    with pytest.raises(ValueError):
        minhash.sketch(np.array([2, 1]), np.arange(3, dtype=np.uint64))
    with pytest.raises(ValueError):
        minhash.optimal_bands(1.0)
    with pytest.raises(ValueError):
        list(minhash.band_pairs(np.zeros((2, 10), np.uint32), 3, 4))
