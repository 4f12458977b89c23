"""The vectorised fingerprint engine against a slow, obviously-correct reference.

The reference below follows the definitions in ``simscan/fingerprint/rolling.py`` one
window at a time with Python integers: polynomial hash of every window, mixed value,
greedy no-overlap choice, 64-bit value, anchors, simhash by counting bits.
"""

from __future__ import annotations

import codecs
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from simscan.fingerprint import (
    DEFAULT_PARAMS,
    FingerprintParams,
    decode_bytes,
    fingerprint_bytes,
    fingerprint_file,
    fingerprint_many,
    rolling,
    views,
)
from simscan.fingerprint import text as T
from simscan.fingerprint.simhash import hamming, simhash

M32 = (1 << 32) - 1
M64 = (1 << 64) - 1
P32, C32, Q64 = 0x01000193, 0x9E3779B1, 0x100000001B3


# --------------------------------------------------------------------------- reference


def ref_fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    h ^= h >> 33
    return h


def ref_bytes_hash(raw: bytes) -> int:
    raw += bytes(-len(raw) % 8)
    words = [int.from_bytes(raw[i : i + 8], "little") for i in range(0, len(raw), 8)]
    h = 1
    for w in words:  # Horner: Q^K + sum w_k Q^(K-1-k)
        h = (h * Q64 + w) & M64
    return h


def ref_value(win: list[int], binary: bool) -> int:
    if binary:
        return ref_fmix64(ref_bytes_hash(bytes(win)))
    h1 = 0
    for u in win:
        h1 = (h1 * P32 + u) & M32
    m1 = (h1 * C32) & M32
    return ref_fmix64((ref_bytes_hash(bytes(u & 0xFF for u in win)) + (m1 << 32)) & M64)


def ref_select(win: list[int], binary: bool) -> int:
    """The mixed 32-bit selection value of a window."""
    h = 0
    if binary and len(win) % 2 == 0:
        for u in win[0::2]:  # the even-offset bytes, polynomial in P^2, modulo 2^19
            h = (h * P32 * P32 + u) & M32
        return (((h & 0x7FFFF) * C32) & 0x7FFFF) << 13
    for u in win:
        h = (h * P32 + u) & M32
    return (h * C32) & M32


def ref_greedy(starts: list[int], window: int) -> list[int]:
    out, nxt = [], -1
    for s in starts:
        if s >= nxt:
            out.append(s)
            nxt = s + window
    return out


def ref_perm63(y: int) -> int:
    m = (1 << 63) - 1
    y = (y * (0x9E3779B97F4A7C15 & m | 1)) & m
    y ^= y >> 32
    return (y * (0xC2B2AE3D27D4EB4F & m | 1)) & m


def ref_nested(units: list[int], window: int, anchor_density: int, k: int, level: int) -> list[int]:
    """Nested anchored fingerprints, one position at a time: an anchor is a k-unit string whose
    mixed hash is below 2^32 / anchor_density; at EACH occurrence the window of ``window``
    units that follows is kept when its level (leading zero bits of its 32-bit mixed
    selection hash) is >= ``level``; value = 2^63 | perm63(g * 2^31 + (text value >> 33))."""
    out = set()
    for i in range(len(units) - k - window + 1):
        if ref_select(units[i : i + k], False) >= (1 << 32) // anchor_density:
            continue
        win = units[i + k : i + k + window]
        g = ref_select(win, False)
        lvl = 32 - g.bit_length()
        if lvl >= level:
            out.add((1 << 63) | ref_perm63((g << 31) | (ref_value(win, False) >> 33)))
    return sorted(out)


def ref_level(n: int, limits: tuple[int, ...]) -> int:
    """The number of limits that ``n`` units reach."""
    return sum(1 for lim in limits if n >= lim)


def ref_for(units: list[int], p: rolling.ManberParams, binary: bool):
    level = max(p.anchor_level, ref_level(len(units), p.level_units))
    return ref_fingerprints(units, p.window, p.density, p.anchor_density, binary, p.anchor_length, level)


