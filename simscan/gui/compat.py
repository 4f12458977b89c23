"""Work-arounds for reference-count bugs of the Qt binding, applied when they are detected.

PySide6 6.12.0 on CPython 3.11 (where ``True``, ``False`` and ``None`` are not yet immortal):

* ``SignalInstance.emit()`` and ``.disconnect()`` return ``True`` / ``False`` without taking a
  reference, so every call drops one reference to that bool; after a few thousand signals
  (progress reports, dataChanged, …) the interpreter aborts with "bool_dealloc: deallocating
  True or False".  Measured: ``sys.getrefcount(True)`` falls by exactly 1 per ``emit()``.
* ``None`` returned by a Python ``data()`` override loses a reference each time C++ converts
  it to an invalid QVariant (handled where it happens: :func:`simscan.gui.results_model.no_data`).
* Every call of a *void* Qt method from Python (``update()``, ``setText()``,
  ``processEvents()`` …) drops one reference to the ``None`` it returns: measured 1,000 calls of
  ``QWidget.update()``, 1,000 references fewer.  A long session (or a benchmark waiting in a
  ``processEvents()`` loop) ends with "none_dealloc: deallocating None".  :func:`install` then
  gives ``None`` 2**40 references at once -- what CPython 3.12 does by making it immortal.

:func:`install` probes the bug on a private signal and only then wraps the two methods to
give the reference back; with a fixed binding, or on CPython >= 3.12 (immortal singletons),
it changes nothing.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

from PySide6.QtCore import QObject, Signal, SignalInstance

_Py_IncRef = ctypes.pythonapi.Py_IncRef
_Py_IncRef.argtypes = [ctypes.py_object]
_Py_IncRef.restype = None

installed = False


class _Probe(QObject):
    ping = Signal()


def emit_steals_bool_reference() -> bool:
    """True when ``emit()`` drops a reference to the bool it returns (the 6.12.0 bug)."""
    if sys.version_info >= (3, 12):
        return False  # immortal bools: the bug is harmless
    probe = _Probe()
    before = sys.getrefcount(True)
    for _ in range(8):
        probe.ping.emit()
    return sys.getrefcount(True) < before


def void_call_steals_none_reference() -> bool:
    """True when a void Qt method called from Python drops a reference to ``None`` (6.12.0)."""
    if sys.version_info >= (3, 12):
        return False  # immortal None: the bug is harmless
    probe = _Probe()
    before = sys.getrefcount(None)
    for _ in range(8):
        probe.setObjectName("probe")
    return sys.getrefcount(None) < before


#: References given to ``None`` when void calls drop them: one a call, 2**40 calls to use them up.
NONE_RESERVE = 1 << 40
_none_reserved = False


def reserve_none_references() -> bool:
    """Give ``None`` :data:`NONE_RESERVE` references if void calls drop them (once per process);
    returns whether it did."""
    global _none_reserved
    if _none_reserved or not void_call_steals_none_reference():
        return _none_reserved
    ctypes.c_ssize_t.from_address(id(None)).value += NONE_RESERVE  # ob_refcnt: the object's first field
    _none_reserved = True
    return True


def install() -> bool:
    """Give ``None`` references to spare (:func:`reserve_none_references`), and wrap
    ``SignalInstance.emit`` / ``disconnect`` if (and only if) their bug is present.  Returns
    whether the wrappers are installed.  Idempotent."""
    global installed
    reserve_none_references()
    if installed or not emit_steals_bool_reference():
        return installed
    emit = SignalInstance.emit
    disconnect = SignalInstance.disconnect

    def fixed_emit(self: SignalInstance, *args: Any) -> Any:
        result = emit(self, *args)
        _Py_IncRef(result)  # the reference the binding forgot to take
        return result

    def fixed_disconnect(self: SignalInstance, *args: Any) -> Any:
        result = disconnect(self, *args)
        if isinstance(result, bool):
            _Py_IncRef(result)
        return result

    SignalInstance.emit = fixed_emit  # type: ignore[method-assign]
    SignalInstance.disconnect = fixed_disconnect  # type: ignore[method-assign]
    installed = True
    return True
