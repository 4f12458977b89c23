"""The desktop window (PySide6).  The only package of simscan that imports Qt.

Layers: ``app`` (QApplication, icon, error hook) → ``mainwindow`` (widgets, actions) → ``models``
(immutable result snapshots behind Qt item models), ``workers`` (core jobs off the GUI thread),
``preview`` (side-by-side compare), ``chart`` (QPainter histogram), ``export`` (CSV/JSON/HTML).
Everything slow — scanning, reading the index, grouping, comparing, trashing — runs in a worker;
the GUI thread only swaps in finished snapshots.
"""

from simscan.gui import compat as _compat

# Before anything emits a signal: see compat (PySide6 6.12 drops a reference per emit()).
_compat.install()
