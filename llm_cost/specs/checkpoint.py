"""Checkpoint files read by their headers only: safetensors shards (names, dtypes, shapes, bytes).

A safetensors file starts with an 8-byte little-endian header length N, then N bytes of JSON
mapping each tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (plus an optional
``__metadata__``); the weights follow. Only those 8 + N bytes are read, so a 100 GB checkpoint is
inspected in milliseconds and no weight is ever loaded (the format as documented at
https://huggingface.co/docs/safetensors; the ``safetensors`` library is not needed for this).

A folder is a checkpoint when it holds ``*.safetensors`` files or a
``model.safetensors.index.json``; with an index, the shards it names are read (a missing shard is
an error naming it). Errors are one-line :class:`SpecError`\\ s naming the file.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Optional

from llm_cost.core.errors import SpecError
from llm_cost.core.records import record

__all__ = [
    "StoredTensor",
    "Checkpoint",
    "DTYPE_BYTES",
    "read_safetensors_header",
    "header_length",
    "parse_safetensors_header",
    "is_checkpoint_folder",
    "read_checkpoint",
]

#: Bytes per element of each safetensors dtype (F8 variants are one byte; U8 packs MXFP4 pairs).
DTYPE_BYTES = {
    "F64": 8,
    "I64": 8,
    "U64": 8,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "F16": 2,
    "BF16": 2,
    "I16": 2,
    "U16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}
MAX_HEADER_BYTES = 100_000_000
INDEX = "model.safetensors.index.json"


@record
class StoredTensor:
    """One tensor as a checkpoint header describes it."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    file: str

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


@record
class Checkpoint:
    """The stored tensors of a checkpoint folder."""

    folder: str
    files: tuple[str, ...]
    tensors: tuple[StoredTensor, ...]
    index_total_size: Optional[int]  # metadata.total_size of the index, when there is one


def read_safetensors_header(path: Path) -> list[StoredTensor]:
    """The tensors of one safetensors file, from its header (8 + N bytes; the weights are not read)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            head = f.read(8)
            n = header_length(path, head, size)
            raw = f.read(n)
    except OSError as exc:
        raise SpecError(f"{path}: cannot be read ({exc.strerror})") from None
    return parse_safetensors_header(path, raw, size)


def header_length(path: Path, head: bytes, size: int) -> int:
    """N, the header length the first 8 bytes of a safetensors file of ``size`` bytes give."""
    if len(head) < 8:
        raise SpecError(f"{path}: not a safetensors file ({size} bytes; the header length takes 8)")
    (n,) = struct.unpack("<Q", head[:8])
    if n > MAX_HEADER_BYTES or n > size - 8:
        raise SpecError(
            f"{path}: not a safetensors file (header length {n:,} exceeds the file's "
            f"{size - 8:,} remaining bytes or the {MAX_HEADER_BYTES:,}-byte limit)"
        )
    return int(n)


def parse_safetensors_header(path: Path, raw: bytes, size: int) -> list[StoredTensor]:
    """The tensors a safetensors header ``raw`` (the N bytes after the length) describes, for a
    file of ``size`` bytes; SpecError naming ``path`` for a malformed header."""
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecError(f"{path}: the safetensors header is not valid JSON ({exc})") from None
    if not isinstance(header, dict):
        raise SpecError(f"{path}: the safetensors header must be a JSON object")
    out = []
    data_bytes = size - 8 - len(raw)
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        out.append(_tensor(path, name, entry, data_bytes))
    return out


def _tensor(path: Path, name: str, entry: object, data_bytes: int) -> StoredTensor:
    ok = (
        isinstance(entry, dict)
        and isinstance(entry.get("dtype"), str)
        and isinstance(entry.get("shape"), list)
        and isinstance(entry.get("data_offsets"), list)
        and len(entry["data_offsets"]) == 2
    )
    if ok:
        shape, (begin, end) = entry["shape"], entry["data_offsets"]  # type: ignore[index]
        ok = (
            all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape)
            and all(isinstance(o, int) and not isinstance(o, bool) for o in (begin, end))
            and 0 <= begin <= end
        )
    if not ok:
        raise SpecError(f"{path}: tensor {name!r} has no valid dtype / shape / data_offsets in the header")
    dtype = entry["dtype"]  # type: ignore[index]
    if dtype not in DTYPE_BYTES:
        raise SpecError(f"{path}: tensor {name!r} has dtype {dtype!r}; known: {', '.join(sorted(DTYPE_BYTES))}")
    t = StoredTensor(name, dtype, tuple(shape), end - begin, path.name)
    if end > data_bytes:
        raise SpecError(
            f"{path}: tensor {name!r} ends at byte {end:,} of a {data_bytes:,}-byte data section "
            "(a truncated download?)"
        )
    if dtype != "U8" and t.nbytes != t.numel * DTYPE_BYTES[dtype]:
        raise SpecError(
            f"{path}: tensor {name!r} holds {t.nbytes:,} bytes, not {t.numel:,} x "
            f"{DTYPE_BYTES[dtype]} for {dtype} {list(shape)}"
        )
    return t


def is_checkpoint_folder(path: Path) -> bool:
    """A folder holding ``*.safetensors`` files or a safetensors index."""
    return path.is_dir() and ((path / INDEX).is_file() or any(path.glob("*.safetensors")))


def read_checkpoint(folder: Path) -> Checkpoint:
    """Every tensor header of the checkpoint in ``folder`` (the index's shards, else every
    ``*.safetensors`` file). SpecError for a missing shard, a malformed header or a duplicate name."""
    index_total = None
    index = folder / INDEX
    if index.is_file():
        try:
            data = json.loads(index.read_text(encoding="utf-8"))
            weight_map = data["weight_map"]
            assert isinstance(weight_map, dict)
        except (OSError, ValueError, KeyError, AssertionError, TypeError):
            raise SpecError(f"{index}: not a safetensors index (a JSON object with a weight_map)") from None
        total = (data.get("metadata") or {}).get("total_size")
        index_total = total if isinstance(total, int) and not isinstance(total, bool) else None
        names = sorted(set(weight_map.values()))
        missing = [n for n in names if not (folder / n).is_file()]
        if missing:
            raise SpecError(
                f"{index}: shard {missing[0]} is missing from {folder} ({len(missing)} of {len(names)} "
                "shards absent); headers are read from the shards themselves"
            )
        files = [folder / n for n in names]
    else:
        files = sorted(folder.glob("*.safetensors"))
    tensors: dict[str, StoredTensor] = {}
    for f in files:
        for t in read_safetensors_header(f):
            if t.name in tensors:
                raise SpecError(f"{f}: tensor {t.name!r} is also in {tensors[t.name].file}")
            tensors[t.name] = t
    return Checkpoint(str(folder), tuple(f.name for f in files), tuple(tensors.values()), index_total)
