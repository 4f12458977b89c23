"""The code view of program source: code form, detection, view bits, scores per view."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import reference_fingerprint as R
from similarity_support import at_window, index_tree, span_sets, words

from simscan.fingerprint import (
    DEFAULT_PARAMS,
    code,
    fingerprint_bytes,
    fingerprint_file,
    fingerprint_many,
    rolling,
    views,
)
from simscan.fingerprint import text as T
from simscan.index import Index
from simscan.similarity import compare, find_pairs, query
from simscan.similarity.views import CODE_MIN_SHARED

_NAMES = ["weight", "height", "total", "count", "index", "value", "radius", "length", "area", "result"]
_RENAMED = ["berat", "tinggi", "jumlah", "banyak", "posisi", "nilai", "jari2", "panjang", "luas", "hasil"]


def java_program(seed: int, names: list[str], cls: str = "Main") -> str:
    """A deterministic Java-like program whose structure depends on ``seed`` only and whose
    variables are ``names``: two seeds give different programs, two name lists a renamed copy."""
    rng = random.Random(seed)
    lines = ["import java.util.Scanner;", "", f"/* Exercise {seed}: read values and print a summary */",
             f"public class {cls} {{", "    public static void main(String[] args) {",
             f"        Scanner {names[0]} = new Scanner(System.in);"]
    for _ in range(24):
        a, b, c = (names[rng.randrange(1, len(names))] for _ in range(3))
        n = rng.randint(2, 99)
        kind = rng.randrange(6)
        if kind == 0:
            lines.append(f"        double {a} = {names[0]}.nextDouble();")
        elif kind == 1:
            lines.append(f"        int {a} = {b} * {n} + {c};")
        elif kind == 2:
            lines.append(f'        if ({a} < {n}) {{ System.out.println("{words(rng.randrange(10**6), 3)}" + {b}); }}')
        elif kind == 3:
            lines.append(f"        for (int i = 0; i < {a}; i++) {{ {b} += i * {n}; }}")
        elif kind == 4:
            lines.append(f"        // {words(rng.randrange(10**6), 5)}")
        else:
            lines.append(f'        System.out.print("{words(rng.randrange(10**6), 4)}: " + {a} / {n}.0);')
    lines += ["    }", "}", ""]
    return "\n".join(lines)


def _rename(text: str, old: list[str], new: list[str]) -> str:
    import re

    table = dict(zip(old, new))
    return re.sub(r"\b(" + "|".join(old) + r")\b", lambda m: table[m.group()], text)


# ----------------------------------------------------------------------------- code form


def glue_reference(units: np.ndarray) -> list[int]:
    """Plain reference of ``code.glue``: a space between two placeholders is dropped."""
    u = [int(x) for x in units]
    ph = ord(code.PLACEHOLDER)
    return [x for k, x in enumerate(u) if not (x == 32 and 0 < k < len(u) - 1 and u[k - 1] == ph and u[k + 1] == ph)]


def code_units_reference(text: str) -> list[int]:
    return glue_reference(T.normalize(R.code_form(text)))


def test_code_form_hand_made() -> None:
    src = 'int x2 = y + 3.5; // keep y here\nString s = "y and x2"; char c = \'y\'; /* y */ return x2;'
    out = code.code_form(src)
    assert len(out) == len(src)
    units = "".join(map(chr, T.normalize(out).tolist()))
    ph = code.PLACEHOLDER
    # Primitive types are names (TYPE_NAMES); other keywords keep their text.
    assert units == f"{ph} {ph} {ph} 3 5 keep y here {ph} {ph} y and x2 {ph} {ph} y y return {ph}"
    # The code view's units: no space between two placeholders, whatever the source's spacing.
    glued = f"{ph}{ph}{ph} 3 5 keep y here {ph}{ph} y and x2 {ph}{ph} y y return {ph}"
    assert "".join(map(chr, code.code_units(src).tolist())) == glued
    assert code.code_units(src.replace(" = ", "=").replace(" + ", "+")).tolist() == code.code_units(src).tolist()
    assert "".join(map(chr, code.code_units("a.b(c) + 1; return d;").tolist())) == f"{ph}{ph}{ph} 1 return {ph}"
    # Keywords are case-sensitive, numbers stay, an unterminated literal ends at the line end.
    assert code.code_form("If x") == ph + code.FILLER + " " + ph
    assert code.code_form('a = "open\nb') == ph + ' = "open\n' + ph
    assert code.code_form('"a\\"b" c') == '"a\\"b" ' + ph
    assert code.code_form("/* never closed x") == "/* never closed x"
    assert code.code_form("") == ""
    # Include and import lines name libraries: kept as they are.
    for line in ("#include <stdio.h>", "  # include \"my_lib.h\"", "import java.util.Scanner;", "using namespace std;"):
        assert code.code_form(line + "\nx") == line + "\n" + ph
    assert code.code_form("use(x)") == "use(" + ph + ")"


def test_code_form_equals_reference() -> None:
    rng = random.Random(5)
    alphabet = list("ab_x9 \n\t\"'\\/*{};.(+é") + ["if", "int", "class", "𝔘", "日本", "//", "/*", "*/", "\r\n"]
    for _ in range(4000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert code.code_form(s) == R.code_form(s), repr(s)
    for seed in range(5):
        src = java_program(seed, _NAMES)
        assert code.code_form(src) == R.code_form(src)
        assert len(code.code_form(src)) == len(src)


def test_code_units_equal_reference() -> None:
    rng = random.Random(8)
    alphabet = list("ab_x9 \n\t\"'\\/*{};.(+") + ["if", "ﬁ", "𝔘", "\u0301", "//", "/*", code.FILLER, code.PLACEHOLDER,
                                                      "\ue001", "  ", "\r\n"]
    for _ in range(300):
        t = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25)))
        assert code.code_units(t).tolist() == code_units_reference(t), repr(t)
    for seed in range(3):
        src = java_program(seed, _NAMES)
        assert code.code_units(src).tolist() == code_units_reference(src) == R.code_units(src)


def test_looks_like_code() -> None:
    java = java_program(1, _NAMES)
    c_src = "#include <stdio.h>\n\n" + "".join(
        f"static int step{k}(int n) {{\n    int m = n * {k};\n    printf(\"%d\\n\", m);\n    return m;\n}}\n"
        for k in range(6)
    )
    assert code.looks_like_code(java) and code.looks_like_code(c_src)
    assert not code.looks_like_code(c_src[: code.MIN_CODE_CHARS - 1])  # a skeleton: too short
    prose = "\n".join(words(k, 12) + ";" * (k % 5 == 0) for k in range(40))  # a few lines end in ";"
    assert not code.looks_like_code(prose)
    assert not code.looks_like_code(prose + "\nA set {a, b} of letters.\n")
    xml = "\n".join(f'<item id="{k}">caf&eacute;</item>&amp;' for k in range(30)) + "\n{x}\n"
    assert not code.looks_like_code(xml)
    py = "def f(x):\n    return {x: 1}\n\nfor k in range(3):\n    print(f(k))\n"
    assert not code.looks_like_code(py)  # no braces at line ends: Python keeps the text view only
    assert not code.looks_like_code("x;\n" * (code.MAX_CODE_CHARS // 3 + 1) + "{")


# ----------------------------------------------------------------------------- view bits


def test_view_bits_round_trip_and_keep_levels() -> None:
    fp = fingerprint_bytes(java_program(2, _NAMES).encode())
    assert fp.rolling.size and views.value_views(fp.rolling, True).any()
    for arr in (fp.rolling, fp.anchored):
        if not arr.size:  # text files have no anchored values since ALGORITHM_VERSION 12
            continue
        for view in (views.TEXT, views.CODE):
            t = views.tag(arr, view)
            assert (views.value_views(t, True) == view).all()
            assert ((t >> np.uint64(63)) == (arr >> np.uint64(63))).all()  # kind kept
            if arr is fp.anchored:
                assert (rolling.anchored_levels(t) == rolling.anchored_levels(arr)).all()
            back = views.tag(t, views.value_views(arr, True)[0]) if (views.value_views(arr, True) == 0).all() else None
            if back is not None:
                assert (back == arr).all()
    # Binary files have no views.
    rng = np.random.default_rng(1)
    v = rng.integers(0, 2**63, 1000, dtype=np.uint64) | np.uint64(1 << 62)
    assert (views.value_views(v, False) == views.TEXT).all()
    assert (views.value_views(v, True) == views.CODE).all()


def test_code_view_fingerprints_equal_reference(tmp_path: Path) -> None:
    """The code view of a program: the slow reference's (``reference_fingerprint``: its code form,
    winnowed like the text, code windows the text view already has left out), through every entry
    point, in another encoding and streamed in small chunks."""
    import reference_fingerprint as R

    src = java_program(3, _NAMES)
    data = src.encode()
    fp = fingerprint_bytes(data)
    ref = R.fingerprints(data)
    assert fp.rolling.tolist() == ref.rolling and fp.anchored.tolist() == ref.anchored
    code_values = views.value_views(fp.rolling, True) == views.CODE
    assert 40 < int(code_values.sum()) < fp.rolling.size
    # The same through every entry point and in another encoding with CRLF.
    (tmp_path / "a.java").write_bytes(src.replace("\n", "\r\n").encode("utf-16"))
    for other in (fingerprint_many([data, b"x"])[0], fingerprint_file(tmp_path / "a.java")):
        assert other.rolling.tolist() == fp.rolling.tolist() and other.anchored.tolist() == fp.anchored.tolist()
        assert other.simhash == fp.simhash
    # Streamed in small chunks (the decoded pieces are joined for the code view): the same.
    streamed = fingerprint_bytes(data, replace(DEFAULT_PARAMS, chunk_size=512))
    assert streamed.rolling.tolist() == fp.rolling.tolist() and streamed.anchored.tolist() == fp.anchored.tolist()
    # Prose has no code view; its values are the text view's.
    prose = fingerprint_bytes(words(7, 400).encode())
    assert not views.value_views(np.union1d(prose.rolling, prose.anchored), True).any()


def test_long_texts_get_no_code_view() -> None:
    src = java_program(4, _NAMES)
    assert views.value_views(fingerprint_bytes(src.encode()).rolling, True).any()
    long = (src * (code.MAX_CODE_CHARS // len(src) + 1)).encode()
    assert len(long) > code.MAX_CODE_CHARS
    for fp in (fingerprint_bytes(long, replace(DEFAULT_PARAMS, chunk_size=4099)), fingerprint_many([long])[0]):
        assert not views.value_views(np.union1d(fp.rolling, fp.anchored), True).any()


# ----------------------------------------------------------------------------- scores per view


def _view_sets(ix: Index) -> tuple[dict[int, dict[int, dict[int, int]]], dict[int, int]]:
    """file id -> view -> {value: span} of the stored sets, and each file's level."""
    spans = span_sets(ix)
    files = ix.files()
    text = {int(i): bool(t) for i, t in zip(files.ids, files.is_text)}
    level = {int(i): DEFAULT_PARAMS.text_level(int(u)) if text[int(i)] else 0 for i, u in zip(files.ids, files.units)}
    out: dict[int, dict[int, dict[int, int]]] = {}
    for i, s in spans.items():
        v = np.array(list(s), dtype=np.uint64)
        vw = views.value_views(v, text[i]).tolist()
        out[i] = {w: {x: d for (x, d), xw in zip(s.items(), vw) if xw == w} for w in (views.TEXT, views.CODE)}
    return out, level


