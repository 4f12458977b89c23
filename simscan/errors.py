"""Errors that carry a message for a person.  Front ends show ``str(err)``, never a traceback."""


class SimscanError(Exception):
    """Base of every error simscan reports to the user.  ``hint`` says what to do about it."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        msg = super().__str__()
        return f"{msg}\n{self.hint}" if self.hint else msg
