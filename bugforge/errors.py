"""One error type for everything a user can get wrong: it says what was wrong and what to do."""


class BugforgeError(Exception):
    """A user-facing failure. `what` says what went wrong, `fix` what to do about it."""

    def __init__(self, what: str, fix: str = ""):
        super().__init__(what)
        self.what = what
        self.fix = fix

    def line(self) -> str:
        """The single line the CLI prints."""
        return f"error: {self.what}" + (f" — {self.fix}" if self.fix else "")