def ref_fingerprints(
    units: list[int], window: int, density: int, anchor_density: int, binary: bool, k: int = 0, level: int = 0
):
    n = len(units)
    top = 1 << 32
    thr = top - top // density
    sel = [ref_select(units[i : i + window], binary) for i in range(n - window + 1)]
    roll = ref_greedy([i for i, v in enumerate(sel) if v >= thr], window)
    rv = sorted({ref_value(units[i : i + window], binary) & ((1 << 63) - 1) for i in roll})
    if k and not binary:
        return rv, ref_nested(units, window, anchor_density, k, level)
    # Anchors: windows whose mixed value lies just below the rolling range; the anchored
    # window is the next one.
    athr = thr - top // anchor_density
    anchor_windows = [i + window for i, v in enumerate(sel) if athr <= v < thr and i + 2 * window <= n]
    anch = ref_greedy(anchor_windows, window)
    av = sorted({ref_value(units[i : i + window], binary) | (1 << 63) for i in anch})
    return rv, av


def ref_simhash(values: list[int]) -> int:
    if not values:
        return 0
    out = 0
    for b in range(64):
        ones = sum((v >> b) & 1 for v in values)
        if 2 * ones > len(values):
            out |= 1 << b
    return out


def hasher_result(units: np.ndarray, params: rolling.ManberParams, binary: bool, pieces: int = 1):
    h = rolling.ManberHasher(params, binary=binary)
    for part in np.array_split(units, pieces) if units.size else [units]:
        h.feed(part)
    r, a = h.finish()
    return r.tolist(), a.tolist()


# --------------------------------------------------------------------------- rolling vs reference

SMALL = [
    ("text", rolling.ManberParams(window=50, density=4, anchor_density=8), False),
    ("text-odd", rolling.ManberParams(window=7, density=3, anchor_density=5), False),
    ("text-nested", rolling.ManberParams(window=50, density=4, anchor_density=2, anchor_length=8), False),
    (
        "text-nested-l2",
        rolling.ManberParams(window=7, density=3, anchor_density=3, anchor_length=3, anchor_level=2),
        False,
    ),
    (
        "text-nested-adaptive",
        rolling.ManberParams(
            window=20, density=4, anchor_density=2, anchor_length=5, level_units=(40, 80, 80, 300, 1000)
        ),
        False,
    ),
    ("bin", rolling.ManberParams(window=50, density=4, anchor_density=8), True),
    ("bin-odd", rolling.ManberParams(window=9, density=4, anchor_density=6), True),
]


