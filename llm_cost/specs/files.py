"""Reading spec and config files: size, encoding and YAML checks, and one-line validation messages.

Shared by :mod:`llm_cost.specs.load` (YAML specs) and :mod:`llm_cost.specs.hf` (config.json), so
neither imports the other for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llm_cost.core.errors import SpecError

__all__ = ["MAX_SPEC_BYTES", "read_text", "read_yaml", "validation_message"]

MAX_SPEC_BYTES = 1_000_000


def read_text(path: Path, what: str = "a .yaml spec") -> str:
    """The UTF-8 text of a spec or config file; SpecError for a missing, non-regular, huge
    (over 1 MB), undecodable or binary (NUL bytes) file, naming the file and what is expected."""
    if not path.exists():
        raise SpecError(f"{path}: no such file")
    if not path.is_file():
        raise SpecError(f"{path}: not a regular file (a folder or a device); give the path of {what}")
    size = path.stat().st_size
    if size > MAX_SPEC_BYTES:
        raise SpecError(f"{path}: {size:,} bytes is too large for {what} (limit {MAX_SPEC_BYTES:,} bytes)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SpecError(f"{path}: not a UTF-8 text file") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot be read ({exc.strerror})") from None
    if "\x00" in text:
        raise SpecError(f"{path}: binary content (NUL bytes); expected {what}")
    return text


def read_yaml(path: Path) -> dict[str, Any]:
    """Read one YAML mapping safely; SpecError for a missing, non-regular, huge, binary,
    empty or malformed file, or one whose top level is not a mapping."""
    import yaml

    text = read_text(path)
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{path}: invalid YAML{where}: {problem}") from None
    if data is None:
        raise SpecError(f"{path}: empty file; a spec is a YAML mapping of fields")
    if not isinstance(data, dict):
        raise SpecError(f"{path}: the top level must be a mapping of fields, not {type(data).__name__}")
    return data


def validation_message(path: Path, exc: Exception) -> str:
    lines = [f"{path}: invalid spec"]
    for err in exc.errors():  # type: ignore[attr-defined]
        loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-"))
        loc = loc or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field (not part of the schema; check the spelling)"
        elif err["type"] == "missing":
            msg = "required field is missing"
        elif "input" in err and err["type"] not in ("model_type",) and not isinstance(err["input"], dict):
            msg += f" (got {err['input']!r})"
        lines.append(f"  field {loc}: {msg}")
    return "\n".join(lines)
