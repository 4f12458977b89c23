"""compare(): scores and matching passages as ranges of the original decoded texts."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from similarity_support import words

from simscan.fingerprint import fingerprint_file
from simscan.fingerprint.text import normalize
from simscan.similarity import compare
from simscan.similarity.compare import fingerprint_set, matching_runs

# Frequent Chinese characters in a seeded order: text that chardet recognises as GB18030/GBK.
_COMMON = (
    "的一是不了在人有我他这个们中来上大为和国地到以说时要就出也得里后自之去会家可下而过天能对小多然于心学么"
    "都好看起发当没成只如事把还用第样道想作种开美总从无情己面最女但现前些所同日手又行意动方期它头经长儿回位"
)
_RNG = random.Random(11)
CHINESE = "".join(_RNG.choice(_COMMON) for _ in range(900))


def _norm(s: str) -> str:
    return "".join(map(chr, normalize(s).tolist()))


def test_inserted_passage_is_found_in_both(tmp_path: Path) -> None:
    passage = words(1, 80)
    a = words(2, 150) + "\n" + passage + "\n" + words(3, 100)
    b = words(4, 60) + "\n\n" + passage.upper() + "!\n" + words(5, 200)
    (tmp_path / "a.txt").write_text(a)
    (tmp_path / "b.txt").write_text(b)
    c = compare(tmp_path / "a.txt", tmp_path / "b.txt")
    assert c.text_a == a and c.text_b == b
    assert len(c.ranges_a) == len(c.ranges_b) == 1
    (a0, a1), (b0, b1) = c.ranges_a[0], c.ranges_b[0]
    # The ranges are the passage (case differs: normalisation folds it), in original offsets.
    # A maximal run may also take in a letter or the white space around the passage when
    # both files happen to have it there.
    pa, pb = a.index(passage), b.index(passage.upper())
    assert pa - 12 <= a0 <= pa and pa + len(passage) <= a1 <= pa + len(passage) + 12
    assert pb - 12 <= b0 <= pb and pb + len(passage) <= b1 <= pb + len(passage) + 12
    assert _norm(a[a0:a1]) == _norm(b[b0:b1])
    # Scores equal set arithmetic on the files' fingerprints.
    fa, fb = fingerprint_file(tmp_path / "a.txt"), fingerprint_file(tmp_path / "b.txt")
    sa, sb = set(fingerprint_set(fa).tolist()), set(fingerprint_set(fb).tolist())
    assert c.pair.resemblance == pytest.approx(100 * len(sa & sb) / len(sa | sb), abs=1e-3)
    assert c.pair.containment_a == pytest.approx(100 * len(sa & sb) / len(sa), abs=1e-3)
    assert c.pair.a_id == -1 and c.pair.kind in ("near", "contained")


@pytest.mark.parametrize(("enc_a", "enc_b"), [("utf-8", "utf-16"), ("gbk", "utf-16"), ("utf-8", "gbk")])
def test_passage_across_encodings(tmp_path: Path, enc_a: str, enc_b: str) -> None:
    passage = CHINESE[40:300]
    a = CHINESE[300:620] + "\r\n" + passage + "\r\n" + CHINESE[:40]
    b = CHINESE[620:900] + "\n" + passage + "\n" + CHINESE[700:760]
    (tmp_path / "a.txt").write_bytes(a.encode(enc_a))
    (tmp_path / "b.txt").write_bytes(b.encode(enc_b))
    c = compare(tmp_path / "a.txt", tmp_path / "b.txt")
    assert c.text_a == a and c.text_b == b, (c.encoding_a, c.encoding_b)
    assert c.ranges_a, (c.encoding_a, c.encoding_b)
    # The passage is covered on both sides, and every paired range holds the same text.
    for (a0, a1), (b0, b1) in zip(c.ranges_a, c.ranges_b):
        assert _norm(a[a0:a1]) == _norm(b[b0:b1])
    ia = a.index(passage)
    covered = np.zeros(len(a), bool)
    for a0, a1 in c.ranges_a:
        covered[a0:a1] = True
    assert covered[ia : ia + len(passage)].all()
    assert not covered[: ia - 2].any()


def test_identical_text_other_encoding_is_content(tmp_path: Path) -> None:
    text = words(9, 300)
    (tmp_path / "a.txt").write_text(text, encoding="utf-8")
    (tmp_path / "b.txt").write_text(text.replace(" ", "\r\n", 20), encoding="utf-16")
    c = compare(tmp_path / "a.txt", tmp_path / "b.txt")
    assert c.pair.kind == "content" and c.pair.best == 100 and not c.pair.exact
    assert c.ranges_a == [(0, len(c.text_a))]
    (tmp_path / "c.txt").write_bytes((tmp_path / "a.txt").read_bytes())
    assert compare(tmp_path / "a.txt", tmp_path / "c.txt").pair.exact


def test_binary_files_have_scores_but_no_ranges(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    blob = rng.integers(0, 256, 200_000, dtype=np.uint8).tobytes()
    (tmp_path / "a.bin").write_bytes(blob)
    (tmp_path / "b.bin").write_bytes(blob[:150_000] + b"\0" * 10 + blob[150_000:])
    c = compare(tmp_path / "a.bin", tmp_path / "b.bin")
    assert c.text_a is None and c.ranges_a == [] and c.ranges_b == []
    assert c.pair.containment_a > 50


def test_repeated_passage_and_unpaired_runs() -> None:
    rng = np.random.default_rng(2)
    p = rng.integers(97, 123, 120).astype(np.uint32)
    x = rng.integers(97, 123, 80).astype(np.uint32)
    y = rng.integers(97, 123, 70).astype(np.uint32)
    a = np.concatenate((x, p, y, p))  # the passage twice in a
    b = np.concatenate((y[:10], p, x[:5]))
    ra, rb, capped = matching_runs(a, b, 50)
    assert not capped
    assert ra == [(80, 200), (270, 390)] and rb == [(10, 130), (10, 130)]
    assert matching_runs(a[:40], b, 50) == ([], [], False)


def test_an_excerpt_of_repetitive_text_is_one_passage_counted_once(tmp_path: Path) -> None:
    # A table row repeated more often than MAX_OCCURRENCES: its windows match only a few of their places
    # in the excerpt, which cut the excerpt's one passage into overlapping pieces on one diagonal.
    row = "Module type pure Python, deprecated in 3.8, to be removed in 3.10, substitute none.\n"
    a = "\n".join(words(k, 12) + "\n" + row * 3 for k in range(12))
    start = a.index(row) - 30
    b = a[start : start + 1200]
    (tmp_path / "a.txt").write_text(a)
    (tmp_path / "b.txt").write_text(b)
    c = compare(tmp_path / "a.txt", tmp_path / "b.txt")
    assert c.capped and not c.truncated
    k = c.ranges_b.index((0, len(b)))  # the whole excerpt, once, in its own place
    assert c.ranges_a[k] == (start, start + len(b))
    # Its repeated rows also match a's other rows; each character still counts once.
    ma, mb = c.matched_chars()
    assert mb == len(b) and len(b) < ma <= len(a)
    assert ma == len(set().union(*(range(s0, e0) for s0, e0 in c.ranges_a)))


def test_a_log_of_one_repeated_line_gives_passages_not_a_runaway(tmp_path: Path) -> None:
    # Every window repeats thousands of times: extending each run over the equal units around it, with
    # nothing to stop it, made ~3,000 passages each nearly the whole file (found by a review).
    line = "2026-11-21 12:00:00 INFO request served in 12 ms\n"
    (tmp_path / "a.log").write_text(line * 3000)
    (tmp_path / "b.log").write_text("header line of the second log\n" + line * 3000)
    c = compare(tmp_path / "a.log", tmp_path / "b.log")
    assert c.capped and c.ranges_a
    n = len(line) * 3000
    assert sum(e - s for s, e in c.ranges_a) <= 10 * n and sum(e - s for s, e in c.ranges_b) <= 10 * n
    assert c.matched_chars()[0] >= n - 1  # all of a is shared (its last line break is trailing space)


def test_scores_at_the_pair_level(tmp_path: Path) -> None:
    """A short text and a long one containing it: the scores are set arithmetic with both sets
    taken at the long text's (coarser) winnowing window, where the short text is wholly contained:
    a value counts in a file where its dominance span reaches the window, and in both where it does
    in both (the reference here: dictionaries of value -> span)."""
    from simscan.fingerprint import DEFAULT_PARAMS

    short = words(7, 150)
    long = words(8, 1500) + "\n" + short + "\n" + words(9, 1500)
    (tmp_path / "s.txt").write_text(short)
    (tmp_path / "l.txt").write_text(long)
    fs, fl = fingerprint_file(tmp_path / "s.txt"), fingerprint_file(tmp_path / "l.txt")
    ts, tl = DEFAULT_PARAMS.text_level(fs.units), DEFAULT_PARAMS.text_level(fl.units)
    assert ts < tl
    w_s, w_l = DEFAULT_PARAMS.winnow[ts], DEFAULT_PARAMS.winnow[tl]

    def at(fp, w: int) -> set[int]:
        vals = np.concatenate((fp.rolling, fp.anchored)).tolist()
        return {v for v, d in zip(vals, fp.meta.d.tolist(), strict=True) if d >= w}

    a, b = at(fs, w_l), at(fl, w_l)
    c = compare(tmp_path / "s.txt", tmp_path / "l.txt")
    assert c.pair.containment_a == pytest.approx(100 * len(a & b) / len(a), abs=1e-3)
    assert c.pair.containment_b == pytest.approx(100 * len(a & b) / len(b), abs=1e-3)
    assert c.pair.resemblance == pytest.approx(100 * len(a & b) / len(a | b), abs=1e-3)
    # The whole short text is one passage of the long one (its first window to its last).
    assert c.pair.longest_passage >= len(short) - 100
    # At its own finer level the short text would look barely contained: that is what the
    # pair level avoids.
    assert c.pair.containment_a > 80 > 100 * len(a & b) / len(at(fs, w_s))


def test_compare_and_query_leave_access_times_alone(tmp_path: Path) -> None:
    # The scanner reads with O_NOATIME; compare and query read plainly, and the files looked
    # "recently used" to backup tools and "last opened" views.  (As their owner, or root, here.)
    import os

    from simscan.index import Index
    from simscan.scanner import ScanRequest, run_scan
    from simscan.similarity import query

    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(words(1, 300))
    b.write_text(words(1, 300) + " " + words(2, 50))
    run_scan(ScanRequest([tmp_path], index_path=tmp_path / "i.db", jobs=1))
    old = 1_000_000_000 * 10**9  # 2001: far older than the files' mtime, so relatime would update it
    for p in (a, b):
        os.utime(p, ns=(old, p.stat().st_mtime_ns))
    compare(str(a), str(b))
    with Index.open(tmp_path / "i.db", readonly=True) as ix:
        assert query(ix, str(a))
    assert a.stat().st_atime_ns == b.stat().st_atime_ns == old
