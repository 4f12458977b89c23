"""The fingerprint values this ALGORITHM_VERSION stores, pinned.

Indexes keep fingerprints from earlier scans and re-read a file only when its algorithm version
differs (``simscan.model.ALGORITHM_VERSION``).  A change that alters any stored value without
bumping that version would silently mix old and new values in one index.  The other tests compare
fast paths with slow references of the *same* code; this one compares with the values computed by
version 10 as first released (checked again against that release, commit 1700fc7, when this test
was written), and for version 11 (the code view: primitive types as names, names glued) the one
digest that version meant to change, "code"; the other nine were version 10's.  Version 12
(winnowing, each value's meta in the digest) changed every one; its digests were checked against
the slow reference (``tests/reference_fingerprint.py``: values, meta and simhash equal for each of
these inputs, the binary one on its first 60,000 bytes) when they were written here.  If a change
is meant to alter them: bump ALGORITHM_VERSION and update the digests.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np

from simscan.fingerprint import fingerprint_bytes, fingerprint_many
from simscan.model import ALGORITHM_VERSION

DIGESTS = {
    "ascii": "82c0b65646f9a6cd0aaaffe5",
    "utf8": "d2bddb06b11ad882c4f22f5c",
    "utf8-crlf": "76559148698373015efcc176",
    "utf16": "2fd32cdb5fcfe5adf1494efc",
    "cp1252": "c175a6b93323c92f81aba8bb",
    "gbk": "565222a1ba599f69488f032a",
    "code": "e736d50ce839813625e633de",
    "binary": "9a0c0ff8b2143feb65829d2e",
    "empty": "c6df6004ef8409f62c10c458",
    "short": "fc5fea98549e705e8a85909c",
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
                 str(fp.encoding).encode(), bytes([fp.is_text]), fp.meta.blob()):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()[:24]


#: The version whose values ``DIGESTS`` holds.
DIGESTS_VERSION = 12


def test_stored_values_of_this_algorithm_version() -> None:
    assert ALGORITHM_VERSION == DIGESTS_VERSION, "a new algorithm version: compute its DIGESTS here"
    data = _inputs()
    assert {name: _digest(fingerprint_bytes(d)) for name, d in data.items()} == DIGESTS
    # The batch path (small files at once) stores the same values.
    small = {k: v for k, v in data.items() if len(v) <= 1 << 20}
    got = fingerprint_many(list(small.values()))
    assert {name: _digest(fp) for name, fp in zip(small, got)} == {k: DIGESTS[k] for k in small}
