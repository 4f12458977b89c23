"""The README opens with the two commands a fresh machine needs; CI runs the second verbatim."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _opening_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_readme_opens_with_two_commands():
    head = (ROOT / "README.md").read_text(encoding="utf-8").split("```sh\n", 1)[0]
    assert [line for line in head.splitlines() if line.strip()] == ["# simscan"]
    install_and_run, install_and_test = _opening_commands()
    assert "simscan scan" in install_and_run
    assert "-m pytest" in install_and_test and "cargo test" in install_and_test  # Python's and the crate's tests


def test_ci_runs_the_readme_test_command_verbatim():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line for line in script if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert commands == [_opening_commands()[1]]
