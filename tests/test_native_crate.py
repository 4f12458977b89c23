"""The native crate stays formatted and lint-free (`cargo fmt`, `cargo clippy`), as its own tests are
run by the README's test command (`cargo test`)."""

import shutil
import subprocess
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parent.parent / "native"

pytestmark = pytest.mark.skipif(shutil.which("cargo") is None, reason="the Rust toolchain is not installed")


def _cargo(*args: str) -> subprocess.CompletedProcess[str]:
    # stdin closed: cargo asks rustc about the target through a source read from stdin ("-").
    return subprocess.run(["cargo", *args], cwd=NATIVE, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)


def test_cargo_fmt_is_clean():
    out = _cargo("fmt", "--all", "--check")
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.slow
def test_cargo_clippy_is_clean():
    out = _cargo("clippy", "--workspace", "--all-targets", "--release", "--", "-D", "warnings")
    assert out.returncode == 0, out.stdout + out.stderr

