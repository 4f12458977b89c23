"""simscan: find files with similar content.

Layers (see ARCHITECTURE.md): ``model``/``progress`` <- ``fingerprint``/``index`` <-
``scanner``/``similarity`` <- ``cli``/``gui``.  Only ``simscan.gui`` imports Qt.
"""

__version__ = "0.1.0"
