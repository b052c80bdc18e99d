"""Checkpoint files read by their headers only: safetensors shards (names, dtypes, shapes, bytes).

A safetensors file starts with an 8-byte little-endian header length N, then N bytes of JSON
mapping each tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (plus an optional
``__metadata__``); the weights follow. Only those 8 + N bytes are read, so a 100 GB checkpoint is
inspected in milliseconds and no weight is ever loaded (the format as documented at
https://huggingface.co/docs/safetensors; the ``safetensors`` library is not needed for this).

A folder is a checkpoint when it holds ``*.safetensors`` files or a
``model.safetensors.index.json``; with an index, the shards it names are read (a missing shard is
an error naming it). A shard's name must stay inside the folder as written (no absolute path, no
``..``): the index cannot make the reader open ``/etc/passwd``; the shard itself may be a link
(a Hugging Face cache links each one to its blob). Only regular files are opened (a FIFO named
``model.safetensors`` would block the reader), JSON nested too deeply or holding an integer of
thousands of digits is refused. Errors are one-line :class:`SpecError`\\ s naming the file.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any, Optional

from llm_cost.core.errors import SpecError
from llm_cost.core.limits import MAX_HEADER_BYTES
from llm_cost.core.records import record
from llm_cost.specs.files import open_regular, shown

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

    @property
    def tensor_bytes(self) -> int:
        """Bytes of every stored tensor (what an index's ``total_size`` counts)."""
        return sum(t.nbytes for t in self.tensors)


def _int(text: str) -> int:
    """A JSON integer, refused past the 4,300 digits ``int()`` converts (no header needs 20)."""
    if len(text) > 4300:
        raise ValueError(f"an integer of {len(text):,} digits")
    return int(text)


def _json(raw: bytes, path: Path, what: str) -> Any:
    """``raw`` parsed as JSON; SpecError naming ``path`` for text that is not JSON, nests too deeply
    for the parser, or holds an integer longer than Python converts (4,300 digits)."""
    try:
        return json.loads(raw.decode("utf-8"), parse_int=_int)
    except RecursionError:
        raise SpecError(f"{shown(path)}: {what} nests lists or objects too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, and the digit limit of int()
        raise SpecError(f"{shown(path)}: {what} is not valid JSON ({str(exc)[:120]})") from None


def read_safetensors_header(path: Path) -> list[StoredTensor]:
    """The tensors of one safetensors file, from its header (8 + N bytes; the weights are not read)."""
    try:
        with open_regular(path, "a .safetensors file") as f:
            size = os.fstat(f.fileno()).st_size
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
    file of ``size`` bytes; SpecError naming ``path`` for a malformed header (not JSON, nested
    too deeply, an integer of thousands of digits, an entry without dtype, shape and offsets)."""
    header = _json(raw, path, "the safetensors header")
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
    return path.is_dir() and ((path / INDEX).exists() or any(path.glob("*.safetensors")))


def _index(folder: Path) -> tuple[list[Path], Optional[int]]:
    """The shards an index names (sorted) and its ``metadata.total_size``; SpecError for an
    index that is not a JSON object with a weight_map of tensor -> file name, a shard name that
    leaves the folder, or a shard missing."""
    index = folder / INDEX
    with open_regular(index, "a safetensors index") as f:
        raw = f.read(MAX_HEADER_BYTES + 1)
    if len(raw) > MAX_HEADER_BYTES:
        raise SpecError(f"{shown(index)}: larger than {MAX_HEADER_BYTES:,} bytes; not a safetensors index")
    data = _json(raw, index, "the safetensors index")
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict):
        raise SpecError(f"{shown(index)}: not a safetensors index (a JSON object with a weight_map)")
    wrong = next(((k, v) for k, v in weight_map.items() if not isinstance(v, str) or not v.strip()), None)
    if wrong is not None:
        raise SpecError(
            f"{shown(index)}: weight_map[{shown(wrong[0], 60)!r}] is {shown(repr(wrong[1]), 40)}, "
            "not the name of a shard file"
        )
    names = sorted(set(weight_map.values()))
    outside = [n for n in names if os.path.isabs(n) or os.path.normpath(n).split(os.sep)[0] == ".."]
    if outside:
        raise SpecError(
            f"{shown(index)}: shard {shown(outside[0], 80)!r} is outside the checkpoint folder; an index "
            "names shards in its own folder"
        )
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        raise SpecError(
            f"{shown(index)}: shard {shown(missing[0], 80)} is missing from {shown(folder)} ({len(missing)} of "
            f"{len(names)} shards absent); headers are read from the shards themselves"
        )
    metadata = data.get("metadata")
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    return [folder / n for n in names], index_total_size(total, shown(index))


def index_total_size(total: object, where: str) -> Optional[int]:
    """An index's ``metadata.total_size`` (bytes): None when absent or null; SpecError naming the
    field for anything but a non-negative integer (a byte count is never -5 or 1.5)."""
    if total is None:
        return None
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
        raise SpecError(
            f"{where}: metadata.total_size must be a byte count, an integer >= 0 (got {shown(repr(total), 40)})"
        )
    return total


def read_checkpoint(folder: Path) -> Checkpoint:
    """Every tensor header of the checkpoint in ``folder`` (the index's shards, else every
    ``*.safetensors`` file). SpecError for a malformed index, a shard outside the folder or
    missing, a malformed header or a duplicate name."""
    index_total = None
    if (folder / INDEX).exists() or (folder / INDEX).is_symlink():
        files, index_total = _index(folder)
    else:
        files = sorted(folder.glob("*.safetensors"))
    tensors: dict[str, StoredTensor] = {}
    for f in files:
        for t in read_safetensors_header(f):
            if t.name in tensors:
                raise SpecError(f"{f}: tensor {t.name!r} is also in {tensors[t.name].file}")
            tensors[t.name] = t
    return Checkpoint(str(folder), tuple(f.name for f in files), tuple(tensors.values()), index_total)
