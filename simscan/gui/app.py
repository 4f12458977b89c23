"""Start the window: ``simscan-gui [ROOT...] [--index PATH]`` (also ``simscan gui``).

Folders named on the command line are scanned at once, and only they: they are this session's
folder list (the remembered folders are set aside, and come back with "Restore Folders").
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import resources

from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QApplication

from simscan import __version__


def app_icon() -> QIcon:
    """The application icon, from the package (SVG, with a PNG for platforms without the SVG plugin)."""
    icon = QIcon()
    base = resources.files("simscan.gui") / "icons"
    for name in ("simscan.svg", "simscan.png"):
        res = base / name
        if res.is_file():
            pm = QPixmap()
            if pm.loadFromData(res.read_bytes()):
                icon.addPixmap(pm)
    return icon


def ensure_app(argv: Sequence[str] | None = None) -> QApplication:
    app = QApplication.instance()
    if app is None:
        app = QApplication(list(argv) if argv is not None else [sys.argv[0]])
    assert isinstance(app, QApplication)
    app.setOrganizationName("simscan")
    app.setApplicationName("simscan")
    app.setApplicationDisplayName("simscan")
    app.setApplicationVersion(__version__)
    app.setDesktopFileName("simscan")
    app.setWindowIcon(app_icon())
    install_translations(app)
    return app


def install_translations(app: QApplication) -> None:
    """Qt's own strings (standard buttons, file dialogs) in the user's language, and simscan's
    from ``simscan/gui/i18n/simscan_<locale>.qm`` when a translation has been added there."""
    from PySide6.QtCore import QLibraryInfo, QLocale, QTranslator

    if getattr(app, "_simscan_translators", None):
        return
    locale = QLocale.system()
    loaded = []
    qt = QTranslator(app)
    if qt.load(locale, "qtbase", "_", QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)):
        app.installTranslator(qt)
        loaded.append(qt)
    ours = resources.files("simscan.gui") / "i18n"
    if ours.is_dir():
        own = QTranslator(app)
        if own.load(locale, "simscan", "_", str(ours)):
            app.installTranslator(own)
            loaded.append(own)
    app._simscan_translators = loaded or [None]  # type: ignore[attr-defined]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="simscan-gui", description="The simscan window.")
    p.add_argument("roots", nargs="*", metavar="ROOT", help="folders to scan at once (instead of the remembered ones)")
    p.add_argument("--index", metavar="PATH", help="index file (default: $SIMSCAN_INDEX or the data folder)")
    return p


def no_display() -> str | None:
    """Why the window cannot open here (None: it can).  On Linux and the BSDs without a display
    server, Qt's platform plugin aborts the process (SIGABRT, exit 134) with advice to reinstall."""
    if not sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return None
    if os.environ.get("QT_QPA_PLATFORM") or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    return "there is no graphical display here (neither DISPLAY nor WAYLAND_DISPLAY is set)"


def run(roots: Sequence[str] = (), index: str | None = None) -> int:
    from simscan.gui.dialogs import install_excepthook
    from simscan.gui.mainwindow import MainWindow
    from simscan.heap import one_arena

    why = no_display()
    if why is not None:
        print(f"simscan: the window cannot open: {why}.\nRun it in a desktop session, or use the command line: "
              "`simscan scan FOLDER`, then `simscan groups`.", file=sys.stderr)
        return 1
    one_arena()  # (before Qt and the jobs start threads: ``simscan.heap``)
    app = ensure_app()
    install_excepthook()
    win = MainWindow(index_path=index, roots=roots)
    win.show()
    if roots:
        from PySide6.QtCore import QTimer

        QTimer.singleShot(0, win.start_scan)
    return int(app.exec())


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run(args.roots, args.index)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
