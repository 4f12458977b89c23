"""The view bit of text fingerprints: which unit stream a value was computed from.

A text file has the *text view* (its normalised text) and, when it is program source, also
the *code view* (``code``: identifiers replaced by one placeholder).  Both are stored in the
same sorted arrays (``Fingerprints.rolling`` / ``anchored``; the byte layout is unchanged),
and one bit of every text value says which view it belongs to, so that the similarity layer
can score each view of a pair apart (never a text window against a code window) and keep the
better score.  Binary files have no views: their values are left as they are and always
count as view 0 (callers pass which values belong to text files, as for levels).

* rolling text values (top bit 0): bit 62 is the view (63 -> 62 bits of identity: two
  different windows collide with probability 2^-62);
* nested anchored values (top bit 1, ``2^63 | perm63(g * 2^31 + (x >> 33))``, see
  ``rolling.nested_anchored_value``): the lowest bit of the pre-image, i.e. of ``x >> 33``, is
  the view (``g``, hence the level, is untouched: 30 bits of ``x`` remain beside ``g``'s 32).

Tagging keeps a value's level and its rolling/anchored kind; it changes the order of values,
so callers sort again (and drop the rare duplicates two values differing only in the view bit
would make).
"""

from __future__ import annotations

import numpy as np

from simscan.fingerprint.rolling import _A63, _A63_INV, _B63, _B63_INV

TEXT = 0
CODE = 1

_TOP = np.uint64(1 << 63)
_LOW63 = np.uint64((1 << 63) - 1)
_BIT62 = np.uint64(1 << 62)
_ONE = np.uint64(1)
_S32 = np.uint64(32)


def _unperm(v: np.ndarray) -> np.ndarray:
    """Pre-image (63 bits) of anchored values (inverse of the perm63 in ``rolling``)."""
    with np.errstate(over="ignore"):
        y = v & _LOW63
        y *= np.uint64(_B63_INV)
        y &= _LOW63
        y ^= y >> _S32
        y *= np.uint64(_A63_INV)
        y &= _LOW63
    return y


def _perm(y: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        y = y * np.uint64(_A63)
        y &= _LOW63
        y ^= y >> _S32
        y *= np.uint64(_B63)
        y &= _LOW63
    return y | _TOP


def tag_rolling(values: np.ndarray, view: int) -> np.ndarray:
    """:func:`tag` of rolling text values only (top bit clear), sorted and distinct."""
    v = np.asarray(values, dtype=np.uint64) & ~_BIT62
    if view:
        v |= _BIT62
    v.sort()
    return _distinct_sorted(v)


def tag_anchored(values: np.ndarray, view: int) -> np.ndarray:
    """:func:`tag` of nested anchored text values only (top bit set), sorted and distinct."""
    y = _unperm(np.asarray(values, dtype=np.uint64))
    y &= ~_ONE
    if view:
        y |= _ONE
    v = _perm(y)
    v.sort()
    return _distinct_sorted(v)


def _distinct_sorted(v: np.ndarray) -> np.ndarray:
    if v.size > 1 and bool((v[1:] == v[:-1]).any()):
        return np.unique(v)
    return v


def tag(values: np.ndarray, view: int) -> np.ndarray:
    """Text fingerprint values (rolling and/or anchored, any order) with their view bit set to
    ``view`` (TEXT or CODE).  A new array, same order (callers re-sort)."""
    v = np.asarray(values, dtype=np.uint64)
    out = v.copy()
    if v.size == 0:
        return out
    anch = (v & _TOP) != 0
    if not anch.all():
        r = ~anch
        out[r] = (v[r] & ~_BIT62) | (_BIT62 if view else np.uint64(0))
    if anch.any():
        y = _unperm(v[anch])
        y = (y & ~_ONE) | np.uint64(view)
        out[anch] = _perm(y)
    return out


def tag_sorted(values: np.ndarray, view: int) -> np.ndarray:
    """:func:`tag`, then sorted and distinct (the form ``Fingerprints`` stores)."""
    return np.unique(tag(values, view))


#: Values examined at once by :func:`value_views` (its temporaries are several uint64 arrays
#: as long as the slice: a pair search passes every fingerprint of the index).
_VIEW_SLICE = 1 << 22


def value_views(values: np.ndarray, text_owner: np.ndarray | bool) -> np.ndarray:
    """View (uint8: TEXT 0 / CODE 1) of each stored value; values of binary files
    (``text_owner`` False) are TEXT."""
    v = np.asarray(values, dtype=np.uint64)
    out = np.zeros(v.size, dtype=np.uint8)
    if v.size == 0:
        return out
    text = np.broadcast_to(np.asarray(text_owner, dtype=bool), v.shape)
    for lo in range(0, v.size, _VIEW_SLICE):
        sl = slice(lo, lo + _VIEW_SLICE)
        vs, ts, o = v[sl], text[sl], out[sl]
        anch = (vs & _TOP) != 0
        r = ts & ~anch
        o[r] = ((vs[r] & _BIT62) != 0).astype(np.uint8)
        a = ts & anch
        if a.any():
            o[a] = (_unperm(vs[a]) & _ONE).astype(np.uint8)
    return out


def code_only(code: np.ndarray, text: np.ndarray, kind: str) -> np.ndarray:
    """The code-view values ``code`` (untagged hasher output, sorted) that are not also a value
    of the text view ``text`` (tagged, sorted), tagged CODE, sorted and distinct.

    A code window without any identifier (a comment, a string, keywords and numbers only) has
    the same units as the text window at that place, hence the same value, and the text view
    usually holds it already; kept in the code view too, such windows would count twice and,
    being separate values, would escape the common cut-off that catches them in the text view
    (licence headers in comments made 2 of 3 of the code view's new pairs among 928 system
    headers and C examples).  ``kind``: "rolling" or "anchored".
    """
    tag_fn = tag_rolling if kind == "rolling" else tag_anchored
    twins = tag_fn(code, TEXT)
    if twins.size == 0:
        return twins
    fresh = twins[~np.isin(twins, text, assume_unique=True)]
    return tag_fn(fresh, CODE)

