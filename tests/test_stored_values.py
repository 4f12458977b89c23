"""The fingerprint values this ALGORITHM_VERSION stores, pinned.

Indexes keep fingerprints from earlier scans and re-read a file only when its algorithm version
differs (``simscan.model.ALGORITHM_VERSION``).  A change that alters any stored value without
bumping that version would silently mix old and new values in one index.  The other tests compare
fast paths with slow references of the *same* code; this one compares with the values computed by
version 10 as first released (checked again against that release, commit 1700fc7, when this test
was written), and for version 11 (the code view: primitive types as names, names glued) the one
digest that version meant to change, "code"; the other nine are version 10's, unchanged.  If a
change is meant to alter them: bump ALGORITHM_VERSION and update the digests.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np

from simscan.fingerprint import fingerprint_bytes, fingerprint_many
from simscan.model import ALGORITHM_VERSION

DIGESTS = {
    "ascii": "2b897316b1a68a055bd9e740",
    "utf8": "a5f2e98efc458be61689f829",
    "utf8-crlf": "b3b0014560a54923c200656c",
    "utf16": "4014c41726c8746707f2eda5",
    "cp1252": "6e2a049e42210a8e1de39425",
    "gbk": "9ef328c7d49ab2d2169df71c",
    "code": "f9a90ab1e750f8c8c37fb373",  # version 10: 8a8d8c602b682571cf875a00
    "binary": "6684ad857ac0aaca068be9dc",
    "empty": "baf5d37dcf02d71c238941ca",
    "short": "8ceb2e56ec133023e02510f5",
}


def _inputs() -> dict[str, bytes]:
    rng = random.Random(2026)
    words = ["river", "mountain", "théâtre", "naïve", "Straße", "“quoted”", "don’t", "data", "東京", "α-β"]
    prose = " ".join(rng.choice(words) for _ in range(3000))
    ascii_text = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "eps"]) for _ in range(5000)) + "\n"
    code = "\n".join(f"int f{k}(int a, int b) {{ return a * {k} + b; }} // line {k}" for k in range(200)) + "\n"
    return {
        "ascii": ascii_text.encode(),
        "utf8": prose.encode(),
        "utf8-crlf": prose.replace(" ", "\r\n", 500).encode(),
        "utf16": prose.encode("utf-16"),
        "cp1252": "naïve café “quoted” — résumé ".encode("cp1252") * 200,
        "gbk": ("中文文本测试，" * 400).encode("gbk"),
        "code": code.encode(),
        "binary": np.random.default_rng(5).integers(0, 256, 300_000, dtype=np.uint8).tobytes(),
        "empty": b"",
        "short": b"A few words.",
    }


def _digest(fp) -> str:
    h = hashlib.sha256()
    for part in (fp.rolling.astype("<u8").tobytes(), fp.anchored.astype("<u8").tobytes(),
                 fp.checksum, fp.content_hash, int(fp.partial).to_bytes(8, "little", signed=True),
                 int(fp.simhash).to_bytes(8, "little"), int(fp.units).to_bytes(8, "little"),
                 str(fp.encoding).encode(), bytes([fp.is_text])):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()[:24]


#: The version whose values ``DIGESTS`` holds.
DIGESTS_VERSION = 11


def test_stored_values_of_this_algorithm_version() -> None:
    assert ALGORITHM_VERSION == DIGESTS_VERSION, "a new algorithm version: compute its DIGESTS here"
    data = _inputs()
    assert {name: _digest(fingerprint_bytes(d)) for name, d in data.items()} == DIGESTS
    # The batch path (small files at once) stores the same values.
    small = {k: v for k, v in data.items() if len(v) <= 1 << 20}
    got = fingerprint_many(list(small.values()))
    assert {name: _digest(fp) for name, fp in zip(small, got)} == {k: DIGESTS[k] for k in small}
