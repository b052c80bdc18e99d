"""The errors the command line turns into one line on stderr: a user's input (exit code 2) or an
output that cannot be written (exit code 1)."""

from __future__ import annotations

__all__ = ["InputError", "SpecError", "OutputError"]


class InputError(ValueError):
    """A user's input (a flag value, a file, a name) is not valid; the message says what is."""


class SpecError(InputError):
    """A spec could not be found, read or validated; the message says why and what is valid."""


class OutputError(Exception):
    """A result could not be written (a closed or full stdout, a read-only or full file system):
    the environment's failure, not the input's. ``broken_pipe`` is set when the reader went away
    (``llm-cost ... | head``), which is reported quietly."""

    def __init__(self, message: str, broken_pipe: bool = False) -> None:
        super().__init__(message)
        self.broken_pipe = broken_pipe
