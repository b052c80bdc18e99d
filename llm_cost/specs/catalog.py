"""The offline catalog: published ``config.json`` files of the models people ask for by name,
read without the network by Hub id (``meta-llama/Llama-3.1-70B-Instruct``, any case) or short name
(``llama3.1-70b-instruct``).

Each entry of ``catalog/`` (inside the wheel under ``llm_cost/_data/catalog``) is a folder
``NAME/config.json`` holding the file byte for byte as a public copy stores it (its git blob id is
recorded and tested), and a record in ``catalog/CATALOG.yaml``: the Hub ids the file describes,
more short names, the family, where the copy was read (repository, path, commit) and the
checkpoint's parameter total from an independent source with the convention it counts in.

A command does not parse that YAML: two modules are generated from it (``python
scripts/build_index.py``; a test checks they are current): :mod:`llm_cost.specs.catalog_names`
maps every lower-case short name, alias and Hub id to its entry, so a lookup imports one small
compiled module; :mod:`llm_cost.specs.catalog_index` holds each entry's record, imported only to
load or list a catalog model, which reads only the asked model's config.json. Shipped names (``models/``) are looked up first and keep their names; a Hub id the
catalog lacks goes to the Hub (:mod:`llm_cost.specs.hub`), and one with ``@revision`` always does.
An entry whose config today's reader refuses or miscounts is kept, marked ``reader: pending``
with the reason: loading it reports that reason as any config.json would.
"""

from __future__ import annotations

import dataclasses
from enum import Enum
from pathlib import Path
from typing import Any, Optional

from llm_cost.core.errors import SpecError

__all__ = [
    "CATALOG_FILE",
    "TotalCounts",
    "catalog_dir",
    "entries",
    "find",
    "config_file",
    "load_catalog_model",
    "build_catalog_index",
    "catalog_index_source",
]

#: The catalog's record of sources and totals, beside its config folders.
CATALOG_FILE = "CATALOG.yaml"


class TotalCounts(str, Enum):
    """What an entry's checkpoint total counts (``total_counts`` in CATALOG.yaml), in the terms of
    :class:`~llm_cost.model.params.ParamsResult`:

    * ``total_params``: the loaded model's parameters (main model; MTP layers apart).
    * ``checkpoint_params``: what the checkpoint files store (main model + MTP layers and their
      stored embedding / head copies).
    * ``checkpoint_params + tied_head``: a tied LM head stored once more as ``lm_head.weight``
      (V x d) beside the embedding, as Qwen3's small checkpoints do.
    * ``checkpoint_params + fp8_block_scales``: FP8 weights with one FP32 ``weight_scale_inv`` per
      128 x 128 block of each quantized matrix (DeepSeek-V3's FineGrainedFP8 layout).
    * ``checkpoint_params + mxfp4_scales``: MXFP4 experts counted as unpacked values plus one E8M0
      scale per 32 values (gpt-oss, as the Hub's safetensors total counts them).
    * ``checkpoint_params + rotary_inv_freq``: each decoder layer's rotary ``inv_freq`` buffer
      (head_dim / 2 elements) saved with the weights, as Llama 2's first checkpoints are.
    """

    TOTAL = "total_params"
    CHECKPOINT = "checkpoint_params"
    TIED_HEAD = "checkpoint_params + tied_head"
    FP8_BLOCK_SCALES = "checkpoint_params + fp8_block_scales"
    MXFP4_SCALES = "checkpoint_params + mxfp4_scales"
    ROTARY_INV_FREQ = "checkpoint_params + rotary_inv_freq"


def catalog_dir() -> Path:
    """The catalog's folder (wheel or source checkout)."""
    from llm_cost.specs.index import data_dir

    return data_dir("catalog")


def entries() -> dict[str, dict[str, Any]]:
    """Every catalog entry's index record by short name: ``hub_ids``, ``aliases``, ``family``,
    ``model_type``, ``source`` (where the config.json was read), ``total`` (or None),
    ``total_counts``, ``total_source``, ``reader`` ("ok" or "pending: why")."""
    from llm_cost.specs import index

    return index.imported("llm_cost.specs.catalog_index")


def find(name: str) -> Optional[str]:
    """The short name of the entry ``name`` names (a short name, an alias or a Hub id, any case);
    None when the catalog has no such name (a Hub id with ``@revision`` is never the catalog's)."""
    from llm_cost.specs import index

    key = name.strip().lower()
    return index.imported("llm_cost.specs.catalog_names").get(key) if key and "@" not in key else None


def config_file(short: str) -> Path:
    """The config.json of the entry ``short``."""
    return catalog_dir() / short / "config.json"


