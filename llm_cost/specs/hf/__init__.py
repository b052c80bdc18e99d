"""Hugging Face ``config.json`` -> :class:`~llm_cost.spec.ModelSpec`, exactly as transformers builds the weights.

Every command accepts MODEL as a path to a ``config.json`` (or a folder holding one); the spec made
here is then counted by :mod:`llm_cost.structure` like any shipped spec. Most families are one
reading of the standard config vocabulary (:mod:`llm_cost.specs.hf.generic`) with a line of
departures each (:mod:`llm_cost.specs.hf.departures`); the rest have a mapping of their own
(:mod:`llm_cost.specs.hf.families`); vision towers are read in :mod:`llm_cost.specs.hf.vision`.
Each names the transformers modeling file whose weight tensors it mirrors. A key a config leaves
out takes transformers' default (:mod:`llm_cost.specs.hf.defaults`).

Rules (design notes, "config.json import"):

* Only keys that change weight shapes (or the KV cache) matter. Unknown keys are fine: configs carry
  many irrelevant ones (dropout, token ids, ``pretraining_tp`` ...). But a key that is known to change
  weight shapes (:data:`SHAPE_KEYS`) and that the family's mapping does not place raises
  :class:`~llm_cost.load.SpecError` naming it (unless its value is inert: null, false, 0, empty), so
  a count is never silently wrong.
* Keys are read under every spelling the family's configuration class knows (its
  ``attribute_map``) and in the layouts transformers 5 saves; values are checked by type and range
  first (:mod:`llm_cost.specs.hf.values`), and keys that disagree are refused, both named.
* A missing optional field takes the family's default (the transformers config class default) and
  is listed in ``spec.source.defaults`` (field, value, source): ``params`` prints them on one line
  and in its JSON, ``--verbose`` one per line. The core sizes (``vocab_size``,
  ``hidden_size``, ``num_hidden_layers``, ``num_attention_heads`` and the FFN width that is used)
  are required: a config without them is not a model description.
* A parameter is an element of a checkpoint weight tensor; buffers (rotary ``inv_freq``, GPT-2's
  causal-mask ``attn.bias``, Gemma's embedding ``normalizer``) are not parameters.
* Fused projections (GPT-2 ``c_attn``, Falcon ``query_key_value``, Phi-3 ``qkv_proj`` and
  ``gate_up_proj``) hold exactly the elements of the separate q/k/v (gate/up) tensors the spec
  enumerates, so they map onto the unfused fields with equal counts.

Errors name the file and the key: ``config.json: model_type 'bert' is not supported; supported: ...``.
"""

from __future__ import annotations

import json
import os
import re
from datetime import date
from pathlib import Path
from typing import Any, Optional

from llm_cost.core.errors import SpecError
from llm_cost.specs.files import (
    MAX_CONFIG_BYTES,
    MAX_CONFIG_VALUES,
    check_shape,
    read_text,
    shown,
    validation_message,
)
from llm_cost.specs.hf.config import SHAPE_KEYS, _Config, check_inert_keys
from llm_cost.specs.hf.families import _HEADS, ALIASES, FAMILIES, SUPPORTED_MODEL_TYPES
from llm_cost.specs.hf.values import check_values

__all__ = [
    "SUPPORTED_MODEL_TYPES",
    "SHAPE_KEYS",
    "load_hf_config",
    "load_hf_config_verbose",
    "hf_to_spec",
    "spec_to_yaml",
    "find_config",
    "is_hf_path",
    "defaults_used",
    "applied_default",
    "read_config",
]


# -- public API -------------------------------------------------------------------------------------


def _one_line(text: str) -> str:
    """``text`` on one line: runs of whitespace and control characters become one space."""
    return " ".join(re.sub(r"[\x00-\x1f\x7f]", " ", text).split())


def _display_name(config: dict[str, Any]) -> Optional[str]:
    raw = config.get("_name_or_path")
    if not isinstance(raw, str) or not _one_line(raw):
        return None
    raw = _one_line(raw).rstrip("/")
    m = re.search(r"models--([^/]+?)--([^/]+)", raw)
    if m:
        return f"{m.group(1)}/{m.group(2)}"
    if raw.startswith(("/", ".", "~")) or "\\" in raw or raw.count("/") > 1:
        return re.split(r"[/\\]", raw)[-1] or None
    return raw


