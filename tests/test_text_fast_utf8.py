"""The byte fast path read from a piece's UTF-8 bytes (``text._sparse_utf8``) against the
UTF-16 form and a character-by-character reference, on mostly-ASCII text with sparse
non-ASCII characters of every UTF-8 length, dropped characters, NUL and control bytes."""

from __future__ import annotations

import numpy as np
import pytest

from simscan.fingerprint import text as T

# Non-ASCII characters: 2 and 3 bytes mapping to one ASCII unit, to a space, to nothing
# (soft hyphen, zero-width space, BOM), to several units (ligature: the general path), to
# themselves (CJK: general path), and 4-byte ones (the UTF-16 form is used instead).
_RARE = "“”’‘—–éüßÀ½\u00a0\u00ad\u200b\ufeff\u2028ﬁΩд中😀𝔘\u0301"
_COMMON = "abcdefghijklmnopqrstuvwxyz ABC .,;:!?-\n\r\t  \x00\x07\x7f"


def _text(rng: np.random.Generator, n: int, rare: float, pool: str = _RARE) -> str:
    common = rng.choice(list(_COMMON), n)
    mask = rng.random(n) < rare
    common[mask] = rng.choice(list(pool), int(mask.sum()))
    return "".join(common.tolist())


def _ref(text: str, heavy: bool) -> str:
    out = "".join(T._map_char(c, heavy) for c in text)
    return " ".join(w for w in out.split(" ") if w)


def test_sparse_utf8_matches_utf16_form() -> None:
    rng = np.random.default_rng(1)
    for trial in range(40):
        text = _text(rng, int(rng.integers(1, 3000)), float(rng.choice([0.0005, 0.01, 0.05])), _RARE.replace("😀𝔘", ""))
        if text.isascii():
            continue
        raw = text.encode("utf-8")
        _, lead, cp, cont = T._sparse_utf8(text, raw)
        _, hi, vals, _ = T._sparse_non_ascii(text)
        assert cp.tolist() == vals.tolist()
        # The same characters: the lead byte of the k-th non-ASCII character is at its
        # character index plus the continuation bytes before it.
        extra = np.searchsorted(np.sort(cont), lead)
        assert (lead - extra).tolist() == hi.tolist()
        assert sorted(cont.tolist()) == np.flatnonzero((np.frombuffer(raw, np.uint8) & 0xC0) == 0x80).tolist()
    # A 4-byte character: the UTF-16 form (its surrogates take the general path).
    assert T._sparse_utf8("a😀b", "a😀b".encode())[0] is not None