def load_catalog_model(short: str, verbose: bool = False):
    """The :class:`ModelSpec` of the catalog entry ``short`` (``(spec, defaults)`` with
    ``verbose``), read from its config.json as any config.json is; named ``short``, displayed as its
    first Hub id, its source the Hub URL of that id with the copy it was read from."""
    from llm_cost.specs.hf import load_hf_config_verbose
    from llm_cost.specs.schema import CATALOG_PENDING

    entry = entries()[short]
    hub_id = entry["hub_ids"][0]
    url = f"https://huggingface.co/{hub_id}/blob/main/config.json (offline catalog copy: {entry['source']})"
    try:
        spec, defaults = load_hf_config_verbose(config_file(short), name=short, source=url, display_name=hub_id)
    except SpecError as exc:
        raise SpecError(f"{short} ({hub_id}, offline catalog): {exc}") from None
    reader = str(entry.get("reader", "ok"))
    if reader.startswith("pending: "):  # it loads, but its count is known not to match (a new user saw no sign)
        note = f"{spec.source.note or ''} {CATALOG_PENDING} {reader.removeprefix('pending: ')}".strip()
        spec = dataclasses.replace(spec, source=dataclasses.replace(spec.source, note=note))
    return (spec, defaults) if verbose else spec


# -- building the index ------------------------------------------------------------------------


def _check_entry(short: str, record: dict[str, Any], folder: Path) -> None:
    """SpecError naming the entry and field when a CATALOG.yaml record is malformed."""
    where = f"{folder / CATALOG_FILE}: {short}"
    if short != short.strip().lower() or "/" in short:
        raise SpecError(f"{where}: a short name is lower case without '/'")
    if not (folder / short / "config.json").is_file():
        raise SpecError(f"{where}: no {short}/config.json beside the catalog")
    ids = record.get("hub_ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i.count("/") == 1 for i in ids):
        raise SpecError(f"{where}: hub_ids must list one or more org/name ids")
    counts = record.get("total_counts")
    valid = [c.value for c in TotalCounts]
    if record.get("total") is not None and counts not in valid:
        raise SpecError(f"{where}: total_counts {counts!r} is not one of {', '.join(valid)}")
    reader = str(record.get("reader", ""))
    if reader != "ok" and not reader.startswith("pending: "):
        raise SpecError(f"{where}: reader must be 'ok' or 'pending: <the reason>'")
    if "quantization" in record and not str(record["quantization"]).startswith("pending: "):
        raise SpecError(f"{where}: quantization must be 'pending: <the reason>' (or absent)")
    quant_file = folder / short / "hf_quant_config.json"
    if ("quant_config_source" in record) != quant_file.is_file():
        raise SpecError(f"{where}: quant_config_source and {short}/hf_quant_config.json go together")


def _source(record: dict[str, Any]) -> str:
    """``owner/repo path @ commit`` of the copy an entry's config.json was read from."""
    src = record["config_source"]
    return f"github.com/{src['repo']} {src['path']} @ {src['commit'][:12]}"


def build_catalog_index(folder: Optional[Path] = None) -> dict[str, Any]:
    """The catalog index from ``CATALOG.yaml`` and the config files: ``names`` (every lower-case
    short name, alias and Hub id -> short name) and ``entries`` (see :func:`entries`). SpecError
    when a record is malformed or two entries (or an entry and a shipped model) claim one name."""
    import json

    from llm_cost.specs import index
    from llm_cost.specs.files import read_yaml

    folder = folder or catalog_dir()
    records = read_yaml(folder / CATALOG_FILE)
    shipped = index.imported("llm_cost.specs.shipped_index").get("models", {})
    taken = {n: f"shipped model {stem}" for stem, e in shipped.items() for n in (stem, *e["aliases"])}
    names: dict[str, str] = {}
    out: dict[str, dict[str, Any]] = {}
    for short, record in sorted(records.items()):
        _check_entry(short, record, folder)
        config = json.loads((folder / short / "config.json").read_text(encoding="utf-8-sig"))
        keys = [short, *record.get("aliases", []), *record["hub_ids"]]
        for key in (k.lower() for k in keys):
            if key in names or key in taken:
                raise SpecError(
                    f"{folder / CATALOG_FILE}: {short}: name {key!r} is also {taken.get(key) or names[key]}"
                )
            names[key] = short
        out[short] = {
            "hub_ids": list(record["hub_ids"]),
            "aliases": list(record.get("aliases", [])),
            "family": record["family"],
            "model_type": str(config.get("model_type", "")),
            "source": _source(record),
            "total": record.get("total"),
            "total_counts": record.get("total_counts"),
            "total_source": record.get("total_source", ""),
            "reader": record["reader"],
        }
    return {"names": names, "entries": out}


def catalog_index_source(built: dict[str, Any]) -> dict[str, str]:
    """The texts of :mod:`llm_cost.specs.catalog_names` and :mod:`llm_cost.specs.catalog_index` for
    ``built`` (:func:`build_catalog_index`), by module name."""
    from llm_cost.specs import index

    made = "Generated by ``python scripts/build_index.py`` from catalog/CATALOG.yaml; do not edit."
    return {
        "catalog_names": index.index_source(
            f"The offline catalog's names: every lower-case short name, alias and Hub id -> its entry.\n{made}",
            built["names"],
        ),
        "catalog_index": index.index_source(
            f"The offline catalog's entries: each one's Hub ids, source and checkpoint total.\n{made}",
            built["entries"],
        ),
    }
