"""transformers as an oracle: the model transformers itself builds from a config.json, counted.

The optional extra ``pip install 'llm-cost[hf]'`` (transformers and a CPU build of torch) lets
``llm-cost params MODEL --check`` build the model from the same config the way a user of
transformers would, but on PyTorch's ``meta`` device (shapes without storage: no memory, no
weights, a fraction of a second): ``with torch.device("meta"): cls._from_config(config)``, where
``cls`` is the class the config's ``architectures`` names (``Qwen3_5ForConditionalGeneration``
keeps the vision tower that ``AutoModelForCausalLM`` would drop), else transformers' image-text or
causal-LM auto class for the model_type. Its parameters (tied ones once) and its persistent
buffers (stored in the checkpoint: DeepSeek's ``e_score_correction_bias``, Gemma 4's
``layer_scalar``) are summed by top-level module (``embed_tokens``, ``layers``, ``norm``,
``lm_head``, ``visual`` ...: wrapper prefixes ``model.`` / ``language_model.`` left out);
non-persistent buffers (rotary ``inv_freq``) are left out, as the counting convention says.

Configs transformers cannot build as published are built with the smallest change, which the
result lists: a model_type transformers knows under another class (Kimi K2's ``kimi_k2``, read
through its DeepseekV3ForCausalLM architecture), ``auto_map`` dropped (no remote code runs), a
bool field written as an integer (Llama 4's ``attn_temperature_tuning: 4``, which transformers 4
read as true). A model_type with no transformers class (InternLM 2's remote code) is refused,
named. torch and transformers are imported only here, only when asked.
"""

from __future__ import annotations

import re
from typing import Any

from llm_cost.core.errors import InputError, SpecError
from llm_cost.core.records import record

__all__ = ["TransformersModel", "build_transformers_model", "INSTALL_HINT", "WRAPPERS"]

INSTALL_HINT = "check: building the model with transformers needs pip install 'llm-cost[hf]' (transformers and torch)"

#: Module names that wrap the language model (or the whole model) and are left out of a top-level name.
WRAPPERS = ("model", "language_model", "transformer", "text_model", "backbone")

#: model_types a published config uses that transformers builds with another configuration class.
RENAMED = {"kimi_k2": "deepseek_v3", "RefinedWebModel": "falcon", "RefinedWeb": "falcon"}


@record
class TransformersModel:
    """What transformers builds from a config: ``modules`` top-level module -> parameters and
    persistent buffers (elements, tied parameters once), ``buffers`` the persistent buffers among
    them, ``skipped_buffers`` the non-persistent ones left out, ``changes`` what the config needed
    to be built."""

    transformers_version: str
    torch_version: str
    model_class: str
    modules: dict[str, int]
    buffers: dict[str, int]
    skipped_buffers: int
    changes: list[str]
    #: the language model's per-layer attention kinds as transformers' config lists them (its
    #: ``layer_types``), and its ``sliding_window``; None where the config has none
    layer_types: list[str] | None = None
    sliding_window: int | None = None


def top_module(name: str) -> str:
    """The top-level module of a parameter name: ``model.language_model.layers.3.mlp.up_proj.weight``
    -> ``layers`` (wrapper prefixes left out, :data:`WRAPPERS`)."""
    parts = name.split(".")
    while len(parts) > 1 and parts[0] in WRAPPERS:
        parts = parts[1:]
    return parts[0]


def _imports() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError:
        raise InputError(INSTALL_HINT, fields=("check",)) from None
    transformers.logging.set_verbosity_error()
    return torch, transformers


def _floats(value: Any) -> Any:
    """``value`` with transformers 5's encoding of non-finite floats, ``{"__float__": "Infinity"}``,
    decoded as PreTrainedConfig reads a saved file (``from_dict`` takes them decoded)."""
    if isinstance(value, dict):
        if set(value) == {"__float__"}:
            return float(value["__float__"])
        return {k: _floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_floats(v) for v in value]
    return value