def _brute(sets: dict, level: dict, a: int, b: int, code_view: bool = True) -> tuple[float, float, float, str] | None:
    """Scores of the view with the higher best score (ties: text) and that view's name, by plain
    set arithmetic at the pair's window; the code view needs ``CODE_MIN_SHARED`` shared values (and
    ``code_view``)."""
    best = None
    for w in (views.TEXT, views.CODE) if code_view else (views.TEXT,):
        t = max(level[a], level[b])
        A, B = at_window(sets[a][w], t), at_window(sets[b][w], t)
        inter = len(A & B)
        if not inter or (w == views.CODE and inter < CODE_MIN_SHARED):
            continue
        sc = (100 * inter / len(A | B), 100 * inter / len(A), 100 * inter / len(B))
        if best is None or max(sc) > max(best[:3]):
            best = (*sc, "code" if w == views.CODE else "text")
    return best


def _code_tree(tmp_path: Path) -> tuple[Path, Path, str]:
    """(index, source folder, the original program) of a few sources and texts, indexed."""
    root = tmp_path / "src"
    root.mkdir()
    orig = java_program(10, _NAMES)
    (root / "Original.java").write_text(orig)
    (root / "Renamed.java").write_text(_rename(orig, _NAMES, _RENAMED))
    (root / "Other.java").write_text(java_program(11, _NAMES, "Other"))
    (root / "notes.txt").write_text(words(3, 300) + "\n" + orig[:600])  # prose quoting the source
    (root / "essay.txt").write_text(words(4, 500))
    idx = tmp_path / "i.sqlite3"
    index_tree(idx, root)
    return idx, root, orig


