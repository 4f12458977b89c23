"""The dependency rule: the core never imports Qt."""

import pkgutil
import subprocess
import sys

import simscan


def core_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(simscan.__path__, "simscan."):
        if info.name == "simscan.gui" or info.name.startswith("simscan.gui."):
            continue
        names.append(info.name)
    return names


def test_core_has_modules():
    mods = core_modules()
    assert "simscan.fingerprint" in mods and "simscan.cli" in mods


def test_core_never_imports_qt():
    mods = core_modules()
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}:\n"
        "    if m.endswith('__main__'): continue\n"
        "    importlib.import_module(m)\n"
        "import simscan.cli; simscan.cli.build_parser()\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"core imported Qt: {out.stdout}"