def _stem_of(source: str) -> str:
    """The folder of ``.../NAME/config.json`` (in the Hub's cache, ``models--ORG--NAME/snapshots/
    REVISION/config.json``: NAME, not the revision's hash), else the file stem."""
    p = Path(source)
    if p.name != "config.json":
        return p.stem.strip() or "model"
    folder = Path(os.path.realpath(p.parent))
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        return folder.parent.parent.name.split("--")[-1].strip() or "model"
    return folder.name.strip() or "model"


def _name_from(source: str) -> str:
    return re.sub(r"\s+", "-", _stem_of(source)).lower()


def _config_keys(config: dict[str, Any]) -> set[str]:
    """The keys of a config and of its ``text_config``."""
    text = config.get("text_config")
    return set(config) | (set(text) if isinstance(text, dict) else set())


#: Keys every config carries whatever its family: left out of the closest-family comparison.
_NOT_VOCABULARY = frozenset(
    {"architectures", "model_type", "_name_or_path", "transformers_version", "torch_dtype", "dtype", "auto_map"}
    | {"text_config", "vision_config", "audio_config"}
)
#: The weighted share of keys below which no family is named as closest.
_CLOSEST_MIN_SHARE = 0.3


def _closest(config: dict[str, Any]) -> str:
    """`` (closest supported family by keys: X)``: the supported family whose transformers
    configuration class declares most of the config's keys (and of its ``text_config``'s),
    by a Jaccard share in which each key weighs log(families / families declaring it), so
    ``num_attention_heads`` counts for little and ``linear_num_value_heads`` for much, and a key no
    family declares weighs most; below a 0.3 share (LFM2 against every family here) no family is named."""
    import math

    from llm_cost.specs.hf.defaults import family_keys

    vocabulary = {f: family_keys(f) for f in FAMILIES}
    declared: dict[str, int] = {}
    for family_vocabulary in vocabulary.values():
        for k in family_vocabulary:
            declared[k] = declared.get(k, 0) + 1
    n = len(vocabulary)
    keys = _config_keys(config) - _NOT_VOCABULARY

    def share(family: str) -> float:
        theirs = vocabulary[family]
        both = sum(math.log(n / declared[k]) for k in keys & theirs)
        either = sum(math.log(n / declared.get(k, 1)) for k in keys | theirs)
        return both / either if either else 0.0

    best = max(FAMILIES, key=share)
    if share(best) < _CLOSEST_MIN_SHARE:
        return " (no supported family declares most of its keys)"
    return f" (closest supported family by keys: {best})"


#: Wrapper families whose language model's keys may sit under ``text_config``.
_NESTED_TEXT = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "gemma3", "llama4", "mistral3", "minimax_m3_vl")


def _reader(model_type: str):
    """(family, mapper, family defaults, read generically) for ``model_type``: a supported family
    (its mapping, or the generic reader with its departures line), else the generic reader alone."""
    from llm_cost.specs.hf.generic import generic_family, read_generic

    family = ALIASES.get(model_type, model_type)
    if family in FAMILIES:
        mapper, fam = FAMILIES[family]
        return family, mapper, fam, False
    return model_type, lambda c, fam: read_generic(c, fam, None), generic_family(model_type), True


def _tie_across(config: dict[str, Any], text: Any, data: dict[str, Any]) -> Optional[str]:
    """Where a wrapper and its ``text_config`` disagree on ``tie_word_embeddings`` (transformers 5
    saves each class's default: Qwen3-VL's wrapper false beside a text_config true, Mistral 3's
    wrapper true beside a text_config false), the embedding is counted untied: the checkpoints
    store lm_head.weight, and transformers' from_pretrained unties a tied pair the checkpoint
    stores both of (modeling_utils.PreTrainedModel.tie_weights). Returns the note, or None."""
    outer = config.get("tie_word_embeddings")
    inner = text.get("tie_word_embeddings") if isinstance(text, dict) else None
    if not isinstance(outer, bool) or not isinstance(inner, bool) or outer == inner:
        return None
    data["tie_word_embeddings"] = False
    return (
        f"tie_word_embeddings is {str(outer).lower()} in the wrapper and {str(inner).lower()} in text_config: "
        "counted untied (transformers unties a pair the checkpoint stores both of)"
    )


