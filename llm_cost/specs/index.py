"""Generated indexes of shipped files checked by CRC-32: how a command reads a shipped spec
(``models/``, ``hardware/``: :mod:`llm_cost.specs.shipped_index`)
without a YAML parser or pydantic.

An index is a generated module binding ``INDEX`` to one Python literal (:func:`index_source`),
so reading it loads one compiled module. Each entry (:func:`entry`) holds the CRC-32 of its file's
bytes (``crc32``), the file's validated content as plain data (``spec``,
:func:`~llm_cost.specs.declare.to_data`) and the class of each spec nested in it by dotted path
(``classes``, ``{"attention": "GQAAttention"}``). An entry is used only while its file's bytes
still match it (:func:`current`): a checkout edited since the index was built reads the file and
validates it as any other. The content was validated when the index was built, so it is turned
back into the spec without validating again (:func:`rebuilt`): validating imports pydantic and
builds its validators, which costs more than the rest of a command's start. Tests check, for
every shipped file, that each index is current and that each entry rebuilt equals the file
validated.

CRC-32 detects an edited file, not a forged one, and zlib is already loaded where hashlib's
OpenSSL module takes 4 ms to import.
"""

from __future__ import annotations

import importlib
import os
import sys
import zlib
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from llm_cost.specs.declare import Spec, to_data

__all__ = ["data_dir", "digest", "entry", "current", "rebuilt", "index_source", "imported"]

T = TypeVar("T")


@cache
def data_dir(kind: str) -> Path:
    """Folder of shipped files: ``kind`` is "models", "hardware" or "catalog" (wheel or source
    checkout); fixed for the process, so resolved once (``validate`` asked 1,812 times)."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_data" / kind
    return packaged if packaged.is_dir() else here.parent / kind


#: CRC-32 digests already taken, by file (device, inode), modification time and size: a command
#: that loads the same shipped spec many times reads its bytes once.
_DIGESTS: dict[tuple[int, int, int, int], str] = {}


def digest(path: Path) -> str:
    """The CRC-32 of the file's bytes, 8 hex digits (a file unchanged since it was last digested,
    by its identity, modification time and size, is not read again)."""
    st = os.stat(path)
    key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
    found = _DIGESTS.get(key)
    if found is None:
        found = _DIGESTS[key] = f"{zlib.crc32(path.read_bytes()):08x}"
    return found


def entry(path: Path, spec: Spec) -> dict[str, Any]:
    """The index entry of the file ``path`` whose validated content is ``spec``: ``crc32``,
    ``spec`` (plain data) and ``classes`` (see the module docstring)."""
    return {"crc32": digest(path), "spec": to_data(spec), "classes": _classes(spec)}


def current(found: dict[str, Any] | None, path: Path) -> dict[str, Any] | None:
    """``found`` (an entry) if the file ``path`` is there with the bytes it was indexed from;
    else None (no entry, a file edited since, or one that cannot be read)."""
    try:
        return found if found is not None and digest(path) == found["crc32"] else None
    except OSError:
        return None


def rebuilt(cls: type[T], found: dict[str, Any]) -> T:
    """The spec ``cls`` an entry holds, built without validation; the classes of its nested specs
    are looked up in ``cls``'s module by the names the entry gives. A list becomes the tuple a
    spec's sequence is (as validation makes it); a mapping is copied, so a caller changing its
    spec's changes no later load."""
    return _construct(cls, found["spec"], found["classes"], vars(sys.modules[cls.__module__]), "")


def _construct(cls: type[T], data: dict[str, Any], classes: dict[str, str], namespace: dict[str, Any], at: str) -> T:
    values = {}
    for name, value in data.items():
        path = f"{at}{name}"
        if path in classes and classes[path].startswith("enum:"):
            value = namespace[classes[path][5:]](value)  # a closed set's member, from its value
        elif path in classes:
            value = _construct(namespace[classes[path]], value, classes, namespace, f"{path}.")
        elif isinstance(value, list):
            value = tuple(value)
        elif isinstance(value, dict):
            value = dict(value)
        values[name] = value
    return cls(**values)


def _classes(spec: Spec, at: str = "") -> dict[str, str]:
    """The class name of each spec object nested in ``spec``, by its dotted path."""
    out = {}
    for name in spec.__dataclass_fields__:  # type: ignore[attr-defined]  # every Spec is a @spec dataclass
        value = getattr(spec, name)
        if isinstance(value, Spec):
            out[f"{at}{name}"] = type(value).__name__
            out.update(_classes(value, f"{at}{name}."))
        elif isinstance(value, Enum):
            out[f"{at}{name}"] = f"enum:{type(value).__name__}"
    return out


def index_source(doc: str, index: dict[str, Any]) -> str:
    """The text of a generated index module whose docstring is ``doc``: ``INDEX = {...}``, keys
    sorted."""
    from llm_cost.core.serialize import literal_module

    return literal_module(doc, "INDEX", index)


@cache
def imported(module: str) -> dict[str, Any]:
    """The ``INDEX`` of the generated module ``module``; empty when it is missing."""
    try:
        return importlib.import_module(module).INDEX
    except ImportError:
        return {}
