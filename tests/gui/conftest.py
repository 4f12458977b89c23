"""GUI test fixtures: offscreen Qt, settings and trash in tmp_path, a real corpus on disk, and a
guard that fails any test leaving a worker job running."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6.QtWidgets")

from PySide6.QtCore import QSettings

from simscan.gui import workers


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Settings, data folder (trash) and default index all under tmp_path."""
    settings = tmp_path / "settings"
    data = tmp_path / "xdg-data"
    data.mkdir()
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(settings))
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.setenv("SIMSCAN_INDEX", str(tmp_path / "default-index.sqlite3"))
    yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item):
    """Marks a test left go before pytest-qt closes its windows (its teardown wrapper runs inside this
    one): a window with marks asks before it closes, a modal dialog no one would answer
    (test_actions' quit test answers it)."""
    from PySide6.QtWidgets import QApplication

    from simscan.gui.mainwindow import MainWindow

    for w in QApplication.topLevelWidgets():
        if isinstance(w, MainWindow):
            w.model.clear_marks()
    return (yield)


@pytest.fixture(autouse=True)
def no_jobs_left():
    """Fail a test that leaves a QThreadPool job running (after its widgets were closed)."""
    yield
    left = workers.running_jobs()
    busy = [p for p in workers.pools() if p.activeThreadCount() > 0]
    # Let them finish so one leak does not cascade into the next tests, then fail.
    for p in workers.pools():
        p.waitForDone(10_000)
    assert left == 0, f"{left} worker job(s) still running after the test"
    assert not busy, f"{len(busy)} thread pool(s) still busy after the test"


WORDS = None


def _vocabulary(rng: np.random.Generator, n: int = 800) -> list[str]:
    letters = np.array(list("etaoinshrdlucmfwypvbgkjqxz"))
    p = np.array([12.7, 9.1, 8.2, 7.5, 7.0, 6.7, 6.3, 6.1, 6.0, 4.3, 4.0, 2.8, 2.8, 2.4, 2.2, 2.4, 2.0, 2.0, 1.0,
                  1.5, 2.0, 0.8, 0.2, 0.1, 0.2, 0.1])
    p = p / p.sum()
    return ["".join(rng.choice(letters, size=int(rng.integers(2, 10)), p=p)) for _ in range(n)]


def prose(rng: np.random.Generator, words: int) -> str:
    """Seeded pseudo-English: sentences of random words from a fixed vocabulary."""
    vocab = _vocabulary(np.random.default_rng(12345))
    out = []
    sentence: list[str] = []
    for w in rng.choice(vocab, size=words):
        sentence.append(str(w))
        if len(sentence) >= int(rng.integers(6, 16)):
            s = " ".join(sentence)
            out.append(s[0].upper() + s[1:] + ".")
            sentence = []
    if sentence:
        out.append(" ".join(sentence) + ".")
    lines, line = [], ""
    for s in out:
        if len(line) + len(s) > 70:
            lines.append(line)
            line = s
        else:
            line = f"{line} {s}".strip()
    lines.append(line)
    return "\n".join(lines) + "\n"


def edit(rng: np.random.Generator, text: str, fraction: float) -> str:
    """Replace about ``fraction`` of the lines with new prose (an edited version)."""
    lines = text.splitlines()
    k = max(1, int(len(lines) * fraction))
    for i in rng.choice(len(lines), size=k, replace=False):
        lines[int(i)] = prose(rng, 12).strip()
    return "\n".join(lines) + "\n"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """docs/: original.txt; copy.txt (same bytes); utf16.txt (same text, UTF-16); edited.txt
    (~15% of lines rewritten); excerpt.txt (the middle third); other.txt (unrelated);
    refs/: nothing yet.  Modification times make original.txt the oldest."""
    rng = np.random.default_rng(7)
    root = tmp_path / "docs"
    root.mkdir()
    original = prose(rng, 900)
    files = {
        "original.txt": original.encode(),
        "copy.txt": original.encode(),
        "utf16.txt": original.encode("utf-16"),
        "edited.txt": edit(rng, original, 0.15).encode(),
        "excerpt.txt": "\n".join(original.splitlines()[30:60]).encode() + b"\n",
        "other.txt": prose(np.random.default_rng(99), 900).encode(),
    }
    t0 = 1_600_000_000
    for i, (name, data) in enumerate(files.items()):
        p = root / name
        p.write_bytes(data)
        os.utime(p, (t0 + i * 100, t0 + i * 100))
    return root


def mark_copies(model) -> None:
    """Mark every member ``copies_to_mark`` names, as the scan classified it (unlike Ctrl+M, no
    "content" copy is read first)."""
    model.set_marked([model.snapshot.l_file_id[m] for m in model.copies_to_mark()], True)


@pytest.fixture
def window(qtbot, tmp_path: Path):
    def make(**kw):
        kw.setdefault("index_path", tmp_path / "index.sqlite3")
        from simscan.gui.mainwindow import MainWindow

        win = MainWindow(**kw)
        qtbot.addWidget(win)
        win.show()
        return win

    return make