def _inputs(binary: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(42)
    dt = np.uint8 if binary else np.uint32
    hi = 256 if binary else 0x3000
    word = rng.integers(97, 123, 400)
    return {
        "empty": np.zeros(0, dtype=dt),
        "short": rng.integers(1, hi, 20).astype(dt),
        "exact49": rng.integers(1, hi, 49).astype(dt),
        "exact50": rng.integers(1, hi, 50).astype(dt),
        "exact51": rng.integers(1, hi, 51).astype(dt),
        "random": rng.integers(0, hi, 3000).astype(dt),
        "small-alphabet": rng.integers(0, 3, 3000).astype(dt),
        "run-of-one": np.full(700, 32, dtype=dt),
        "run-of-nul": np.zeros(700, dtype=dt),
        "words": np.where(rng.random(400) < 0.2, 32, word).astype(dt),
    }


@pytest.mark.parametrize("name,params,binary", SMALL, ids=[s[0] for s in SMALL])
def test_hasher_matches_reference(name: str, params: rolling.ManberParams, binary: bool) -> None:
    for label, units in _inputs(binary).items():
        expected = ref_for(units.tolist(), params, binary)
        assert hasher_result(units, params, binary) == expected, label
        # Any split into feeds gives the same result (windows across feeds are not lost).
        assert hasher_result(units, params, binary, pieces=7) == expected, label


@pytest.mark.parametrize("name,params,binary", SMALL, ids=[s[0] for s in SMALL])
def test_block_borders(monkeypatch: pytest.MonkeyPatch, name: str, params: rolling.ManberParams, binary: bool) -> None:
    """Tiny blocks force many block borders inside one feed: results must not change."""
    units = _inputs(binary)["random"]
    expected = ref_for(units.tolist(), params, binary)
    for block in (params.window * 4 + 9, 257, 1000):
        monkeypatch.setattr(rolling, "BLOCK", block)
        assert hasher_result(units, params, binary) == expected
        assert hasher_result(units, params, binary, pieces=13) == expected
        # Feeds of whole blocks (as the reader's chunks are): no short block after them.
        h = rolling.ManberHasher(params, binary=binary)
        for a in range(0, units.size, 2 * block):
            h.feed(units[a : a + 2 * block])
        assert tuple(x.tolist() for x in h.finish()) == expected


def test_default_params_against_reference() -> None:
    rng = np.random.default_rng(5)
    cases = [(False, DEFAULT_PARAMS.manber(True, lv)) for lv in (0, 3)] + [(True, DEFAULT_PARAMS.manber(False))]
    for binary, mp in cases:
        units = rng.integers(0, 256 if binary else 0x700, 6000).astype(np.uint8 if binary else np.uint32)
        expected = ref_for(units.tolist(), mp, binary)
        assert hasher_result(units, mp, binary, pieces=3) == expected
        assert len(expected[0]) > 3 and (binary or len(expected[1]) > 3)


def test_nested_levels_are_subsets() -> None:
    """A coarser level keeps a subset of a finer level's anchored values: exactly those whose
    level (recovered from the value) is at least the coarser level."""
    rng = np.random.default_rng(11)
    units = _words(rng, 3000)
    u = T.normalize(units)
    sets = {}
    for lv in range(8):
        # No level limits: the level stays as given whatever the length.
        h = rolling.ManberHasher(replace(DEFAULT_PARAMS.manber(True, lv), level_units=()))
        h.feed(u)
        sets[lv] = h.finish()
    for lv in range(1, 8):
        fine, coarse = sets[lv - 1][1], sets[lv][1]
        assert set(coarse.tolist()) <= set(fine.tolist())
        assert coarse.tolist() == fine[rolling.anchored_levels(fine) >= lv].tolist()
        assert sets[lv][0].tolist() == sets[0][0].tolist()  # rolling never depends on the level
    assert sets[7][1].size < sets[0][1].size // 20
    assert rolling.anchored_levels(sets[3][1]).min() >= 3


def test_text_level_schedule() -> None:
    p = DEFAULT_PARAMS
    sizes = [0, 1, 511, 512, 1023, 1024, 4095, 4096, 8900, 32767, 32768, 1 << 20, 1 << 40]
    expected = [ref_level(n, p.level_units) for n in sizes]
    assert expected == [0, 0, 0, 1, 1, 2, 3, 5, 6, 7, 7, 7, 7]
    assert [p.text_level(s) for s in sizes] == expected
    assert p.text_levels(np.array(sizes)).tolist() == expected
    # A text keeps the anchored windows of its unit count's level, streamed or in a batch.
    rng = np.random.default_rng(12)
    small, large = _words(rng, 60).encode(), _words(rng, 3000).encode()
    for data in (small, large):
        fp = fingerprint_bytes(data)
        u = T.normalize(data.decode())
        assert fp.units == u.size
        h = rolling.ManberHasher(replace(p.manber(True, p.text_level(u.size)), level_units=()))
        h.feed(u)
        # Stored text values carry the view bit of the text view (``fingerprint.views``).
        assert fp.anchored.tolist() == views.tag_sorted(h.finish()[1], views.TEXT).tolist()
        assert fp.anchored.size and rolling.anchored_levels(fp.anchored).min() >= p.text_level(u.size)
        assert _same(fingerprint_many([data])[0], fp)
    assert p.text_level(len(small)) < p.text_level(len(large))


def test_window_values_reference_and_dtype() -> None:
    rng = np.random.default_rng(1)
    u = rng.integers(0, 128, 500).astype(np.uint8)
    starts = np.array([0, 3, 100, 450])
    text_vals = [ref_value(u[s : s + 50].tolist(), False) for s in starts]
    assert rolling.window_values(u, starts, 50).tolist() == text_vals
    assert rolling.window_values(u.astype(np.uint32), starts, 50).tolist() == text_vals
    assert rolling.window_values(u.astype(np.uint32), starts[1:2], 50).tolist() == text_vals[1:2]
    assert rolling.window_values(u, starts, 50, binary=True).tolist() == [
        ref_value(u[s : s + 50].tolist(), True) for s in starts
    ]


def test_no_overlap_runs() -> None:
    """70 equal units: one fingerprint; a long run of one byte is fast and tiny."""
    p = rolling.ManberParams(window=50, density=1, anchor_density=1 << 20)
    r, _ = hasher_result(np.full(70, 120, dtype=np.uint32), p, False)
    assert len(r) == 1
    h = rolling.ManberHasher(rolling.ManberParams(window=50, density=1, anchor_density=1 << 20), binary=True)
    h.feed(np.full(8 << 20, 7, dtype=np.uint8))
    roll, _ = h.finish()
    assert roll.size == 1  # every window is the same one


def test_pick_non_overlapping_dense_and_sparse() -> None:
    rng = np.random.default_rng(3)
    for n, spread in ((50, 10_000), (5000, 20_000), (20000, 30_000)):
        c = np.unique(rng.integers(0, spread, n))
        for first in (0, 17, 5000):
            expected = ref_greedy([x for x in c.tolist() if x >= first], 50)
            assert rolling.pick_non_overlapping(c, first, 50).tolist() == expected


@pytest.mark.parametrize("n", [0, 1, 7, 1023, 1024, 5000, 70_000])
def test_sorted_unique_matches_numpy(n: int) -> None:
    """The two-pass hash sort is a complete sort for any input, hash-like or not."""
    rng = np.random.default_rng(n)
    inputs = {
        "random": rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True),
        "top bit set": rng.integers(0, 2**63, n, dtype=np.uint64) | np.uint64(1 << 63),
        "few values": rng.integers(0, 40, n, dtype=np.uint64),
        "equal bits 47..62": rng.integers(0, 2**47, n, dtype=np.uint64) | np.uint64(0x5A5A << 47),
        "descending": np.sort(rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True))[::-1].copy(),
    }
    for name, v in inputs.items():
        assert rolling.sort_hashes(v.copy()).tolist() == sorted(v.tolist()), name
        assert rolling.sorted_unique(v.copy()).tolist() == sorted(set(v.tolist())), name


