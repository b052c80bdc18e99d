"""Reading spec and config files: size, encoding and YAML checks, and one-line validation messages;
writing the files ``-o`` and ``--plot`` name (a spec from ``import``, a profile from ``calibrate``,
a picture).

Shared by :mod:`llm_cost.specs.load` (YAML specs) and :mod:`llm_cost.specs.hf` (config.json), so
neither imports the other for it. Files are read only when regular (:func:`open_regular`) and
written only as regular files, whole or not at all, by one writer (:func:`check_out`, :func:`write_file`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from llm_cost.core.errors import InputError, OutputError, SpecError
from llm_cost.core.limits import (
    MAX_CONFIG_BYTES,
    MAX_CONFIG_VALUES,
    MAX_DEPTH,
    MAX_DIGITS,
    MAX_ECHO,
    MAX_SPEC_BYTES,
    MAX_VALUES,
)
from llm_cost.core.records import record
from llm_cost.core.units import shown_number

__all__ = [
    "MAX_SPEC_BYTES",
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_VALUES",
    "MAX_VALUES",
    "MAX_DEPTH",
    "open_regular",
    "real_path",
    "read_text",
    "OutFile",
    "check_out",
    "write_file",
    "read_yaml",
    "check_shape",
    "shown",
    "validation_message",
]


def shown(path: object, limit: int = MAX_ECHO) -> str:
    """A path or name for a message, shortened in the middle when longer than ``limit`` (at most
    :data:`~llm_cost.core.limits.MAX_ECHO` less 4, so quoted and followed by a colon it stays one
    value a message may echo whole), its length given."""
    text, limit = str(path), min(limit, MAX_ECHO - 4)
    half = (limit - 3) // 2
    return text if len(text) <= limit else f"{text[:half]}...{text[-half:]} ({len(text):,} characters)"


def _refused(path: Path, exc: OSError, what: str) -> SpecError:
    """One line for a path the system refused: missing, a loop of symbolic links, or its reason."""
    if exc.errno == errno.ENOENT:
        return SpecError(f"{shown(path)}: no such file")
    if exc.errno == errno.ELOOP:
        return SpecError(f"{shown(path)}: a loop of symbolic links; give the path of {what}")
    return SpecError(f"{shown(path)}: cannot be read ({exc.strerror or exc})")


def open_regular(path: Path, what: str) -> IO[bytes]:
    """``path`` opened for binary reading if it is a regular file once its symbolic links are
    followed (the kernel's own resolution, which stops a loop); SpecError naming the file
    otherwise: missing, a link loop, a folder, a device, a FIFO or a socket (a FIFO would block
    the reader forever). The file is opened without blocking and checked on the open descriptor,
    so it cannot be swapped for something else between the check and the read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _refused(path, exc, what) from None
    except ValueError:  # a NUL character in the path
        raise SpecError(f"{shown(path)}: not a path the system accepts; give the path of {what}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
        raise SpecError(f"{shown(path)}: not a regular file ({kind}); give the path of {what}")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def real_path(path: Path, what: str) -> Path:
    """``path`` with every symbolic link followed, once (the folder a file's relative paths are
    read from); SpecError naming the file for a loop of links or a path the system refuses."""
    try:
        return Path(os.path.realpath(path, strict=True))
    except OSError as exc:
        raise _refused(path, exc, what) from None
    except ValueError:
        raise SpecError(f"{shown(path)}: not a path the system accepts; give the path of {what}") from None


def read_text(path: Path, what: str = "a .yaml spec", limit: int = MAX_SPEC_BYTES) -> str:
    """The UTF-8 text of a spec or config file; SpecError for a missing or non-regular file (a
    folder, device, FIFO; see :func:`open_regular`), a loop of links, a huge (over 1 MB),
    undecodable or binary (NUL bytes) file, or a path the system cannot use (too long, a part
    that is not a folder), naming the file and what is expected."""
    with open_regular(path, what) as f:
        try:
            raw = f.read(limit + 1)
        except OSError as exc:
            raise _refused(path, exc, what) from None
    if len(raw) > limit:
        size = os.stat(path).st_size
        raise SpecError(f"{shown(path)}: {size:,} bytes is too large for {what} (limit {limit:,} bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(f"{shown(path)}: not a UTF-8 text file") from None
    if "\x00" in text:
        raise SpecError(f"{shown(path)}: binary content (NUL bytes); expected {what}")
    return text.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as text mode reads


@record
class OutFile:
    """A file a command writes, checked by :func:`check_out` before anything is computed:
    ``path`` as given, and whether it may replace an existing file (``force``)."""

    path: Path
    force: bool


def check_out(out: Any, name: str, force: bool, suffixes: tuple[str, ...] = ()) -> OutFile:
    """The file ``out`` (the argument ``name``) names, checked before anything is computed: a new
    file in an existing folder, or with ``force`` an existing regular file to replace. InputError
    naming the argument for a suffix not in ``suffixes`` (when given), a symbolic link (never
    followed: the link itself, not the file it names, would be what the user meant to replace), a
    folder, a device, FIFO or socket (refused even with ``force``: only regular files are written),
    a missing folder, a path the system refuses, or an existing file without ``force``."""
    if not isinstance(out, (str, Path)) or not str(out).strip():
        raise InputError(f"{name}: {shown(out, 80)!r} is not a file path", fields=(name,))
    path = Path(out)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except (OSError, ValueError) as exc:  # too long, a loop in a folder of the path, a NUL character
        why = getattr(exc, "strerror", None) or "not a path the system accepts"
        raise InputError(f"{name}: {shown(path, 80)!r} cannot be used ({why})", fields=(name,)) from None
    kind = None if mode is None or stat.S_ISREG(mode) else _KINDS.get(stat.S_IFMT(mode), "something else")
    if kind is not None:
        raise InputError(
            f"{name}: {shown(path, 80)!r} is {kind}, not a regular file; give the path of a new or a regular file",
            fields=(name,),
        )
    if suffixes and path.name.lower() in suffixes:
        raise InputError(
            f"{name}: {shown(path, 80)!r} has an empty name before {path.name}; give one, such as "
            f"{path.with_name('picture' + path.name)}",
            fields=(name,),
        )
    if suffixes and path.suffix.lower() not in suffixes:
        raise InputError(f"{name}: {shown(path, 80)!r} must end in {' or '.join(suffixes)}", fields=(name,))
    if mode is None and not path.parent.is_dir():
        raise InputError(f"{name}: folder {shown(path.parent, 80)!r} does not exist", fields=(name,))
    if mode is not None and not force:
        raise InputError(f"{shown(path, 80)}: already exists; pass force to replace it", fields=("force",))
    return OutFile(path, bool(force))


#: What a path that is no regular file is, for :func:`check_out`'s message.
_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
}


def _umask() -> int:
    """The process's file-creation mask (read by setting it, then restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_file(out: OutFile, content: str | bytes | Callable[[IO[bytes]], None]) -> None:
    """The one writer of the files commands write (``-o``, ``--plot``): ``content`` (text as
    UTF-8, bytes, or a function that writes into the binary file it is given) to ``out`` (from
    :func:`check_out`) whole or not at all. A temporary file in the same folder, made readable as a
    new file is under the user's umask (``0o666 & ~umask``, not the temporary file's 0600), flushed
    to disk, then linked to the path (a new file: never replacing one that appeared meanwhile,
    InputError then) or renamed over it (``force``; a rename replaces the directory entry, never
    following a link or writing into a FIFO that appeared meanwhile). OutputError (naming the file,
    "nothing was written") when the file system refuses (read-only, full, no permission)."""
    import tempfile

    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".llm-cost.", suffix=".tmp", dir=out.path.parent)
        with os.fdopen(fd, "wb") as fh:
            if callable(content):
                content(fh)
            else:
                fh.write(content.encode("utf-8") if isinstance(content, str) else content)
            fh.flush()
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            os.fsync(fh.fileno())
        _place(tmp, out)
    except OSError as exc:
        raise OutputError(
            f"{shown(out.path)}: cannot be written ({exc.strerror or exc}); nothing was written"
        ) from None
    finally:
        if tmp is not None and os.path.lexists(tmp):
            os.unlink(tmp)


def _place(tmp: str, out: OutFile) -> None:
    """Put the written temporary file ``tmp`` at ``out.path``: renamed over it with ``force``,
    else linked (failing if anything is there by now)."""
    if out.force:
        os.replace(tmp, out.path)
        return
    try:
        os.link(tmp, out.path)  # fails if a file appeared meanwhile: never replace without force
    except FileExistsError:
        raise InputError(f"{shown(out.path)}: already exists; pass force to replace it", fields=("force",)) from None
    except OSError:  # file systems without hard links
        if os.path.lexists(out.path):
            raise InputError(
                f"{shown(out.path)}: already exists; pass force to replace it", fields=("force",)
            ) from None
        os.replace(tmp, out.path)


def check_shape(data: Any, path: Path, max_values: int = MAX_VALUES) -> None:
    """SpecError when ``data`` (a parsed spec, aliases expanded as the schema will see them)
    holds more than MAX_VALUES values or nests deeper than MAX_DEPTH; stops counting at the
    limit, so an alias bomb or a self-referencing alias is caught in a few milliseconds."""
    stack, count = [(data, 1)], 0
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > max_values:
            raise SpecError(
                f"{shown(path)}: more than {max_values:,} values (in all its lists and mappings, counted after any YAML "
                f"aliases are expanded), the most a file llm-cost reads may hold; a spec or profile holds a few hundred"
            )
        if depth > MAX_DEPTH:
            raise SpecError(f"{shown(path)}: lists or mappings nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def _loader():  # noqa: ANN202 - a yaml Loader class, built on first use
    """The spec loader: libyaml's safe loader where available, with YAML 1.2 core-schema scalars
    (``040`` is 40, not octal 32; no sexagesimal ``1:30``, no ``1_000``, no ``yes``/``no``
    booleans), integers of at most MAX_DIGITS digits, and duplicate keys rejected."""
    import re

    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    replaced = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool"}

    class Loader(base):  # type: ignore[valid-type, misc]
        yaml_implicit_resolvers = {
            first: [(tag, rx) for tag, rx in entries if tag not in replaced]
            for first, entries in base.yaml_implicit_resolvers.items()
        }

        def construct_mapping(self, node, deep=False):  # noqa: ANN001, ANN201 - PyYAML's signature
            seen = set()
            for key_node, _ in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if key is not None and key != "<<":
                    if key in seen:
                        raise yaml.constructor.ConstructorError(
                            None,
                            None,
                            f"duplicate key {shown(key, 40)!r} (each field may appear once)",
                            key_node.start_mark,
                        )
                    seen.add(key)
            return super().construct_mapping(node, deep)

    def construct_int(loader, node):  # noqa: ANN001, ANN202
        text = loader.construct_scalar(node)
        digits = len(text.lstrip("+-"))
        if digits > MAX_DIGITS:
            raise yaml.constructor.ConstructorError(
                None, None, f"an integer of {digits:,} digits is too long (limit {MAX_DIGITS:,})", node.start_mark
            )
        return int(text, 10)

    def construct_float(loader, node):  # noqa: ANN001, ANN202
        text = loader.construct_scalar(node).lower()
        special = {".inf": "inf", "+.inf": "inf", "-.inf": "-inf", ".nan": "nan"}
        return float(special.get(text, text))

    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    Loader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789"))
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(
            r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)"
            r"|\.(?:nan|NaN|NAN))$"
        ),
        list("-+0123456789."),
    )
    Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
    Loader.add_constructor("tag:yaml.org,2002:float", construct_float)
    return Loader


#: Mappings already read, by file (device, inode), modification time and size: a command that reads the
#: same profile or measurement file many times (``validate`` reads each dozens of times) parses it
#: once; a file changed on disk is read again.
_READ: dict[tuple[int, int, int, int], dict[str, Any]] = {}


def _plain_copy(value: Any) -> Any:
    """A copy of YAML data (mappings, lists, scalars) that shares no container with ``value``."""
    if isinstance(value, dict):
        return {k: _plain_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_copy(v) for v in value]
    return value


def read_yaml(path: Path) -> dict[str, Any]:
    """Read one YAML mapping safely (see :func:`_loader`); SpecError for a missing, non-regular,
    huge, binary, empty or malformed file, duplicate keys, an alias bomb, deep nesting, or a top
    level that is not a mapping. A file read before and unchanged since (the same file, modification
    time and size) is not parsed again: a copy of what it held is returned."""
    try:
        st = os.stat(path)
        key: tuple[int, int, int, int] | None = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
    except (OSError, ValueError):
        key = None
    if key is not None and key in _READ:
        return _plain_copy(_READ[key])
    data = _parse_yaml(path)
    if key is not None and stat.S_ISREG(st.st_mode):
        _READ[key] = _plain_copy(data)
    return data


def _parse_yaml(path: Path) -> dict[str, Any]:
    """:func:`read_yaml` of a file not read before."""
    import yaml

    text = read_text(path)
    try:
        data = yaml.load(text, Loader=_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{shown(path)}: invalid YAML{where}: {problem}") from None
    except RecursionError:
        raise SpecError(f"{shown(path)}: lists or mappings nested too deeply") from None
    if data is None:
        raise SpecError(f"{shown(path)}: empty file; a spec is a YAML mapping of fields")
    if not isinstance(data, dict):
        raise SpecError(f"{shown(path)}: the top level must be a mapping of fields, not {type(data).__name__}")
    check_shape(data, path)
    return data


#: Problems listed in one message; the rest are counted ("and 29 more").
SHOWN_ERRORS = 3


def _problem(err: dict[str, Any]) -> str:
    """``field LOC: RULE (got VALUE)`` for one pydantic error, the value shortened."""
    loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-")) or "(top level)"
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
        msg = "unknown field (not part of the schema; check the spelling)"
    elif err["type"] in ("missing", "missing_keyword_argument"):
        msg = "required field is missing"
    elif err["type"] == "string_pattern_mismatch" and "\x00" in str(err.get("ctx", {}).get("pattern", "")):
        msg = "text without terminal control characters or bidirectional overrides"  # schema.PRINTABLE
    elif "input" in err and err["type"] not in ("model_type",) and not isinstance(err["input"], (dict, list)):
        msg += f" (got {_short_repr(err['input'])})"
    return f"field {loc}: {msg}"


def _short_repr(value: Any) -> str:
    """``repr(value)`` of at most about 40 characters (an integer's digits are counted instead)."""
    return shown(shown_number(value), 40)


def validation_message(path: Path | str, exc: Exception) -> str:
    """One line for a pydantic ValidationError: the file (or what else was validated), then the
    first SHOWN_ERRORS problems (field and rule) and how many more there are."""
    errors = exc.errors()  # type: ignore[attr-defined]
    parts = [_problem(err) for err in errors[:SHOWN_ERRORS]]
    more = f"; and {len(errors) - SHOWN_ERRORS} more" if len(errors) > SHOWN_ERRORS else ""
    return f"{shown(path)}: invalid spec: {'; '.join(parts)}{more}"