def _config(transformers: Any, data: dict[str, Any], source: str, changes: list[str]) -> Any:
    """transformers' configuration object of ``data`` (with the changes it needs, recorded)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    data = _floats(data)
    model_type = str(data.get("model_type"))
    if model_type in RENAMED:
        changes.append(f"model_type {model_type} built as {RENAMED[model_type]}")
        data = {**data, "model_type": RENAMED[model_type]}
        model_type = data["model_type"]
    if model_type not in CONFIG_MAPPING:
        raise SpecError(
            f"{source}: transformers {transformers.__version__} has no class for model_type {model_type!r} "
            "(remote code only): it cannot be built to check the count"
        )
    if "auto_map" in data:
        changes.append("auto_map dropped (no remote code runs)")
        data = {k: v for k, v in data.items() if k != "auto_map"}
    cls = CONFIG_MAPPING[model_type]
    for _ in range(8):  # one coercion per refused field
        try:
            return cls.from_dict(data)
        except Exception as exc:  # noqa: BLE001 - transformers' strict validation raises its own types
            data = _coerced(data, str(exc), source, transformers.__version__, changes)
    raise SpecError(f"{source}: transformers {transformers.__version__} refuses the config")


def _coerced(data: dict[str, Any], message: str, source: str, version: str, changes: list[str]) -> dict[str, Any]:
    """``data`` with the one field transformers' strict validation refused (a bool written as an
    integer) made a bool, at the top level or in ``text_config``; SpecError for anything else."""
    m = re.search(r"Field '(\w+)' expected bool, got int \(value: (-?\d+)\)", message)
    if m is None:
        raise SpecError(f"{source}: transformers {version} refuses the config: {' '.join(message.split())[:200]}")
    key = m.group(1)
    for part in (data, data.get("text_config")):
        if isinstance(part, dict) and isinstance(part.get(key), int) and not isinstance(part[key], bool):
            changes.append(
                f"{key} = {part[key]} passed as {str(bool(part[key])).lower()} (transformers {version} wants a bool)"
            )
            fixed = {**part, key: bool(part[key])}
            return fixed if part is data else {**data, "text_config": fixed}
    raise SpecError(f"{source}: transformers {version} refuses the config: {' '.join(message.split())[:200]}")


def _model_class(transformers: Any, config: Any, data: dict[str, Any]) -> Any:
    """The class ``architectures`` names when transformers has it, else the auto class of the
    config (image-text-to-text first, so a vision tower is kept, then causal LM)."""
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    names = data.get("architectures")
    name = names[0] if isinstance(names, list) and names and isinstance(names[0], str) else None
    cls = getattr(transformers, name, None) if name else None
    if cls is not None and hasattr(cls, "_from_config"):
        return cls
    for auto in (AutoModelForImageTextToText, AutoModelForCausalLM):
        try:
            return auto._model_mapping[type(config)]
        except KeyError:
            continue
    raise SpecError(f"transformers has no causal-LM or image-text class for {type(config).__name__}")


def build_transformers_model(data: dict[str, Any], source: str) -> TransformersModel:
    """Build ``data`` (a parsed config.json, named ``source`` in messages) with transformers on the
    meta device and count it by top-level module (module docstring). InputError when the extra is
    not installed; SpecError when transformers cannot build the config."""
    torch, transformers = _imports()
    changes: list[str] = []
    config = _config(transformers, dict(data), source, changes)
    cls = _model_class(transformers, config, data)
    try:
        with torch.device("meta"):
            model = cls._from_config(config)
    except Exception as exc:  # noqa: BLE001 - any failure inside transformers becomes one line
        raise SpecError(
            f"{source}: transformers {transformers.__version__} cannot build {cls.__name__}: "
            f"{' '.join(str(exc).split())[:200]}"
        ) from None
    modules: dict[str, int] = {}
    buffers: dict[str, int] = {}
    for name, p in model.named_parameters():
        modules[top_module(name)] = modules.get(top_module(name), 0) + p.numel()
    skipped, seen = 0, set()
    for prefix, module in model.named_modules():
        for name, b in module._buffers.items():
            if b is None or id(b) in seen:
                continue
            seen.add(id(b))
            if name in module._non_persistent_buffers_set:
                skipped += b.numel()
                continue
            top = top_module(f"{prefix}.{name}" if prefix else name)
            modules[top] = modules.get(top, 0) + b.numel()
            buffers[top] = buffers.get(top, 0) + b.numel()
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    types = getattr(text, "layer_types", None)
    window = getattr(text, "sliding_window", None)
    return TransformersModel(
        transformers_version=transformers.__version__,
        torch_version=torch.__version__,
        model_class=cls.__name__,
        modules=modules,
        buffers=buffers,
        skipped_buffers=skipped,
        changes=changes,
        layer_types=[str(t) for t in types] if isinstance(types, (list, tuple)) else None,
        sliding_window=window if isinstance(window, int) and not isinstance(window, bool) else None,
    )
