"""The desktop window (PySide6).  The only package of simscan that imports Qt.

Modules: ``app`` (QApplication, icon, translations, entry point) → ``mainwindow`` (widgets,
actions, settings) → ``models`` (immutable result snapshots behind Qt item models), ``jobs``
(the core calls: scan, load, regroup, compare, trash) run by ``workers`` (QRunnable jobs off the
GUI thread), ``preview`` (side-by-side compare), ``chart`` (QPainter pictures), ``export``
(CSV/JSON/HTML), ``dialogs`` (confirmation, error hook), ``widgets`` (delegate, message bar),
``compat`` (work-arounds for binding bugs), ``screenshot`` (the README picture).

Everything slow — scanning, reading the index, grouping, comparing, trashing — runs in a
worker; the GUI thread only swaps in finished snapshots.
"""

from simscan.gui import compat as _compat

# Before anything emits a signal: see compat (PySide6 6.12 drops a reference per emit()).
_compat.install()