def hf_to_spec(config: dict[str, Any], source: str, name: Optional[str] = None, display_name: Optional[str] = None):
    """Map a parsed config.json to ``(ModelSpec, defaults applied)``.

    ``source`` names the file in messages and in ``spec.source.url``; ``name`` defaults to the
    folder (for ``.../NAME/config.json``) or file stem; ``display_name`` to ``_name_or_path``.
    A supported model_type is read by its family's mapping; one of the generic reader's
    departures table (:data:`~llm_cost.specs.hf.generic.DEPARTURES`) by the standard vocabulary
    with its departures; any other through the standard vocabulary alone, only when every key is
    understood, and labelled ``read_generically``. Absent keys take the transformers
    configuration class's defaults (:mod:`llm_cost.specs.hf.defaults`). Raises SpecError naming
    the key for a missing required size, a wrong type, a shape key it cannot place, or (read
    generically) a key it does not understand.
    """
    from pydantic import ValidationError

    from llm_cost.specs.hf.defaults import defaults_for
    from llm_cost.specs.hf.generic import DEPARTURES, refuse_unknown_keys

    model_type = _model_type_of(config, source)
    family, mapper, fam, generic = _reader(model_type)
    for part in ("text_config", "vision_config", "audio_config"):
        if config.get(part) is not None and not isinstance(config[part], dict):
            raise SpecError(f"{source}: {part} must be a mapping or null (got {type(config[part]).__name__})")
    data = dict(config)
    text = data.get("text_config")
    dep = DEPARTURES.get(family)
    nested = isinstance(text, dict) and (
        family in _NESTED_TEXT or generic or (dep is not None and dep.vision is not None)
    )
    if nested:
        assert isinstance(text, dict)
        data.update({k: v for k, v in text.items() if k not in ("model_type", "architectures")})
        data.pop("text_config")
    tie_note = _tie_across(config, text if nested else None, data)
    defaults: list[str] = []
    notes: list[str] = [tie_note] if tie_note else []
    table = defaults_for(family, nested, dep.declared_as if dep is not None else None)
    c = _Config(data, source, family, defaults, notes, table=table)
    c.table_first = generic
    c.ignore("model_type", "architectures", "_name_or_path")
    c.read_aliases()
    check_inert_keys(c)
    check_values(c)
    try:
        if generic:
            refuse_unknown_keys(data, source)
        fields = mapper(c, fam)
    except ValidationError as exc:
        raise SpecError(validation_message(Path(source), exc)) from None
    except SpecError as exc:
        if not generic:
            raise
        reason = str(exc).removeprefix(f"{source}: ")
        raise SpecError(
            f"{source}: model_type {model_type!r} is not supported{_closest(config)}; read generically: {reason}"
        ) from None
    c.check_unplaced()
    spec = _spec_of(config, source, name, display_name, family, generic, defaults, notes, fields)
    return spec, defaults


