"""The ``simscan cluster`` commands without the cluster extra: they say what to install, and the
rest of simscan does not need it.  (Runs whether or not Dask is installed: the import of Dask
and PyArrow is blocked in a child process.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BLOCK = (
    "import sys\n"
    "class Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ('dask', 'distributed', 'pyarrow'):\n"
    "            raise ImportError(f'No module named {name!r}', name=name)\n"
    "sys.meta_path.insert(0, Block())\n"
    "from simscan.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def simscan_without_dask(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCK, *args], capture_output=True, text=True, timeout=120,
                          check=False)


def test_cluster_commands_say_what_to_install(tmp_path: Path) -> None:
    for args in (("cluster", "pairs", "--store", str(tmp_path)), ("cluster", "scan", str(tmp_path), "--store",
                                                                   str(tmp_path / "s"))):
        r = simscan_without_dask(*args)
        assert r.returncode == 1, r.stderr
        assert "need dask[distributed] and pyarrow" in r.stderr
        assert 'pip install "simscan[cluster]"' in r.stderr
        assert "Traceback" not in r.stderr
    assert not (tmp_path / "s").exists()


def test_simscan_works_without_the_extra(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("the same words, again and again. " * 40)
    (tmp_path / "b.txt").write_text("the same words, again and again. " * 40)
    idx = str(tmp_path / "i.sqlite3")
    assert simscan_without_dask("scan", str(tmp_path), "--index", idx, "--quiet").returncode == 0
    r = simscan_without_dask("pairs", "--index", idx)
    assert r.returncode == 0 and "exact" in r.stdout
    r = simscan_without_dask("cluster", "--help")
    assert r.returncode == 0 and "dask scheduler" in r.stdout