def test_batch_segments_never_cross() -> None:
    """Windows across file ends are not candidates in the concatenated hasher."""
    rng = np.random.default_rng(9)
    parts = [rng.integers(0, 256, int(k)).astype(np.uint8) for k in rng.integers(0, 400, 40)]
    p = rolling.ManberParams(window=50, density=2, anchor_density=3)
    ends = np.cumsum([x.size for x in parts])
    h = rolling.ManberHasher(p, binary=True, ends=ends)
    h.feed(np.concatenate(parts))
    rv, ro, av, ao = h.finish_segments()
    for i, part in enumerate(parts):
        er, ea = ref_fingerprints(part.tolist(), 50, 2, 3, True)
        assert sorted(set(rv[ro == i].tolist())) == er
        assert sorted(set(av[ao == i].tolist())) == ea


# --------------------------------------------------------------------------- normalisation


def test_normalize_examples() -> None:
    assert T.normalize("  Hello,\r\n  WORLD!  ").tolist() == [ord(c) for c in "hello world"]
    assert T.normalize("ﬁne café Ｆｕｌｌ").tolist() == [ord(c) for c in "fine cafe full"]
    assert T.normalize("").size == 0 and T.normalize(" \n\t ").size == 0
    units, src = T.normalize_with_offsets("Ab, c")
    assert units.tolist() == [ord(c) for c in "ab c"] and src.tolist() == [0, 1, 2, 4]