def _check_against_brute(idx: Path, pairs: list, code_view: bool = True) -> None:
    """Every pair's scores and view are those of the plain reference, and no pair is missing."""
    with Index.open(idx, readonly=True) as ix:
        sets, level = _view_sets(ix)
        files = ix.files()
    name = {int(i): Path(p).name for i, p in zip(files.ids, files.paths)}
    by_key = {frozenset((p.a_id, p.b_id)): p for p in pairs}
    for a, b in itertools.combinations(sorted(sets), 2):
        want = _brute(sets, level, a, b, code_view)
        p = by_key.get(frozenset((a, b)))
        if want is None:
            assert p is None, (name[a], name[b])
            continue
        assert p is not None, (name[a], name[b])
        ca, cb = (p.containment_a, p.containment_b) if p.a_id == a else (p.containment_b, p.containment_a)
        assert (p.resemblance, ca, cb) == pytest.approx(want[:3], abs=1e-3), (name[a], name[b])
        assert p.view == want[3], (name[a], name[b])


def test_renamed_copy_scores_on_the_code_view(tmp_path: Path) -> None:
    idx, root, orig = _code_tree(tmp_path)
    with Index.open(idx, readonly=True) as ix:
        pairs = find_pairs(ix, min_similarity=0)
        sets, _ = _view_sets(ix)
    _check_against_brute(idx, pairs)
    ren = next(p for p in pairs if {Path(p.a_path).name, Path(p.b_path).name} == {"Original.java", "Renamed.java"})
    oid, rid = ren.a_id, ren.b_id
    text_only = max(100 * len(sets[oid][0].keys() & sets[rid][0].keys()) / len(s) for s in (sets[oid][0], sets[rid][0]))
    assert ren.best >= 90 > text_only + 30  # renaming hides the copy from the text view only
    assert ren.view == "code"
    # Query (the renamed file as an outside file) and compare give the same scores.
    outside = tmp_path / "q"
    outside.mkdir()
    q = outside / "Renamed.java"
    q.write_text(_rename(orig, _NAMES, _RENAMED))
    with Index.open(idx, readonly=True) as ix:
        res = {Path(p.b_path).name: p for p in query(ix, q, min_similarity=0)}
    assert res["Original.java"].best == pytest.approx(ren.best, abs=1e-3)
    assert res["Original.java"].view == "code"
    c = compare(root / "Original.java", q)
    assert c.pair.best == pytest.approx(ren.best, abs=1e-3) and c.pair.view == "code"


