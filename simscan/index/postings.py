"""Which fingerprints enter the inverted index (``postings``): a value-sampled subset.

Why a subset.  A text file of ~8.9 KB has ~186 fingerprints (109 rolling + 77 anchored with
the fingerprinter's defaults of ALGORITHM_VERSION 3, ~21 per KB), so 100,000 such files have
~18.6 M.  Measured here (SQLite 3.40, WAL, synchronous=NORMAL): a WITHOUT ROWID ``(fp, file_id)``
B-tree costs ~1.5 us and 17.6 bytes per posting even when filled in one sorted pass (see the
``unposted`` table in :mod:`simscan.index.schema`), so posting everything would cost ~28 s of
writer time for 100 k files - three times the whole scan budget (12,000 files/s) - and ~3 GB for
1 M files.

Sampling by value (the same idea as Manber's "approach 2", and a *consistent* sample:
Broder 1997, MMDS ch. 3): a fingerprint is posted when the top :data:`DEFAULT_SHIFT` bits of
``value * K`` (K odd, Knuth's 64-bit golden-ratio constant, so the decision does not reuse the
bits that the fingerprinter's own selection or the rolling/anchored kind bit already fixed) are
zero.  Two files that share a passage share the *same* posted values for it, so the lookup
finds them; a pair sharing ``m`` fingerprints is missed with probability ``(1 - 2^-s)^m``.
A 1,000-character excerpt carries ~20 fingerprints: missed 6.9 % of the time with s = 3
(0.3 % with s = 2 at twice the cost, 27 % with s = 4); a lightly edited 8 KB file shares
over 100 and is never missed.  s = 3 costs ~23 postings (~35 us) per 8.9 KB file.  Scores are
never computed from postings: callers fetch the full fingerprint sets
(:meth:`Index.fingerprints`) of the candidates.

Spans post too (``DEFAULT_RULE``): a text file also posts every value whose
*dominance span* (``model.FingerprintMeta.d``: how many consecutive windows it is the rightmost
minimum of, capped at 128) reaches :data:`SPAN_POSTED` = 128, whatever its sample bit.  That is
winnowing at w = 128 over the windows each file stores (every text keeps its windows of span 64 and
up): two texts sharing a run of 128 + 49 = 177 units (about 190 characters of English) both hold its
rightmost minimum over some 128 consecutive windows of the run, with a span of at least 128 in each,
so each posts it and a lookup of the query's span-posted values finds the other file, always -- not
with probability ``1 - (7/8)^m``.  A short query (a paragraph of ~550 characters has ~14 values a
long file could share, ~2 of them sampled) is then answered by the index instead of a pass over
every stored set (``similarity.engine``).  Cost: a long text stores the windows of span >= 64, half
of which reach 128, so it posts ~4x as many values as the sample alone (measured: 3.6x on the
evaluation corpus, 2.4x on a Python tree with its binaries, whose values keep the sample only, as
their spans are all 128 by definition).

The rule is recorded in ``meta`` (``store._read_rule``: ``posting_shift`` 3 is the earlier rule, the
sample alone; ``posting_shift`` 0 with ``posting_rule`` 259 is this one).  An index of the earlier
rule is read by it until a scan adds the span values (``Index.upgrade_postings``); any other record
has its postings rebuilt on the next writable open.
"""

from __future__ import annotations

import numpy as np

#: Post 1 fingerprint value in 2^DEFAULT_SHIFT.  3: see the module docstring for the measurements.
DEFAULT_SHIFT = 3

#: Flag of a posting rule (``meta.posting_shift``): text values whose span reaches SPAN_POSTED post too.
SPANS = 256

#: The posting rule this simscan writes: the 1-in-8 sample, and every text value of span >= 128.
DEFAULT_RULE = DEFAULT_SHIFT | SPANS

#: A text value of this dominance span or more is posted (the winnowing fingerprinter's cap, D_CAP).
SPAN_POSTED = 128

_K = np.uint64(0x9E3779B97F4A7C15)


def posted_mask(values: np.ndarray, rule: int = DEFAULT_RULE, spans: np.ndarray | None = None) -> np.ndarray:
    """Boolean mask over uint64 ``values``: True for those that the inverted index holds under
    ``rule`` (a shift, plus :data:`SPANS`).  ``spans``: the values' dominance spans (uint8, aligned)
    when they are a text file's; None for a binary file's (whose spans are all 128 and say nothing)."""
    v = np.asarray(values, dtype=np.uint64)
    shift = rule & (SPANS - 1)
    if shift <= 0:
        return np.ones(v.shape, dtype=bool)
    with np.errstate(over="ignore"):
        mixed = v * _K  # wraps mod 2^64 on purpose
    mask = (mixed >> np.uint64(64 - shift)) == 0
    if rule & SPANS and spans is not None:
        mask |= np.asarray(spans) >= SPAN_POSTED
    return mask


def describe(rule: int) -> str:
    """What a posting rule posts, for people (``simscan stats``)."""
    shift = rule & (SPANS - 1)
    sample = f"1/{1 << shift}" if shift > 0 else "every value"
    return f"{sample}, and every text value of span {SPAN_POSTED}" if rule & SPANS and shift > 0 else sample


def posted(values: np.ndarray, rule: int = DEFAULT_RULE, spans: np.ndarray | None = None) -> np.ndarray:
    """The posted subset of ``values`` (same order)."""
    v = np.asarray(values, dtype=np.uint64)
    return v[posted_mask(v, rule, spans)]