def _random_text(rng: np.random.Generator, n: int) -> str:
    pools = [
        "abcdefghijklmnopqrstuvwxyz ",
        "ABCDEFG .,;:!?-\n\r\t  ",
        "“”’—éüßÆæ½ﬁ\u00a0\u200b\ufeff\u2028",
        "Ωπλдждж中文字漢𝔘𝔫😀\u0301",
    ]
    weights = np.array([0.7, 0.2, 0.07, 0.03])
    out = []
    for pool in rng.choice(len(pools), n, p=weights):
        s = pools[pool]
        out.append(s[rng.integers(len(s))])
    return "".join(out)


def test_fast_and_general_paths_agree() -> None:
    """Random text through the byte fast path, the numpy path (offsets) and char by char."""
    rng = np.random.default_rng(11)
    for trial in range(60):
        text = _random_text(rng, int(rng.integers(0, 400)))
        if trial % 3 == 0:
            text = "".join(c for c in text if ord(c) < 128)
        for heavy in (True, False):
            fast = T.Normalizer(heavy).feed(text)[0].astype(np.uint32)
            general, src = T.normalize_with_offsets(text, heavy)
            assert fast.tolist() == general.tolist()
            assert src.size == general.size and (np.diff(src) >= 0).all()
            # Char-by-char reference: map each character, drop, collapse spaces, strip.
            ref = "".join(T._map_char(c, heavy) for c in text)
            ref = " ".join(ref.split(" "))
            ref = " ".join(w for w in ref.split(" ") if w)
            assert general.tolist() == [ord(c) for c in ref]
            assert bytes(T.Normalizer(heavy).feed_utf8(text)) == ref.encode("utf-8", "surrogatepass")
            if heavy:
                pair_units, pair_light = T.PairNormalizer().feed(text)
                assert pair_units.astype(np.uint32).tolist() == general.tolist()
                assert bytes(pair_light) == bytes(T.Normalizer(False).feed_utf8(text))
            # Streaming in pieces gives the same units.
            nz = T.Normalizer(heavy)
            cuts = sorted(rng.integers(0, len(text) + 1, 5).tolist())
            pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
            streamed = [nz.feed(p)[0].astype(np.uint32) for p in pieces]
            assert np.concatenate(streamed).tolist() == general.tolist()


def test_offsets_point_at_source_characters() -> None:
    text = "Der Bär, the “bear”—ﬁne!\r\n  Next line."
    units, src = T.normalize_with_offsets(text)
    for u, s in zip(units.tolist(), src.tolist()):
        mapped = T._map_char(text[s], True)
        assert chr(u) in mapped or (u == 32 and mapped.strip() == "")


# --------------------------------------------------------------------------- whole files

PASSAGE = (
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a wife. However little known the feelings or views of such a man may be on "
    "his first entering a neighbourhood, this truth is so well fixed in the minds of the surrounding "
    "families, that he is considered the rightful property of some one or other of their daughters. "
)
CAFE = "Café déjà vu: naïve façade, “quoted” text — résumé.  Ünïcödé straße.\n"


def _same(a, b) -> bool:
    return (
        np.array_equal(a.rolling, b.rolling)
        and np.array_equal(a.anchored, b.anchored)
        and a.simhash == b.simhash
        and a.content_hash == b.content_hash
        and a.units == b.units
    )