def _model_type_of(config: object, source: str) -> str:
    """The ``model_type`` of a config.json's top level; SpecError for a top level that is not an
    object, a missing model_type, or architectures with a head other than the LM head."""
    if not isinstance(config, dict):
        raise SpecError(f"{source}: the top level must be a JSON object, not {type(config).__name__}")
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        what = (
            "is missing"
            if model_type in (None, "")
            else f"must be a family name (got {shown(json.dumps(model_type), 40)})"
        )
        raise SpecError(f"{source}: model_type {what}; supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    archs = config.get("architectures")
    if isinstance(archs, list):
        bad = [a for a in archs if isinstance(a, str) and not a.endswith(_HEADS)]
        if bad:
            raise SpecError(
                f"{source}: architectures {bad} carry a head other than the LM head; only causal-LM "
                "checkpoints (…ForCausalLM, …LMHeadModel) are modelled"
            )
    return model_type


def _spec_of(
    config: dict[str, Any],
    source: str,
    name: Optional[str],
    display_name: Optional[str],
    family: str,
    generic: bool,
    defaults: list[str],
    notes: list[str],
    fields: dict[str, Any],
):  # noqa: ANN202 - a ModelSpec (imported lazily)
    """The ModelSpec of a config's mapped ``fields``, its source noting how it was read (the
    defaults applied, the notes, read generically or not)."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import READ_GENERICALLY, ModelSpec, Source

    model_type = config["model_type"]
    title = display_name or _display_name(config)
    note = [
        f"Imported from a Hugging Face config.json (model_type {model_type}"
        + (f", _name_or_path {_one_line(config['_name_or_path'])}" if _display_name(config) else "")
        + ") by llm-cost."
    ]
    if generic:
        note.append(READ_GENERICALLY)
    if defaults:
        note.append("Defaults applied: " + "; ".join(defaults) + ".")
    if notes:
        note.append("Notes: " + "; ".join(notes) + ".")
    spec_name = name or _name_from(source)
    try:
        spec = ModelSpec.checked(
            name=spec_name,
            display_name=title or _stem_of(source),
            model_type=family,
            source=Source.checked(
                url=source,
                retrieved=date.today().isoformat(),
                note=" ".join(note),
                defaults=tuple(applied_default(line) for line in defaults),
            ),
            **fields,
        )
    except ValidationError as exc:
        raise SpecError(validation_message(Path(source), exc)) from None
    return spec


def applied_default(line: str):
    """An :class:`~llm_cost.specs.schema.AppliedDefault` from the reader's ``key = value (why)``
    line (``head_dim = 64 (absent; hidden_size / num_attention_heads)``)."""
    from llm_cost.specs.schema import AppliedDefault

    key, _, rest = line.partition(" = ")
    value, _, why = rest.partition(" (")
    why = why[:-1] if why.endswith(")") else why
    for lead in ("absent or null; ", "absent; "):
        why = why.removeprefix(lead)
    return AppliedDefault.checked(field=key, value=value, source=why or "absent")


def find_config(path: Path) -> Path:
    """The config.json that ``path`` names: the file itself, or ``config.json`` inside a folder.
    SpecError naming the path when the system cannot look at it (a name too long, a NUL)."""
    try:
        path.stat()
    except FileNotFoundError:
        raise SpecError(f"{shown(path)}: no such file") from None
    except (OSError, ValueError) as exc:
        raise SpecError(f"{shown(path)}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    if path.is_dir():
        inner = path / "config.json"
        if not inner.is_file():
            raise SpecError(f"{path}: folder has no config.json (give the path of a config.json or its folder)")
        return inner
    if not path.exists():
        raise SpecError(f"{path}: no such file")
    if not path.is_file():
        raise SpecError(f"{path}: not a regular file")
    return path


def _read_json(path: Path) -> Any:
    """A config.json parsed as Python's json module and transformers read it, a leading UTF-8
    byte-order mark skipped (``Infinity`` and
    ``NaN`` accepted: Nemotron-3-Super's ``"time_step_limit": [0.0, Infinity]``; a shape key that
    holds one is refused when read, as any non-integer is), no duplicate keys, its nesting and size
    bounded (see :func:`~llm_cost.specs.files.check_shape`); SpecError naming the file otherwise."""
    text = read_text(path, "a config.json", MAX_CONFIG_BYTES).removeprefix("\ufeff")  # a UTF-8 byte-order mark
    if not text.strip():
        raise SpecError(f"{path}: empty file; a config.json is a JSON object")

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise ValueError(f"duplicate key {key!r}")
            out[key] = value
        return out

    try:
        data = json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{shown(path)}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # Python's cap on digits: no config size is that long
            raise SpecError(f"{shown(path)}: invalid JSON: a number of more than 4,300 digits") from None
        raise SpecError(f"{shown(path)}: invalid JSON: {exc}") from None
    except RecursionError:
        raise SpecError(f"{shown(path)}: arrays or objects nested too deeply") from None
    check_shape(data, path, MAX_CONFIG_VALUES)
    return data


def read_config(path: Path) -> dict[str, Any]:
    """The parsed config.json that ``path`` names (the file, or ``config.json`` in a folder), read
    as :func:`load_hf_config` reads it; SpecError naming the file when it is not a JSON object."""
    file = find_config(Path(path))
    data = _read_json(file)
    if not isinstance(data, dict):
        raise SpecError(f"{file}: the top level must be a JSON object, not {type(data).__name__}")
    return data


def load_hf_config_verbose(
    path: Path, name: Optional[str] = None, source: Optional[str] = None, display_name: Optional[str] = None
):
    """``(ModelSpec, defaults applied)`` from a config.json or a folder holding one; ``name``
    overrides the spec name (default: the folder of a ``config.json``, else the file stem),
    ``source`` the origin recorded and named in messages (default: the file's path)."""
    file = find_config(Path(path))
    return hf_to_spec(with_modelopt_file(_read_json(file), file), source or str(file), name, display_name)


#: Where TensorRT Model Optimizer's exports keep their format beside a config.json that has no
#: ``quantization_config`` (vLLM's ModelOptFp8Config / ModelOptNvFp4Config read the same file).
MODELOPT_FILE = "hf_quant_config.json"


def with_modelopt_file(data: Any, file: Path) -> Any:
    """``data`` (a parsed config.json at ``file``) with the ``hf_quant_config.json`` beside it as its
    ``quantization_config`` (method ``modelopt``) when it has none of its own, top-level or in
    ``text_config``: NVIDIA's FP8 and NVFP4 checkpoints (nvidia/DeepSeek-V3.1-NVFP4,
    nvidia/Llama-3.1-70B-Instruct-FP8, ...) publish their format only there, and without it every
    weight would be weighed at torch_dtype. SpecError naming the file when it is not JSON."""
    extra = file.parent / MODELOPT_FILE
    if not isinstance(data, dict) or "quantization_config" in data or not extra.is_file():
        return data
    text = data.get("text_config")
    if isinstance(text, dict) and "quantization_config" in text:
        return data
    quant = _read_json(extra)
    if not isinstance(quant, dict):
        raise SpecError(f"{extra}: the top level must be a JSON object, not {type(quant).__name__}")
    return {**data, "quantization_config": {"quant_method": "modelopt", **quant, "read_from": MODELOPT_FILE}}


def load_hf_config(path: Path):
    """A :class:`~llm_cost.spec.ModelSpec` from a config.json or a folder holding one; SpecError
    (naming the file and the key) when it cannot be mapped exactly."""
    return load_hf_config_verbose(path)[0]


def is_hf_path(name_or_path: str) -> bool:
    """True when MODEL names a config.json (any ``.json`` file) or an existing folder (other than
    one named like a YAML spec, which files.read_yaml reports as "not a regular file")."""
    path = Path(name_or_path)
    suffix = path.suffix.lower()
    return suffix == ".json" or (path.is_dir() and suffix not in (".yaml", ".yml"))


def defaults_used(name_or_path: str) -> Optional[list[str]]:
    """For ``--verbose``: the defaults a config.json MODEL took (None for a shipped or YAML spec)."""
    if not is_hf_path(name_or_path):
        return None
    return load_hf_config_verbose(Path(name_or_path))[1]


def spec_to_yaml(spec) -> str:
    """Our YAML spec text for ``spec``: fields that differ from the schema defaults, plus the
    discriminators; ``validated(ModelSpec, yaml.safe_load(text)) == spec``."""
    import yaml

    from llm_cost.specs.declare import field_names, to_data

    data = to_data(spec, exclude_defaults=True)
    for key in ("attention", "linear_attention", "vision"):
        part = getattr(spec, key)
        if part is not None:
            data[key] = {"kind": part.kind, **{k: v for k, v in data.get(key, {}).items() if k != "kind"}}
    data["torch_dtype"] = spec.torch_dtype
    order = field_names(type(spec))
    data = {k: data[k] for k in order if k in data}

    class Dumper(yaml.SafeDumper):
        """Mappings in block style, lists in flow style (as the shipped specs are written)."""

    Dumper.add_representer(list, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True))
    Dumper.add_representer(dict, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v, flow_style=False))
    header = f"# {_one_line(f'{spec.display_name}: written by `llm-cost import` from {spec.source.url}')}\n"
    body = yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=100)
    return header + body
