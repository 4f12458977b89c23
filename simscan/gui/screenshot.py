"""Screenshot of the window at work: ``python -m simscan.gui.screenshot OUT.png [ROOT] [--dark] [--pairs]``.

Starts the GUI with a temporary index and temporary settings, scans ROOT (default: a demo tree
made from the evaluation corpus next to the repository, with nested copies: the source article
with a byte copy and a UTF-16 twin, students' answers, and one answer handed in three times in
other folders), selects an edited text so the preview shows its matching passages highlighted,
and saves the window as a PNG.  ``--pairs``: the Pairs tab instead, its first pair that is not a
copy selected (the preview on its longest passage).  Run it under a real X server for a faithful
picture::

    Xvfb :99 -screen 0 1600x1000x24 &
    DISPLAY=:99 QT_QPA_PLATFORM=xcb python3 -m simscan.gui.screenshot resources/screenshot.png
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings, QTimer

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "evalcorpus" / "corpus"


def build_demo_tree(root: Path, corpus: Path = CORPUS) -> Path:
    """A small tree of a teacher's folders with copies nested in similarity groups (see the module's
    doc), from the corpus's short answers (Clough & Stevenson)."""
    src = corpus / "clough"
    course = root / "course"
    (course / "backup").mkdir(parents=True, exist_ok=True)
    (course / "old").mkdir(exist_ok=True)
    for f in sorted(src.glob("*_task*.txt")):
        (course / f.name).write_bytes(f.read_bytes())
    article = (src / "orig_taska.txt").read_bytes()
    (course / "backup" / "orig_taska.txt").write_bytes(article)
    (course / "old" / "orig_taska-utf16.txt").write_bytes(article.decode("utf-8", "replace").encode("utf-16"))
    answer = (src / "g0pE_taska.txt").read_bytes()  # (a lightly revised copy of the article)
    for year in ("2024", "2025"):
        d = root / "submissions" / year
        d.mkdir(parents=True, exist_ok=True)
        (d / "g0pE_taska.txt").write_bytes(answer)
    return root


def pick_member(win) -> int:
    """A member worth showing: a text edited from its reference, neither a copy nor unrelated,
    short enough that several highlighted passages are on screen."""
    s = win.model.snapshot
    best, best_score = -1, float("-inf")
    for m in range(s.n_members):
        if s.l_is_ref[m] or not s.is_text[m]:
            continue
        sim = s.l_sim[m]
        if s.l_kind[m] not in (2, 3) or not 45.0 <= sim <= 92.0:
            continue
        ref = s.l_start[s.l_group[m]]
        if not (1_000 <= s.l_size[m] <= 40_000 and 1_000 <= s.l_size[ref] <= 40_000):
            continue
        # Partly matching (highlights and gaps both visible), prose (.txt), short (a few
        # passages on one screen).
        score = (
            -abs(sim - 65.0)
            - (0 if s.paths[m].endswith(".txt") else 10)
            - abs(s.l_size[m] - 3_000) / 1_000
            + (30 if s.l_g_extra[s.l_group[m]] else 0)  # a group with copies nested in it: shown too
        )
        if score > best_score:
            best, best_score = m, score
    return best


def apply_dark_palette(app) -> None:
    """Stand-in for a desktop in dark mode (Fusion with a dark palette), to check that nothing
    in the window hard-codes light colours.  The window itself never sets a palette."""
    from PySide6.QtGui import QColor, QPalette

    app.setStyle("Fusion")
    pal = QPalette()
    role = QPalette.ColorRole
    for r, c in (
        (role.Window, "#2b2b2b"), (role.WindowText, "#e6e6e6"), (role.Base, "#1e1e1e"),
        (role.AlternateBase, "#262626"), (role.Text, "#e6e6e6"), (role.Button, "#353535"),
        (role.ButtonText, "#e6e6e6"), (role.Highlight, "#3d7bd9"), (role.HighlightedText, "#ffffff"),
        (role.ToolTipBase, "#353535"), (role.ToolTipText, "#e6e6e6"), (role.PlaceholderText, "#9a9a9a"),
        (role.Mid, "#4a4a4a"), (role.Dark, "#1a1a1a"), (role.Light, "#505050"),
    ):
        pal.setColor(r, QColor(c))
    pal.setColor(QPalette.ColorGroup.Disabled, role.WindowText, QColor("#7a7a7a"))
    pal.setColor(QPalette.ColorGroup.Disabled, role.Text, QColor("#7a7a7a"))
    pal.setColor(QPalette.ColorGroup.Disabled, role.ButtonText, QColor("#7a7a7a"))
    app.setPalette(pal)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    dark = "--dark" in argv
    pairs = "--pairs" in argv
    argv = [a for a in argv if a not in ("--dark", "--pairs")]
    if not argv or argv[0] in ("-h", "--help") or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    out = Path(argv[0]).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="simscan-shot-"))
    root = Path(argv[1]).resolve() if len(argv) > 1 else build_demo_tree(tmp / "demo")
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp / "settings"))

    from simscan.gui.app import ensure_app
    from simscan.gui.mainwindow import MainWindow

    app = ensure_app()
    if dark:
        apply_dark_palette(app)
    win = MainWindow(index_path=tmp / "index.sqlite3", roots=[str(root)], autoload=False)
    win.resize(1560, 960)
    win.threshold_slider.setValue(30)
    win.show()
    status = {"code": 1}

    def fail(text: str) -> None:
        print(f"screenshot: {text}", file=sys.stderr)
        app.quit()

    def on_loaded() -> None:
        (win.pairsLoaded if pairs else win.resultsLoaded).disconnect(on_loaded)
        if pairs:
            win.results_tabs.setCurrentIndex(1)
            model = win.pairs_model
            row = next((r for r in range(model.shown_count) if not model.rows.is_copy(model.row_at(r))), -1)
            if row < 0:
                fail("no pair to show")
                return
            win.select_pair_row(row)
            win.pairs_view.setFocus()
            return
        m = pick_member(win)
        if m < 0:
            fail("no edited text to show")
            return
        win.view.collapseAll()
        win.select_member(m)
        win.view.setFocus()

    def on_preview() -> None:
        win.previewShown.disconnect(on_preview)
        # Let the layout and the highlight settle, then grab (the preview scrolls itself to the first match).
        QTimer.singleShot(700, save)

    def save() -> None:
        out.parent.mkdir(parents=True, exist_ok=True)
        if win.grab().save(str(out)):
            status["code"] = 0
            print(f"screenshot: saved {out}")
        else:
            print(f"screenshot: could not write {out}", file=sys.stderr)
        win.close()
        app.quit()

    (win.pairsLoaded if pairs else win.resultsLoaded).connect(on_loaded)
    win.previewShown.connect(on_preview)
    win.errorShown.connect(lambda text: fail(text))
    QTimer.singleShot(0, win.start_scan)
    QTimer.singleShot(300_000, lambda: fail("timed out"))
    app.exec()
    return status["code"]


if __name__ == "__main__":
    sys.exit(main())