def test_same_text_in_other_encodings_and_line_endings() -> None:
    text = (PASSAGE + CAFE) * 4
    base = fingerprint_bytes(text.encode("utf-8"))
    assert base.is_text and base.encoding == "utf-8" and base.rolling.size > 0
    variants = {
        "utf-8-crlf": text.replace("\n", "\r\n").encode("utf-8"),
        "utf-8-bom": codecs.BOM_UTF8 + text.encode("utf-8"),
        "utf-16-bom": text.encode("utf-16"),
        "utf-16-le-nobom": text.encode("utf-16-le"),
        "utf-16-be-nobom": text.encode("utf-16-be"),
        "cp1252": text.replace("“", '"').replace("”", '"').replace("—", "-").encode("cp1252"),
        "rewrapped": "\n".join(text.split(" ")).encode("utf-8"),
    }
    plain_base = fingerprint_bytes(text.replace("“", '"').replace("”", '"').replace("—", "-").encode("utf-8"))
    for name, data in variants.items():
        fp = fingerprint_bytes(data)
        assert fp.is_text, name
        ref = plain_base if name == "cp1252" else base
        assert np.array_equal(fp.rolling, ref.rolling), name
        assert np.array_equal(fp.anchored, ref.anchored), name
        assert fp.simhash == ref.simhash, name
        if name != "rewrapped":
            assert fp.content_hash == ref.content_hash, name
    # Re-wrapping replaces spaces by line breaks: the light form unifies those too.
    assert fingerprint_bytes(variants["rewrapped"]).content_hash == base.content_hash


def test_gbk_and_cjk() -> None:
    text = (
        "这是一个关于文件相似性的测试。我们用不同的编码保存同一段文字，指纹应该相同。"
        "春天来了，公园里的花都开了，孩子们在草地上快乐地玩耍。老师说学习要认真，做事要仔细。"
        "他每天早上六点起床，先跑步半小时，然后吃早饭，再骑自行车去上班。这个城市的交通越来越方便。"
        "图书馆里有很多书，历史、地理、文学和科学，应有尽有。周末我常常去那里看书，一坐就是一下午。"
    ) * 2
    a = fingerprint_bytes(text.encode("utf-8"))
    b = fingerprint_bytes(text.encode("gbk"))
    c = fingerprint_bytes(text.encode("utf-16"))
    assert b.is_text and b.encoding in ("gb2312", "gbk", "gb18030")
    assert _same(a, b) and _same(a, c)
    assert a.rolling.size > 0


def test_case_and_punctuation_fold_but_content_hash_does_not() -> None:
    a = fingerprint_bytes(PASSAGE.encode())
    b = fingerprint_bytes(PASSAGE.upper().replace(",", " ;").encode())
    assert np.array_equal(a.rolling, b.rolling)
    assert a.content_hash != b.content_hash


def test_different_texts_differ() -> None:
    a = fingerprint_bytes(PASSAGE.encode() * 3)
    rng = np.random.default_rng(2)
    other = " ".join("".join(rng.choice(list("abcdefghij"), 6)) for _ in range(300))
    b = fingerprint_bytes(other.encode())
    assert a.content_hash != b.content_hash and a.checksum != b.checksum
    assert not set(a.rolling.tolist()) & set(b.rolling.tolist())
    assert hamming(a.simhash, b.simhash) > 10


def _words(rng: np.random.Generator, n: int) -> str:
    return " ".join("".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), int(k))) for k in rng.integers(1, 9, n))


