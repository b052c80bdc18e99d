"""The defaults transformers' configuration classes give a key a config.json leaves out.

``llm_cost/data/hf_defaults.json`` holds, per model_type, the dataclass field defaults of its
configuration class (``configuration_*.py``) in the transformers version it names, and for a
wrapper (``Gemma3Config``, ``Qwen3_5MoeConfig`` ...) those of its ``text_config`` class.
``scripts/hf_defaults.py`` writes it from an installed transformers; tests/specs/test_hf_defaults.py
checks it against transformers where transformers is installed. A required key that a config
leaves out (``vocab_size`` of a Gemma-3 ``text_config``: 262,208) takes the table's value and is
reported among the defaults applied; an explicit null is still refused.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

__all__ = ["DefaultsTable", "defaults_for", "table_version", "family_keys"]


@functools.cache
def _data() -> dict[str, Any]:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "data" / "hf_defaults.json"
    return json.loads(path.read_text(encoding="utf-8"))


def table_version() -> str:
    """The transformers version the table was taken from (``5.24.0``)."""
    return str(_data()["transformers_version"])


class DefaultsTable:
    """One model_type's defaults: ``values`` (key -> default), ``name`` for messages
    (``transformers 5.24.0 Gemma3TextConfig``) and ``aliases``, the configuration classes'
    ``attribute_map`` (a spelling -> the attribute it stands for: Qwen3MoeConfig's ``num_experts``
    is saved by transformers 5 as ``num_local_experts``)."""

    def __init__(
        self,
        values: dict[str, Any],
        name: str,
        aliases: Optional[dict[str, str]] = None,
        types: Optional[dict[str, list[str]]] = None,
    ) -> None:
        self.values = values
        self.name = name
        self.aliases = aliases or {}
        types = types or {}
        self.ints = frozenset(types.get("int", ()))  # fields typed int (or int | None)
        self.nullable = frozenset(types.get("nullable", ()))  # fields whose type admits null
        self.declared = frozenset(values) | self.ints | self.nullable

    def get(self, key: str) -> Any:
        return self.values.get(key)


def defaults_for(model_type: str, nested_text: bool, text_family: Optional[str] = None) -> DefaultsTable:
    """The defaults of ``model_type``'s configuration class; with ``nested_text`` (the config's
    ``text_config`` was merged into the top level), its text sub-configuration's defaults over the
    wrapper's own (the language model's ``tie_word_embeddings`` decides, as Mistral-Small-3.2's
    untied checkpoint shows). ``text_family``: the model_type whose class is the language model's
    where the wrapper's class names none of its own (Mistral3Config: mistral). An unknown
    model_type has an empty table."""
    families = _data()["families"]
    entry = families.get(model_type)
    if entry is None:
        return DefaultsTable({}, f"transformers {table_version()}")
    values = dict(entry["defaults"])
    aliases = dict(entry.get("aliases", {}))
    types = {k: list(v) for k, v in entry.get("types", {}).items()}
    name = entry["class"]
    text = entry.get("text") or (families.get(text_family) if text_family else None)
    if text is not None:
        values = {**values, **text["defaults"]}  # the language model's own defaults win (tie_word_embeddings)
        name = f"{text['class']} / {name}" if nested_text else f"{name} (text: {text['class']})"
        if nested_text:
            aliases.update(text.get("aliases", {}))
            inner = text.get("types", {})
            types = {
                k: sorted((set(types.get(k, ())) - set(text["defaults"])) | set(inner.get(k, ())))
                for k in ("int", "nullable")
            }
    return DefaultsTable(values, f"transformers {table_version()} {name}", aliases, types)


def family_keys(model_type: str) -> frozenset[str]:
    """Every key ``model_type``'s configuration class declares a default for (its text
    sub-configuration's too): what the closest-family hint compares a config's keys with."""
    entry = _data()["families"].get(model_type)
    if entry is None:
        return frozenset()
    keys = set(entry["defaults"])
    if "text" in entry:
        keys |= set(entry["text"]["defaults"])
    return frozenset(keys)
