"""Exports through the window: valid CSV / JSON / HTML, spreadsheet-safe and escaped."""

from __future__ import annotations

import csv
import json
import os
from html.parser import HTMLParser

import pytest

from simscan.gui.export import neutralise
from simscan.gui.mainwindow import MainWindow
from tests.gui.conftest import mark_copies


@pytest.mark.parametrize(
    "cell, expected",
    [("=1+2", "'=1+2"), ("+1", "'+1"), ("-2", "'-2"), ("@SUM(A1)", "'@SUM(A1)"), ("\t=x", "'\t=x"),
     ("/home/a=b", "/home/a=b"), ("plain", "plain"), (12, 12), (None, None)],
)
def test_neutralise(cell, expected):
    assert neutralise(cell) == expected


@pytest.fixture
def scanned(qtbot, tmp_path):
    """A group whose file names are hostile to spreadsheets and HTML."""
    root = tmp_path / "odd"
    root.mkdir()
    text = ("The same paragraph about rivers and mountains, repeated so it is long enough. " * 40).encode()
    names = ["=HYPERLINK(evil).txt", "<img src=x onerror=alert(1)>.txt", "a & b \"quoted\".txt", "-minus.txt"]
    for n in names:
        (root / n).write_bytes(text)
    win = MainWindow(index_path=tmp_path / "index.sqlite3", roots=[str(root)], autoload=False)
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.resultsLoaded, timeout=30_000):
        win.start_scan()
    assert win.model.snapshot.n_groups == 1
    mark_copies(win.model)
    return win, root, names


def test_csv_export(scanned, tmp_path):
    win, _root, names = scanned
    out = tmp_path / "r.csv"
    assert win.export(str(out)) == 4
    with open(out, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {os.path.basename(r["path"]) for r in rows} == set(names)
    assert sum(r["role"] == "reference" for r in rows) == 1
    assert sum(r["marked"] == "yes" for r in rows) == 3
    assert all(float(r["similarity"]) == 100.0 for r in rows)
    assert [r["view"] for r in rows if r["role"] == "member"] == ["text"] * 3  # copies: their text
    assert [r["view"] for r in rows if r["role"] == "reference"] == [""]
    for r in rows:
        for v in r.values():
            assert not v.startswith(("=", "+", "-", "@")), v


def test_json_export(scanned, tmp_path):
    win, root, names = scanned
    out = tmp_path / "r.json"
    win.export(str(out))
    doc = json.loads(out.read_text())
    (g,) = doc["groups"]
    assert g["kind"] == "exact" and len(g["members"]) == 4
    assert {os.path.basename(m["path"]) for m in g["members"]} == set(names)
    assert g["reclaimable_bytes"] == 3 * (root / names[0]).stat().st_size
    assert doc["threshold"] == win.threshold


def test_html_export_is_escaped(scanned, tmp_path):
    win, _root, _names = scanned
    out = tmp_path / "r.html"
    win.export(str(out))
    page = out.read_text()
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;.txt" in page
    assert "a &amp; b &quot;quoted&quot;" in page

    cells: list[str] = []

    class P(HTMLParser):
        def handle_data(self, data: str) -> None:
            cells.append(data)

    P().feed(page)
    assert any(c.endswith("<img src=x onerror=alert(1)>.txt") for c in cells)  # round-trips as text


def test_export_respects_the_filter_and_reports_errors(scanned, tmp_path):
    win, _root, _names = scanned
    win.search_edit.setText("no-match")
    win._apply_filters()
    out = tmp_path / "empty.csv"
    assert win.export(str(out)) == 0
    assert out.read_text(encoding="utf-8-sig").splitlines() == [
        "group,group_kind,role,path,similarity,kind,copies,size,modified,encoding,marked,view,longest_passage,"
        + "shared_chars"
    ]
    assert win.export(str(tmp_path / "no-such-dir" / "x.csv")) == 0
    assert win.message.isVisible() and "Could not write" in win.message.text.text()


def test_export_writes_what_the_show_filter_shows(qtbot, corpus, tmp_path):
    """Show: Exact copies, then Export: the file holds the rows on screen (the reference and its
    copies), not the edited version and the excerpt the filter hides; JSON and HTML say which filter
    was on, and the numbers count what was exported.  (The export used to write every member of
    each shown group, so a 'copies only' list came out with the edited versions in it.)"""
    win = MainWindow(index_path=tmp_path / "index.sqlite3", roots=[str(corpus)], autoload=False)
    qtbot.addWidget(win)
    win.show()
    win.threshold_slider.setValue(30)
    with qtbot.waitSignal(win.resultsLoaded, timeout=30_000):
        win.start_scan()
    win.kind_combo.setCurrentIndex(win.kind_combo.findData("exact"))
    shown = {"original.txt", "copy.txt", "utf16.txt"}
    assert "Shown: 1 of 1 group · 3 of 5 files" in win.summary_label.text()

    assert win.export(str(tmp_path / "r.csv")) == 3
    with open(tmp_path / "r.csv", encoding="utf-8-sig", newline="") as f:
        assert {os.path.basename(r["path"]) for r in csv.DictReader(f)} == shown
    assert "as shown (Show: Exact copies)" in win.status_label.text()

    win.export(str(tmp_path / "r.json"))
    doc = json.loads((tmp_path / "r.json").read_text())
    (g,) = doc["groups"]
    assert {os.path.basename(m["path"]) for m in g["members"]} == shown
    assert g["reclaimable_bytes"] == sum((corpus / n).stat().st_size for n in ("copy.txt", "utf16.txt"))
    assert doc["shown"] == {"show": "Exact copies", "search": ""}

    win.export(str(tmp_path / "r.html"))
    page = (tmp_path / "r.html").read_text()
    assert "excerpt.txt" not in page and "edited.txt" not in page and "Show: Exact copies" in page

    # Everything shown again: everything exported, and no filter named.
    win.kind_combo.setCurrentIndex(win.kind_combo.findData("all"))
    assert win.export(str(tmp_path / "all.json")) == 1
    doc = json.loads((tmp_path / "all.json").read_text())
    assert len(doc["groups"][0]["members"]) == 5 and doc["shown"] == {"show": "", "search": ""}