def test_code_view_can_be_switched_off(tmp_path: Path) -> None:
    """``SimilarityParams(code_view=False)``: every pair is scored on the text view alone, the
    same in find_pairs (cached or not), query and compare, and the CLI's --no-code-view."""
    import json

    from simscan.cli import main
    from simscan.similarity import SimilarityParams

    idx, root, orig = _code_tree(tmp_path)
    off = SimilarityParams(code_view=False)
    with Index.open(idx) as ix:
        on_pairs = find_pairs(ix, min_similarity=0)
        first = find_pairs(ix, min_similarity=0, params=off)  # computed (and cached apart)
        again = find_pairs(ix, min_similarity=0, params=off)  # read from the cache
        fresh = find_pairs(ix, min_similarity=0, params=off, cache=False)
    assert first == again == fresh
    assert {p.view for p in first} == {"text"} and "code" in {p.view for p in on_pairs}
    _check_against_brute(idx, first, code_view=False)
    names = {"Original.java", "Renamed.java"}
    ren_off = next((p for p in first if {Path(p.a_path).name, Path(p.b_path).name} == names), None)
    ren_on = next(p for p in on_pairs if {Path(p.a_path).name, Path(p.b_path).name} == names)
    assert ren_off is None or ren_off.best < ren_on.best - 30
    q = tmp_path / "Renamed.java"
    q.write_text(_rename(orig, _NAMES, _RENAMED))
    with Index.open(idx, readonly=True) as ix:
        res = {Path(p.b_path).name: p for p in query(ix, q, min_similarity=0, params=off)}
    assert all(p.view == "text" for p in res.values())
    assert "Original.java" not in res or res["Original.java"].best < ren_on.best - 30
    c = compare(root / "Original.java", q, code_view=False)
    assert c.pair.view == "text" and c.pair.best < ren_on.best - 30
    # The command line says which view scored each pair, and --no-code-view switches it off.
    import contextlib
    import io

    def cli(*argv: str) -> list[dict]:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main([*argv, "--index", str(idx), "--format", "json", "-m", "0"]) == 0
        return [json.loads(line) for line in buf.getvalue().splitlines()]

    def key(r: dict) -> frozenset:
        return frozenset((Path(r["a"]).name, Path(r["b"]).name))

    on_cli = {key(r): r for r in cli("pairs")}
    off_cli = {key(r): r for r in cli("pairs", "--no-code-view")}
    assert on_cli[frozenset(names)]["view"] == "code"
    assert {r["view"] for r in off_cli.values()} == {"text"}
    assert (frozenset(names) not in off_cli
            or off_cli[frozenset(names)]["best"] < on_cli[frozenset(names)]["best"] - 30)
    members = [m for g in cli("groups") for m in g["members"] if not m["is_reference"]]
    assert all(m["view"] in ("text", "code") for m in members) and members


