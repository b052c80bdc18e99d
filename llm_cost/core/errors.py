"""The errors the command line turns into one line on stderr: a user's input (exit code 2) or an
output that cannot be written (exit code 1).

Below the command line an error names what the Python caller gave: an API argument
(``output_tokens``), a spec field (``num_key_value_heads``), a file. It never names a flag. An
:class:`InputError` lists in ``fields`` the argument names its message uses; the command line
writes each as its flag (``output_tokens`` as ``--output``) through its one table,
:data:`llm_cost.cli.flags.FLAGS`, so a Python caller reads "output_tokens: at least 2 tokens" and
a shell user "--output: at least 2 tokens".
"""

from __future__ import annotations

from llm_cost.core.limits import MAX_ECHO

__all__ = ["InputError", "SpecError", "OutputError", "cut_long_values", "input_error_of", "INPUT_ERRNOS"]


def cut_long_values(message: str) -> str:
    """``message`` with each run of more than :data:`~llm_cost.core.limits.MAX_ECHO` characters
    without a space (a value echoed back: 5,000 digits, a 100,000-character name, a long path)
    cut in the middle, its length given: a refusal stays one readable line."""
    if len(message) <= MAX_ECHO or max(map(len, message.split()), default=0) <= MAX_ECHO:
        return message  # the common case, without the regular expression module's work
    import re

    def cut(m: re.Match[str]) -> str:  # the quotes and punctuation around a value are not counted in it
        text = m.group(0)
        start, end = len(text) - len(text.lstrip("'\"(")), len(text.rstrip("'\"),;:."))
        value, half = text[start:end], (MAX_ECHO - 3 - start - (len(text) - end)) // 2  # the cut run fits
        return f"{text[:start]}{value[:half]}...{value[-half:]}{text[end:]} ({len(value):,} characters)"

    return re.sub(rf"\S{{{MAX_ECHO + 1},}}", cut, message)


class InputError(ValueError):
    """A user's input (an argument, a file, a name) is not valid; the message says what is and
    what would be, each value it echoes cut to :data:`~llm_cost.core.limits.MAX_ECHO` characters
    (:func:`cut_long_values`). ``fields``: the argument names the message mentions, as words of it.
    ``advice``, when given, is what would work, printed after ``message`` and a semicolon;
    ``reason`` is the message without it, for a caller that gives its own advice instead."""

    def __init__(self, message: str, *, fields: tuple[str, ...] = (), advice: str = "") -> None:
        super().__init__(cut_long_values(f"{message}; {advice}" if advice else str(message)))
        self.fields = fields
        self.reason = cut_long_values(str(message))


class SpecError(InputError):
    """A spec could not be found, read or validated; the message says why and what is valid."""


class OutputError(Exception):
    """A result could not be written (a closed or full stdout, a read-only or full file system):
    the environment's failure, not the input's. ``broken_pipe`` is set when the reader went away
    (``llm-cost ... | head``), which is reported quietly."""

    def __init__(self, message: str, broken_pipe: bool = False) -> None:
        super().__init__(message)
        self.broken_pipe = broken_pipe


#: errno names of a path the user gave that the system cannot use (a refusal of the input); other
#: OSErrors are the environment's (a full disk, an I/O error).
INPUT_ERRNOS = frozenset(
    {"ENAMETOOLONG", "ENOENT", "ENOTDIR", "EISDIR", "EACCES", "EPERM", "ELOOP", "EINVAL", "EEXIST"}
)


def input_error_of(exc: BaseException) -> InputError | None:
    """The one table of failures the input caused beneath a check (the API's and the command
    line's boundary): a path the system refuses (:data:`INPUT_ERRNOS`: a name too long, a loop of
    links, no permission) names the path and the system's reason; a number too large to compute
    with (an int past a float's range, a recursion or an allocation it drove) says so. None for
    anything else: the environment's failure or a bug."""
    import errno

    if isinstance(exc, OSError):
        if errno.errorcode.get(exc.errno or 0, "") not in INPUT_ERRNOS:
            return None
        where = f"{exc.filename}: " if exc.filename else ""
        return InputError(f"{where}{exc.strerror or exc}")
    if isinstance(exc, (OverflowError, RecursionError, MemoryError)):
        return InputError(
            f"the input is too large to compute with ({type(exc).__name__}: {str(exc) or 'out of memory'}); "
            "give smaller sizes or counts"
        )
    return None