@pytest.mark.parametrize("min_bytes", [0, 1 << 16])
def test_pair_normalizer_from_utf8_bytes(monkeypatch: pytest.MonkeyPatch, min_bytes: int) -> None:
    """Every piece through the UTF-8 form (limit 0), and at the product's limit."""
    monkeypatch.setattr(T, "_UTF8_SPARSE_MIN", min_bytes)
    rng = np.random.default_rng(2)
    for trial in range(80):
        pool = _RARE if trial % 4 == 0 else _RARE.replace("😀𝔘", "").replace("ﬁΩд中\u0301", "")
        n = int(rng.integers(0, 4000)) if min_bytes == 0 or trial % 8 else int(rng.integers(70_000, 150_000))
        text = _text(rng, n, float(rng.choice([0.0, 0.001, 0.02, 0.1, 0.2])), pool)
        raw = text.encode("utf-8")
        cuts = sorted(rng.integers(0, len(text) + 1, 3).tolist()) if n < 10_000 else [n // 2]
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
        with_raw, without = T.PairNormalizer(), T.PairNormalizer()
        units, light = [], []
        for piece in pieces:
            u1, l1 = with_raw.feed(piece, piece.encode("utf-8"))
            u2, l2 = without.feed(piece)
            assert u1.astype(np.uint32).tolist() == u2.astype(np.uint32).tolist()
            assert bytes(l1) == bytes(l2)
            units.append(u1.astype(np.uint32))
            light.append(bytes(l1))
        assert np.concatenate(units).tolist() == [ord(c) for c in _ref(text, True)]
        assert b"".join(light) == _ref(text, False).encode("utf-8", "surrogatepass")
        assert T.fast_pair_bytes(text, raw) == T.fast_pair_bytes(text)
        pair = T.fast_pair_bytes(text, raw)
        if pair is not None:
            assert " ".join(w for w in pair[0].decode().split(" ") if w) == _ref(text, True)


# --------------------------------------------------------------------------- bytes not decoded

# Byte sequences Python's strict decoder rejects, or that the check leaves to it (4 bytes).
_BAD = [b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xc3", b"\xc3A", b"\xe2\x80", b"\xe2\x80A", b"\xe0\x80\x80",
        b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf0\x9f\x98\x80", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80",
        b"\xff", b"\xfe", b"\xc3\xa9\xa9", b"\xe2\x80\x9c\x9c", b"\xe2\xc3\xa9"]
# Well-formed sequences at the edges of the ranges the check accepts.
_GOOD = [b"\xc2\x80", b"\xdf\xbf", b"\xe0\xa0\x80", b"\xe1\x80\x80", b"\xec\xbf\xbf", b"\xed\x80\x80", b"\xed\x9f\xbf",
         b"\xee\x80\x80", b"\xef\xbf\xbf", b"\xef\xbb\xbf", b"\xe2\x80\x9c", b"\xc3\xa9"]


def _bytes_text(rng: np.random.Generator, n: int, inserts: list[bytes], k: int) -> bytes:
    base = bytearray(rng.choice(list(b"abcdefghij klmnop.,\n\r"), n).astype(np.uint8).tobytes())
    for pos in sorted(rng.integers(0, n + 1, k).tolist(), reverse=True):
        base[pos:pos] = inserts[int(rng.integers(len(inserts)))]
    return bytes(base)


def test_sparse_utf8_valid_only_for_strictly_valid_bytes() -> None:
    """Never None-free for bytes Python rejects; for valid BMP text the same characters as
    the UTF-16 form, and never None (so the decoding is really skipped)."""
    rng = np.random.default_rng(3)
    for trial in range(400):
        good = _bytes_text(rng, int(rng.integers(0, 300)), _GOOD, int(rng.integers(1, 12)))
        sparse = T._sparse_utf8_valid(good)
        text = good.decode("utf-8")
        assert sparse is not None
        _, lead, cp, cont = sparse
        assert cp.tolist() == T._sparse_non_ascii(text)[2].tolist()
        assert len(good) - cont.size == len(text)
        assert lead.tolist() == [i for i, b in enumerate(good) if b >= 0xC0]
        bad = _bytes_text(rng, int(rng.integers(0, 300)), _GOOD + _BAD, int(rng.integers(1, 12)))
        try:
            bad.decode("utf-8")
            valid = True
        except UnicodeDecodeError:
            valid = False
        got = T._sparse_utf8_valid(bad)
        assert valid or got is None, bad
        if got is not None:
            assert got[2].tolist() == T._sparse_non_ascii(bad.decode("utf-8"))[2].tolist()
    for seq in _BAD:
        for text in (seq, b"abc" + seq, seq + b"abc", b"x" * 100 + seq + b"\xc3\xa9" + b"y" * 100):
            assert T._sparse_utf8_valid(text) is None, text


def test_feed_bytes_equals_feed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(T, "_UTF8_SPARSE_MIN", 0)
    rng = np.random.default_rng(4)
    for trial in range(150):
        data = _bytes_text(rng, int(rng.integers(0, 3000)), _GOOD + (_BAD if trial % 3 == 0 else []),
                           int(rng.integers(0, 30)))
        pieces = [data[: len(data) // 2], data[len(data) // 2 :]] if trial % 2 else [data]
        a, b = T.PairNormalizer(), T.PairNormalizer()
        for piece in pieces:
            got = a.feed_bytes(piece)
            try:
                text = piece.decode("utf-8")
            except UnicodeDecodeError:
                assert got is None
                break
            if got is None:
                got = (*a.feed(text, piece), len(text))
            units, light = b.feed(text, piece)
            assert got[0].astype(np.uint32).tolist() == units.astype(np.uint32).tolist()
            assert bytes(got[1]) == bytes(light) and got[2] == len(text)


def test_large_files_same_with_and_without_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole files of several large pieces: the bytes-only path gives the fingerprints that
    decoding every piece gives, including invalid bytes deep inside a large piece (read
    again with replacement) and a 4-byte character (decoded)."""
    from simscan.fingerprint import FingerprintParams, fingerprint_bytes

    params = FingerprintParams(chunk_size=1 << 17)
    rng = np.random.default_rng(5)
    words = _bytes_text(rng, 200_000, _GOOD, 2000)
    cases = [words, words[:150_000] + b"\xff" + words[150_000:], words[:90_000] + "😀".encode() + words[90_000:],
             b"\xef\xbb\xbf" + words, words.replace(b"\n", b"\r\n")]
    for data in cases:
        fast = fingerprint_bytes(data, params)
        monkeypatch.setattr(T, "_UTF8_SPARSE_MIN", 1 << 40)  # every piece decoded
        slow = fingerprint_bytes(data, params)
        monkeypatch.undo()
        for field in ("encoding", "content_hash", "simhash", "units", "checksum"):
            assert getattr(fast, field) == getattr(slow, field), field
        assert fast.rolling.tolist() == slow.rolling.tolist() and fast.anchored.tolist() == slow.anchored.tolist()
    assert fingerprint_bytes(cases[1], params).encoding == "utf-8+replace"


def test_light_collapse_equals_translate_and_collapse() -> None:
    """The light form without its translate pass: every byte value, dropped controls (then
    None), runs of every kind of white space, empty and one-byte inputs."""
    t = T._table(False)
    assert t.max_space and not T._table(True).max_space
    rng = np.random.default_rng(6)
    keep = bytes(b for b in range(256) if b not in t.ascii_drop)
    for trial in range(300):
        pool = keep if trial % 3 else bytes(range(256))
        weights = np.array([8.0 if b in b" \t\r\n\x0b\x0c\x1c\x1d\x1e\x1f" else 1.0 for b in pool])
        n = int(rng.integers(0, 2000)) if trial % 10 else int(rng.integers(0, 3))
        data = bytes(rng.choice(list(pool), n, p=weights / weights.sum()).astype(np.uint8).tolist())
        expected = T._collapse_bytes(data.translate(t.ascii_map, t.ascii_drop)).tobytes()
        got = T._light_collapse(data, t)
        if any(b in t.ascii_drop for b in data):
            assert got is None
        else:
            assert got is not None and got.tobytes() == expected, data


def test_collapse_many_light_equals_translated() -> None:
    """Untranslated light pieces (``fast_pair_bytes``) through ``collapse_many(light=True)``:
    the light forms of translating, stripping and collapsing each piece, in groups with and
    without dropped bytes (NUL, other controls, DEL) inside and at the ends of pieces."""
    t = T._table(False)
    rng = np.random.default_rng(7)
    pool = list(b"abc xyz.,\t\r\n\x0b\x0c\x1c\x1f  ") + list("é“”".encode())
    for trial in range(60):
        texts = []
        for _ in range(int(rng.integers(1, 40))):
            b = bytes(rng.choice(pool, int(rng.integers(0, 300))).astype(np.uint8).tolist())
            if rng.random() < (0.5 if trial % 2 else 0.02):  # a dropped byte somewhere
                pos = int(rng.integers(0, len(b) + 1))
                b = b[:pos] + bytes([int(rng.choice([0, 1, 8, 14, 27, 127]))]) + b[pos:]
            texts.append(b)
        sources = [b.strip(T._LOW_BYTES) for b in texts]
        expected = [T._collapse_bytes(b.translate(t.ascii_map, t.ascii_drop).strip(b" ")).tobytes() for b in texts]
        for group_bytes in (1 << 18, 64):
            parts, lengths = T.collapse_many(sources, group_bytes, light=True)
            flat = b"".join(p.tobytes() for p in parts)
            assert lengths.tolist() == [len(e) for e in expected]
            assert flat == b"".join(expected)


def test_fingerprint_many_with_control_bytes_equals_one_by_one() -> None:
    from simscan.fingerprint import fingerprint_bytes, fingerprint_many

    rng = np.random.default_rng(8)
    items = []
    for i in range(40):
        words = _bytes_text(rng, int(rng.integers(0, 4000)), _GOOD, int(rng.integers(0, 20)))
        if i % 3 == 0:  # a control byte the light form drops, or DEL, anywhere (kept text: < 1 %)
            pos = int(rng.integers(0, len(words) + 1))
            words = words[:pos] + bytes([int(rng.choice([1, 8, 14, 27, 127]))]) + words[pos:]
        if i % 5 == 0:
            words = b"\x0c \r\n" + words + b"\t\x1f "
        items.append(words)
    # A NUL after the detection sample: still text, and the NUL is dropped from both forms.
    items.append(b"word " * 14000 + b"\x00 tail\r\n")
    for got, data in zip(fingerprint_many(items), items):
        want = fingerprint_bytes(data)
        assert (got.content_hash, got.simhash, got.units, got.encoding) == (
            want.content_hash, want.simhash, want.units, want.encoding)
        assert got.rolling.tolist() == want.rolling.tolist() and got.anchored.tolist() == want.anchored.tolist()
