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