def test_structure_alone_does_not_pair_tiny_sources(tmp_path: Path) -> None:
    """Two tiny headers holding one struct each, with other names: alike once names are
    abstracted, but under MIN_CODE_CHARS they get no code view at all, so no pair comes from it."""
    tpl = "#ifndef {G}\n#define {G}\n\nstruct {s} {{\n" + "".join(f"\tlong {{f{k}}};\n" for k in range(6)) + "}};\n#endif\n"
    (tmp_path / "a.h").write_text(tpl.format(G="_TIMES_H", s="tms", **{f"f{k}": f"tms_{k}x" for k in range(6)}))
    (tmp_path / "b.h").write_text(tpl.format(G="_SPAN_H", s="span", **{f"f{k}": f"edge{k}" for k in range(6)}))
    fa, fb = fingerprint_file(tmp_path / "a.h"), fingerprint_file(tmp_path / "b.h")
    ca, cb = (np.union1d(f.rolling, f.anchored) for f in (fa, fb))
    ca, cb = ca[views.value_views(ca, True) == views.CODE], cb[views.value_views(cb, True) == views.CODE]
    assert ca.size == 0 and cb.size == 0
    assert compare(tmp_path / "a.h", tmp_path / "b.h").pair.best == 0
    idx = tmp_path / "i.sqlite3"
    index_tree(idx, tmp_path)
    with Index.open(idx, readonly=True) as ix:
        assert find_pairs(ix, min_similarity=0) == []


def test_compare_highlights_a_renamed_copy_in_the_original_texts(tmp_path: Path) -> None:
    orig = java_program(20, _NAMES)
    ren = _rename(orig, _NAMES, _RENAMED)
    (tmp_path / "a.java").write_text(orig)
    (tmp_path / "b.java").write_bytes(ren.replace("\n", "\r\n").encode("utf-16"))
    c = compare(tmp_path / "a.java", tmp_path / "b.java")
    assert c.text_a == orig and c.text_b == ren.replace("\n", "\r\n")
    assert c.ranges_a and len(c.ranges_a) == len(c.ranges_b)
    covered = sum(e - s for s, e in c.ranges_a)
    assert covered > 0.9 * len(orig)
    for (a0, a1), (b0, b1) in zip(c.ranges_a, c.ranges_b):
        # Each paired passage is the same code up to names (equal code units), in original offsets.
        ua = code.code_units(c.text_a[a0:a1])
        ub = code.code_units(c.text_b[b0:b1])
        assert ua.tolist() == ub.tolist()
        # At least one window of the code view's own (glued) units, as the fingerprints see them.
        assert ua.size >= DEFAULT_PARAMS.window
    # Without renaming the text view is at least as good, and its passages are the text's own.
    (tmp_path / "c.java").write_text(orig.replace("// ", "//  "))
    c2 = compare(tmp_path / "a.java", tmp_path / "c.java")
    for (a0, a1), (b0, b1) in zip(c2.ranges_a, c2.ranges_b):
        assert T.normalize(orig[a0:a1]).tolist() == T.normalize(c2.text_b[b0:b1]).tolist()


