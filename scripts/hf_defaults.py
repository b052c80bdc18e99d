"""Write llm_cost/data/hf_defaults.json: each model_type's configuration-class defaults, as the
installed transformers declares them (its configuration_*.py dataclass fields).

    pip install --no-deps transformers==5.24.0 && python scripts/hf_defaults.py

A config.json that leaves a key out takes that default (transformers fills it the same way when
it builds the model). Only JSON values are kept (numbers, strings, booleans, null, lists of them);
fields every PretrainedConfig has (ids, labels, output flags) are dropped. A wrapper's
``text_config`` / ``vision_config`` sub-configuration is written under ``text`` / ``vision`` with
its own model_type. ``aliases`` is the class's ``attribute_map`` (a spelling -> the attribute it
stands for, which transformers 5 writes back: Qwen3MoeConfig reads ``num_experts`` and saves
``num_local_experts``); llm_cost.specs.hf reads either spelling. ``types`` lists the fields typed
as integers and those whose type admits null (llm_cost.specs.hf.values checks a config's values
against them before reading). tests/specs/test_hf_defaults.py checks the file against the installed
transformers.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import transformers
from transformers import CONFIG_MAPPING, PretrainedConfig

OUT = Path(__file__).resolve().parents[1] / "llm_cost" / "data" / "hf_defaults.json"

#: The model_types llm-cost reads (supported families, their wrappers, and the types read through
#: the generic reader's departures table).
MODEL_TYPES = sorted(
    {
        "llama",
        "mistral",
        "mistral3",
        "mixtral",
        "qwen2",
        "qwen2_moe",
        "qwen3",
        "qwen3_moe",
        "qwen3_next",
        "qwen2_vl",
        "qwen3_vl",
        "qwen2_5_vl",
        "deepseek_v2",
        "deepseek_v3",
        "gemma",
        "gemma2",
        "gemma3_text",
        "phi3",
        "gpt2",
        "falcon",
        "gpt_oss",
        "gemma3",
        "smollm3",
        "olmo2",
        "olmo3",
        "phimoe",
        "granitemoe",
        "nemotron_h",
        "granitemoehybrid",
        "minimax_m2",
        "llama4",
        "llama4_text",
        "ernie4_5",
        "olmoe",
        "glm4_moe",
        "qwen3_5",
        "qwen3_5_text",
        "qwen3_5_moe",
        "qwen3_5_moe_text",
        "qwen3_vl_moe",
        "qwen3_vl_moe_text",
        "glm4_moe_lite",
        "glm4v_moe",
        "glm4v_moe_text",
        "kimi_k25",
        "gemma4",
        "gemma4_text",
        "mimo_v2_flash",
        "minimax_m3_vl",
        "deepseek_v32",
        "glm_moe_dsa",
        "kimi_linear",
        "lfm2",
        "glm4",
        "qwen3_vl_text",
    }
)

_BASE_ALIASES = set(getattr(PretrainedConfig, "attribute_map", None) or {})
_BASE = {f.name for f in dataclasses.fields(PretrainedConfig)} if dataclasses.is_dataclass(PretrainedConfig) else set()


def _json_value(value):
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_json_value(v) for v in value)
    return False


def _defaults(cls) -> dict:
    out = {}
    for f in dataclasses.fields(cls):
        if f.name in _BASE or f.name in ("text_config", "vision_config", "audio_config"):
            continue
        if f.default is not dataclasses.MISSING and _json_value(f.default):
            out[f.name] = list(f.default) if isinstance(f.default, tuple) else f.default
    return out


def _aliases(cls) -> dict:
    """The class's own ``attribute_map`` (PretrainedConfig's shared entries left out)."""
    return {k: v for k, v in sorted((getattr(cls, "attribute_map", None) or {}).items()) if k not in _BASE_ALIASES}


def _types(cls) -> dict:
    """``int``: the fields typed as integers (``int`` or ``int | None``), ``nullable``: the fields
    whose type admits None (transformers' strict dataclass validation refuses null elsewhere);
    only the keys llm_cost.specs.hf.values checks (sizes and shape keys)."""
    from llm_cost.specs.hf.config import SHAPE_KEYS
    from llm_cost.specs.hf.values import SIZE_KEYS

    ints, nullable = [], []
    for f in dataclasses.fields(cls):
        if f.name not in SHAPE_KEYS | SIZE_KEYS:
            continue
        kind = str(f.type).replace("<class 'int'>", "int")
        if kind in ("int", "int | None"):
            ints.append(f.name)
        if "None" in kind or "Optional" in kind or "Any" in kind:
            nullable.append(f.name)
    return {"int": sorted(ints), "nullable": sorted(nullable)}


def _entry(cls) -> dict:
    entry: dict = {"class": cls.__name__, "defaults": _defaults(cls), "types": _types(cls)}
    if _aliases(cls):
        entry["aliases"] = _aliases(cls)
    for key, part in (("text", "text_config"), ("vision", "vision_config")):
        sub = (getattr(cls, "sub_configs", None) or {}).get(part)
        if sub is not None and dataclasses.is_dataclass(sub):
            entry[key] = {
                "model_type": sub.model_type,
                "class": sub.__name__,
                "defaults": _defaults(sub),
                "types": _types(sub),
            }
            if _aliases(sub):
                entry[key]["aliases"] = _aliases(sub)
    return entry


def main() -> None:
    families = {mt: _entry(CONFIG_MAPPING[mt]) for mt in MODEL_TYPES if mt in CONFIG_MAPPING}
    data = {
        "source": f"transformers {transformers.__version__} configuration_*.py dataclass field defaults",
        "transformers_version": transformers.__version__,
        "families": families,
    }
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(families)} model_types from transformers {transformers.__version__}")


if __name__ == "__main__":
    main()
