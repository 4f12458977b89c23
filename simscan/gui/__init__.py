"""The desktop window (PySide6).  The only package of simscan that imports Qt.

Modules: ``app`` (QApplication, icon, translations, entry point) → ``mainwindow`` (construction,
settings, scanning, loading, the summary) and its parts ``window_folders`` (the folders panel),
``window_preview`` (what the preview compares), ``window_actions`` (marks, keep rules, trash,
plans) → ``results_model`` (the Qt tree model and proxy) over ``snapshot`` (immutable results as
columns, copy sets nested in groups), ``folders`` (the folder list model), ``jobs`` (the core
calls: scan, load, regroup, compare, trash) run by ``workers`` (QRunnable jobs off the GUI
thread), ``preview`` (side-by-side compare, differences), ``chart`` (QPainter pictures),
``export`` (CSV/JSON/HTML), ``dialogs`` (confirmation, keep rules, lists, error hook),
``widgets`` (delegate, message bar), ``compat`` (work-arounds for binding bugs), ``screenshot``
(the README picture).

Everything slow — scanning, reading the index, grouping, comparing, trashing — runs in a
worker; the GUI thread only swaps in finished snapshots.
"""

from simscan.gui import compat as _compat

# Before anything emits a signal: see compat (PySide6 6.12 drops a reference per emit()).
_compat.install()