def test_tiny_sources_and_crlf_twins() -> None:
    """A skeleton of a few hundred characters gets no code view (unrelated tiny headers would
    be alike once names are abstracted); a file and its CRLF twin get the same fingerprints,
    also at the size limit."""
    from simscan.fingerprint import code as code_mod
    from simscan.fingerprint import fingerprint_bytes, fingerprint_many
    from simscan.similarity.views import has_code_view

    header = "/* SPDX */\n#ifndef _A_H\n#define _A_H\nstruct a {\n\tint x;\n\tint y;\n};\n#endif\n"
    assert code_mod.code_length(header) < code_mod.MIN_CODE_CHARS
    assert not has_code_view(fingerprint_bytes(header.encode()))
    body = "".join(f"int f{i}(int a) {{\n    return a * {i} + g(a, {i});\n}}\n" for i in range(40))
    assert has_code_view(fingerprint_bytes(body.encode()))
    # Just above the maximum without CRs, far above with them: the CRLF twin is still code.
    n = code_mod.MAX_CODE_CHARS // len(body) * len(body)
    big = (body * (code_mod.MAX_CODE_CHARS // len(body) + 1))[: n - 1]
    lf, crlf = big.encode(), big.replace("\n", "\r\n").encode()
    a, b = fingerprint_bytes(lf), fingerprint_bytes(crlf)
    assert has_code_view(a) and a.content_hash == b.content_hash
    assert np.array_equal(a.rolling, b.rolling) and np.array_equal(a.anchored, b.anchored)
    c = fingerprint_many([crlf])[0]
    assert np.array_equal(c.rolling, b.rolling) and np.array_equal(c.anchored, b.anchored)



def test_the_size_limit_counts_a_crlf_cut_between_pieces_once() -> None:
    """The text is kept for the code view while it is short enough in code_length's terms, a CR LF
    as one character -- also when a read piece ends between the CR and the LF (odd chunk sizes)."""
    from simscan.fingerprint import code as code_mod
    from simscan.fingerprint import fingerprint_bytes
    from simscan.similarity.views import has_code_view

    src = java_program(4, _NAMES)
    whole = (src * (code_mod.MAX_CODE_CHARS // len(src) + 1))
    for size, code_view in ((code_mod.MAX_CODE_CHARS, True), (code_mod.MAX_CODE_CHARS + 1, False)):
        text = whole[:size]
        assert code_mod.code_length(text) == size
        lf, crlf = text.encode(), text.replace("\n", "\r\n").encode()
        for chunk in (4097, 1 << 16):
            a = fingerprint_bytes(lf, replace(DEFAULT_PARAMS, chunk_size=chunk))
            b = fingerprint_bytes(crlf, replace(DEFAULT_PARAMS, chunk_size=chunk))
            assert has_code_view(a) == has_code_view(b) == code_view, (size, chunk)
            assert np.array_equal(a.rolling, b.rolling) and np.array_equal(a.anchored, b.anchored)


def test_compare_highlight_covers_a_final_identifier(tmp_path: Path) -> None:
    """A renamed copy whose match runs to the end of the file, which ends in an identifier: the
    highlight covers the whole name, not its first letter (a name is one unit in the code form)."""
    orig = java_program(21, _NAMES) + "int trailing_identifier_name"
    ren = _rename(orig, _NAMES, _RENAMED)
    (tmp_path / "a.java").write_text(orig)
    (tmp_path / "b.java").write_text(ren)
    c = compare(tmp_path / "a.java", tmp_path / "b.java")
    assert c.ranges_a and c.ranges_a[-1][1] == len(orig) and c.ranges_b[-1][1] == len(ren)


def test_crlf_twin_examines_the_same_sample() -> None:
    """The first brace lies inside the sample in LF terms: the CRLF twin, longer in characters,
    is still read as code (its sample is taken in LF terms too)."""
    from simscan.fingerprint import fingerprint_bytes
    from simscan.similarity.views import has_code_view

    head = "x = 1;\n" * ((code.SAMPLE_CHARS - 1000) // 7)
    body = "".join(f"int f{i}(int a) {{\n    return a * {i};\n}}\n" for i in range(30))
    text = head + body
    assert text.find("{") < code.SAMPLE_CHARS < text.replace("\n", "\r\n").find("{")
    a, b = fingerprint_bytes(text.encode()), fingerprint_bytes(text.replace("\n", "\r\n").encode())
    assert has_code_view(a) and np.array_equal(a.rolling, b.rolling) and np.array_equal(a.anchored, b.anchored)


def test_compare_code_passages_are_windows_of_the_code_view(tmp_path: Path) -> None:
    """A renamed copy with a new line after every third line: compare's passages on the code
    view are matches of the code view's own units (names glued), each at least one window long,
    not shorter stretches that only the spaced code form would match."""
    orig = java_program(22, _NAMES)
    lines = _rename(orig, _NAMES, _RENAMED).split("\n")
    edited = []
    for i, line in enumerate(lines):
        edited.append(line)
        if i % 3 == 2 and 5 < i < len(lines) - 3:
            edited.append(f'        System.out.println("{words(1000 + i, 6)}");')
    (tmp_path / "a.java").write_text(orig)
    (tmp_path / "b.java").write_text("\n".join(edited))
    c = compare(tmp_path / "a.java", tmp_path / "b.java")
    assert c.pair.view == "code" and len(c.ranges_a) >= 4
    for (a0, a1), (b0, b1) in zip(c.ranges_a, c.ranges_b):
        ua, ub = code.code_units(c.text_a[a0:a1]), code.code_units(c.text_b[b0:b1])
        assert ua.tolist() == ub.tolist() and ua.size >= DEFAULT_PARAMS.window


def test_the_code_pass_reports_its_own_progress(tmp_path: Path) -> None:
    """The pair search reports each phase to its end, the code view's pass too (the window showed
    "Scoring pairs 0 %" for the whole of both passes)."""
    idx, _root, _orig = _code_tree(tmp_path)
    seen: list[tuple[str, int, int | None]] = []
    with Index.open(idx, readonly=True) as ix:
        find_pairs(ix, min_similarity=0, cache=False, progress=lambda p: seen.append((p.phase, p.files_done, p.files_total)))
    phases = list(dict.fromkeys(ph for ph, _, _ in seen))
    assert phases == ["load", "exact", "pairs", "score", "passages", "code:pairs", "code:score", "code:passages"]
    for ph in ("load", "exact", "score", "passages", "code:score", "code:passages"):
        done, total = max((d, t) for p, d, t in seen if p == ph)
        assert total and done == total, (ph, done, total)


def test_compare_in_an_index_counts_document_frequency_in_one_pass(tmp_path: Path, monkeypatch) -> None:
    """``pair_in_index`` (compare with an index) of a renamed source: the pair ``find_pairs`` gives,
    scored on the code view, with one pass over every stored set for both views (each view made its
    own, ~2 s a million files each)."""
    from simscan.fingerprint import fingerprint_file
    from simscan.similarity.engine import pair_in_index

    idx, root, _orig = _code_tree(tmp_path)
    passes = []
    real = Index.iter_fingerprints

    def counted(self, *a, **k):  # the real reader, counted
        passes.append(1)
        return real(self, *a, **k)

    with Index.open(idx, readonly=True) as ix:
        want = {frozenset((Path(p.a_path).name, Path(p.b_path).name)): p for p in find_pairs(ix, min_similarity=0, cache=False)}
        ids = dict(zip((Path(p).name for p in ix.files().paths), ix.files().ids.tolist()))
        monkeypatch.setattr(Index, "iter_fingerprints", counted)
        got, _left = pair_in_index(ix, fingerprint_file(root / "Original.java"), str(root / "Original.java"), ids["Renamed.java"])
    assert len(passes) == 1
    p = want[frozenset(("Original.java", "Renamed.java"))]
    assert got is not None and got.view == p.view == "code"
    assert (got.resemblance, got.longest_passage) == (p.resemblance, p.longest_passage)
