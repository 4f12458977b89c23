"""Sub-commands (being built; see the open issues)."""

import argparse


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    pass
