"""The window says (a banner above the list) when the pair search's budget lowered the common cut-off (``PairSet.cutoff``): text
held by more files than the lowered cut-off counted nowhere, so files with many versions may be missing
from what it shows.  A real scan through the window, with a budget so small that the cut-off falls."""

from __future__ import annotations

from dataclasses import replace

from helpers import scan

from simscan.gui import jobs


def test_the_window_says_when_the_cut_off_was_lowered(qtbot, window, corpus, monkeypatch) -> None:
    win = window(roots=[str(corpus)])
    scan(qtbot, win)
    assert win.results is not None and win.results.pair_set.cutoff is None
    assert win.message.isHidden()

    real = jobs.similarity_params
    monkeypatch.setattr(jobs, "similarity_params", lambda *a, **k: replace(real(*a, **k), pair_budget=2))
    scan(qtbot, win)
    cutoff = win.results.pair_set.cutoff
    assert cutoff is not None and cutoff[0] < cutoff[1]
    # A banner above the list, gone once the results come from a search at the usual cut-off.
    text = win.message.text.text()
    assert not win.message.isHidden() and "incomplete" in text and f"more than {cutoff[0]:,} files" in text, text
    monkeypatch.setattr(jobs, "similarity_params", real)
    scan(qtbot, win)
    assert win.results.pair_set.cutoff is None and win.message.isHidden()


def test_the_window_says_when_many_files_are_mostly_common_text(qtbot, window, tmp_path, monkeypatch) -> None:
    """60 versions of one text (1 % of their words changed) hold text that more than 50 files (the cut-off) hold:
    a banner says so, and goes once they are no longer so many (20 moved out of the folder: 40 left)."""
    import random
    import shutil

    from similarity_support import words

    root = tmp_path / "letters"
    root.mkdir()
    base = words(90, 500).split()
    rng = random.Random(5)
    for k in range(60):
        (root / f"v{k:03d}.txt").write_text(" ".join(rng.choice(base) + "x" if rng.random() < 0.01 else w
                                                     for w in base))
    win = window(roots=[str(root)])
    scan(qtbot, win)
    crowded = win.results.pair_set.crowded
    assert crowded is not None and crowded[0] > 50 and crowded[1] == 50
    text = win.message.text.text()
    assert not win.message.isHidden() and f"{crowded[0]:,} files are mostly text" in text
    assert "Text Held by Many Files" in text
    assert len(win.results.snapshot.g_kind) > 1  # (the versions are paired only by their edits)
    # View > Text Held by Many Files… at 100: all their text counts, one group of 60, no banner; remembered.
    win.set_common_cutoff(100)
    qtbot.waitUntil(lambda: not win.runner.busy("load"), timeout=30_000)
    assert win.results.pair_set.crowded is None and win.message.isHidden()
    assert len(win.results.snapshot.g_kind) == 1 and win.results.snapshot.g_start[1] == 60
    assert win.results.pair_set.key and '"common_min_df": 100' in win.results.pair_set.key
    assert int(win.settings.value("results/common_cutoff")) == 100
    win.set_common_cutoff(50)
    qtbot.waitUntil(lambda: not win.runner.busy("load"), timeout=30_000)
    assert win.results.pair_set.crowded == crowded
    for k in range(20):
        shutil.move(root / f"v{k:03d}.txt", tmp_path / f"v{k:03d}.txt")
    scan(qtbot, win)
    assert win.results.pair_set.crowded is None and win.message.isHidden()


def test_a_remembered_cut_off_that_is_no_number_of_files_is_the_default(window) -> None:
    """A settings file holding no usable cut-off (edited by hand, another version) gives the default, 50: it
    gave 2 for any text (Qt reads it as 0), so text held by more than 2 files counted nowhere, unannounced."""
    from simscan.gui.mainwindow import make_settings

    for stored, want in (("abc", 50), ("1", 50), ("99999999999999999999", 50), ("5000000", 50), ("120", 120)):
        s = make_settings()
        s.setValue("results/common_cutoff", stored)
        s.sync()
        assert window().common_cutoff == want, stored