def test_moved_passage_and_one_changed_byte() -> None:
    rng = np.random.default_rng(4)
    filler = [_words(rng, 300) for _ in range(2)]
    shared = _words(rng, 600)
    a = fingerprint_bytes((filler[0] + " " + shared + " " + filler[1]).encode())
    b = fingerprint_bytes((filler[1] + "\n" + filler[0][:77] + ".\n" + shared).encode("utf-16"))
    inner = set(fingerprint_bytes(shared.encode()).rolling.tolist())
    common = inner & set(a.rolling.tolist()) & set(b.rolling.tolist())
    # The no-overlap chain re-synchronises a few windows into the passage.
    assert len(inner) > 30 and len(common) >= 0.85 * len(inner)
    data = bytearray(shared.encode())
    data[len(data) // 2] = ord("#")
    c = fingerprint_bytes(bytes(data))
    sc = set(c.rolling.tolist())
    assert sc != inner and len(sc & inner) >= 0.85 * len(inner)


def test_short_inputs() -> None:
    for data in (b"", b"a", b"x" * 49, b"y" * 50, bytes(range(256))[:50]):
        fp = fingerprint_bytes(data)
        assert fp.size == len(data) and len(fp.checksum) == 16
        assert fp.rolling.dtype == np.uint64 and fp.anchored.dtype == np.uint64
        if len(data) < 50:
            assert fp.rolling.size == 0 and fp.anchored.size == 0 and fp.simhash == 0
    assert fingerprint_bytes(b"").is_text
    spaces = fingerprint_bytes(b"ab" + b" " * 70 + b"cd")
    assert spaces.units == 5


def test_invalid_utf8_falls_back() -> None:
    good = (PASSAGE * 400).encode()
    assert len(good) > 2 * T.SAMPLE  # the bad bytes lie after the detection sample
    bad = good[: len(good) * 3 // 4] + b"\xff\xfe\x80" + good[len(good) * 3 // 4 :]
    fp = fingerprint_bytes(bad, FingerprintParams(chunk_size=4096))
    assert fp.is_text and fp.encoding is not None
    dec = decode_bytes(bad)
    assert dec.text is not None and fp.encoding == dec.encoding
    assert fp.units == T.normalize(dec.text).size


def test_binary_fingerprints_and_kind_bits() -> None:
    data = np.random.default_rng(8).integers(0, 256, 300_000, dtype=np.uint8).tobytes()
    fp = fingerprint_bytes(data)
    assert not fp.is_text and fp.encoding is None and fp.content_hash == fp.checksum
    assert fp.rolling.size > 500 and fp.anchored.size > 10
    assert (fp.rolling < (1 << 63)).all() and (fp.anchored >= (1 << 63)).all()
    assert (np.diff(fp.rolling.astype(np.float64)) > 0).all()
    expected = ref_fingerprints(
        list(data[:20000]), 50, DEFAULT_PARAMS.binary_density, DEFAULT_PARAMS.binary_anchor_density, True
    )
    small = fingerprint_bytes(data[:20000])
    assert (small.rolling.tolist(), small.anchored.tolist()) == expected
    assert (
        small.simhash
        == ref_simhash(expected[0] + expected[1])
        == simhash(np.array(expected[0] + expected[1], dtype=np.uint64))
    )


@pytest.mark.parametrize("chunk", [4096, 4099, 65536])
def test_chunks_equal_one_shot(tmp_path, chunk: int) -> None:
    rng = np.random.default_rng(12)
    text = _random_text(rng, 30_000).encode("utf-8")
    binary = rng.integers(0, 256, 200_000, dtype=np.uint8).tobytes()
    whole = FingerprintParams(chunk_size=1 << 22, binary_chunk_size=1 << 22)
    pieces = FingerprintParams(chunk_size=chunk, binary_chunk_size=chunk)
    for data in (text, text.decode().encode("utf-16"), binary):
        one = fingerprint_bytes(data, whole)
        many = fingerprint_bytes(data, pieces)
        assert _same(one, many) and one.checksum == many.checksum and one.partial == many.partial
        p = tmp_path / "f.bin"
        p.write_bytes(data)
        f = fingerprint_file(p, pieces)
        assert _same(one, f) and f.checksum == one.checksum and f.partial == one.partial and f.size == len(data)


def test_fingerprint_many_equals_one_by_one() -> None:
    rng = np.random.default_rng(13)
    items = [_random_text(rng, int(n)).encode("utf-8") for n in rng.integers(0, 3000, 60)]
    items += [rng.integers(0, 256, int(n), dtype=np.uint8).tobytes() for n in rng.integers(0, 5000, 10)]
    items += [b"", b"a" * 51, (PASSAGE * 3).encode("utf-16"), (CAFE * 9).encode("cp1252"), b"\xff\xfe" + b"\x00" * 9]
    items += [(PASSAGE * 900).encode()]  # larger than a chunk: done alone
    params = FingerprintParams(chunk_size=1 << 16)
    many = fingerprint_many(items, params)
    assert len(many) == len(items)
    for data, fp in zip(items, many):
        one = fingerprint_bytes(data, params)
        assert _same(fp, one)
        assert (fp.size, fp.checksum, fp.partial, fp.is_text, fp.encoding) == (
            one.size,
            one.checksum,
            one.partial,
            one.is_text,
            one.encoding,
        )


def test_deterministic_across_processes(tmp_path) -> None:
    p = tmp_path / "t.txt"
    p.write_bytes((PASSAGE + CAFE).encode() * 20)
    code = (
        "import sys; from simscan.fingerprint import fingerprint_file as f; r = f(sys.argv[1]); "
        "print(r.simhash, r.content_hash.hex(), r.rolling.tolist(), r.anchored.tolist())"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code, str(p)],
            capture_output=True,
            text=True,
            check=True,
            env={
                "PYTHONHASHSEED": seed,
                "PATH": "/usr/bin:/bin",
                "PYTHONPATH": str(__import__("pathlib").Path(__file__).resolve().parent.parent),
            },
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outs) == 1
    fp = fingerprint_file(p)
    assert next(iter(outs)).split(" ")[0] == str(fp.simhash)


def test_utf8_pieces_cut_at_character_borders() -> None:
    rng = np.random.default_rng(21)
    text = _random_text(rng, 3000)
    data = text.encode("utf-8")
    for size in (1, 2, 3, 5, 64, 1000):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        pieces = list(T.utf8_pieces(iter(chunks)))
        assert b"".join(p for p, _ in pieces) == data
        assert "".join(t for _, t in pieces) == text
        assert all(p.decode("utf-8") == t for p, t in pieces)
    with pytest.raises(UnicodeDecodeError):
        list(T.utf8_pieces(iter([data + "é".encode()[:1]])))


@pytest.mark.parametrize("density,anchor_density", [(2, 3), (4, 8), (32, 256)])
def test_fingerprint_many_dense_borders(density: int, anchor_density: int) -> None:
    """Dense sampling puts candidates and anchors next to every file border."""
    rng = np.random.default_rng(density)
    params = FingerprintParams(
        text_density=density,
        text_anchor_density=anchor_density,
        binary_density=density,
        binary_anchor_density=anchor_density,
    )
    items = [_words(rng, int(n)).encode() for n in rng.integers(0, 120, 80)]
    items += [rng.integers(0, 256, int(n), dtype=np.uint8).tobytes() for n in rng.integers(0, 700, 30)]
    order = rng.permutation(len(items))
    many = fingerprint_many([items[i] for i in order], params)
    for i, fp in zip(order, many):
        assert _same(fp, fingerprint_bytes(items[i], params))


def test_detect_text_or_binary() -> None:
    assert T.detect(b"plain text\twith tabs\r\n" * 50) == T.Detected(True, "utf-8")
    assert not T.detect(b"abc\x01\x02\x03def" * 50).is_text  # many control bytes
    assert not T.detect(bytes(range(256)) * 4).is_text  # NULs, not UTF-16
    assert T.detect("é".encode("utf-16")).encoding == "utf-16-le"
    assert T.detect("Grüße".encode("cp1252") * 30).is_text  # chardet unsure: still text
    assert T.detect("日本語のテキスト".encode("iso2022_jp") * 5).encoding == "iso2022_jp"
