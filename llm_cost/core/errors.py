"""The errors a user's input can cause; the command line turns each into one line and exit code 2."""

from __future__ import annotations

__all__ = ["InputError", "SpecError"]


class InputError(ValueError):
    """A user's input (a flag value, a file, a name) is not valid; the message says what is."""


class SpecError(InputError):
    """A spec could not be found, read or validated; the message says why and what is valid."""
