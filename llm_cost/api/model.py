"""The API's questions about a model's spec: loading, parameters, KV cache, importing a
config.json, and the shipped catalogue (``llm-cost params``, ``kv``, ``import``, ``list``, ``show``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from llm_cost.api import checks, choices
from llm_cost.api.argtypes import GpuLike, ModelLike
from llm_cost.core.errors import InputError
from llm_cost.core.limits import MAX_CONFIG_DEPTH, MAX_CONFIG_VALUES
from llm_cost.core.units import plain_number, shown_number

if TYPE_CHECKING:
    from llm_cost.analyses.catalog import CatalogEntry, GPUEntry, ModelEntry, SpecView
    from llm_cost.analyses.import_spec import ImportResult
    from llm_cost.api.argtypes import KvDtypeArg, WeightsDtypeArg
    from llm_cost.model.kv import KVResult
    from llm_cost.model.layout import Layout
    from llm_cost.model.params import ParamsResult
    from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = [
    "load_model",
    "load_gpu",
    "defaults_used",
    "params",
    "checkpoint_of",
    "kv",
    "kv_sweep",
    "import_config",
    "catalog",
    "show",
]

#: Contexts ``kv`` reports when none are given (1K, 8K, 32K, 128K tokens).
KV_CONTEXTS = (1024, 8192, 32768, 131072)


def load_model(model: ModelLike) -> ModelSpec:
    """A model spec from a shipped name or alias, a YAML or config.json path (or its folder, a
    GGUF file, a Hub id), a spec built in Python (validated here, as a file is: its constructor
    checks only the field names), or a Hugging Face config.json as a dict. InputError if none works."""
    from llm_cost.specs import load
    from llm_cost.specs.schema import ModelSpec

    if isinstance(model, ModelSpec):
        return load.checked_spec(model, "model")
    if isinstance(model, dict):
        from llm_cost.specs.hf import hf_to_spec

        return hf_to_spec(plain_config(model), "a config dict")[0]
    if isinstance(model, os.PathLike):  # a pathlib.Path, as traces and workloads take one
        model = os.fspath(model)
    if not isinstance(model, str):
        raise InputError(f"model: {model!r} is not a name, a path, a config dict or a ModelSpec", fields=("model",))
    return load.load_model(model)


def load_gpu(gpu: GpuLike) -> HardwareSpec:
    """A GPU spec from a shipped name or alias, a YAML path, or a spec built in Python (validated
    here, as a file is). InputError if none works."""
    from llm_cost.specs import load
    from llm_cost.specs.schema import HardwareSpec

    if isinstance(gpu, HardwareSpec):
        return load.checked_spec(gpu, "gpu")
    if isinstance(gpu, os.PathLike):
        gpu = os.fspath(gpu)
    if not isinstance(gpu, str):
        raise InputError(f"gpu: {gpu!r} is not a name, a path or a HardwareSpec", fields=("gpu",))
    if "," in gpu and not load.looks_like_path(gpu):
        raise InputError(
            f"gpu: {gpu[:60]!r} names several GPUs; give one (`llm-cost serve MODEL --gpu h100,h200` "
            "and the API's serve_compare compare several side by side)",
            fields=("gpu",),
        )
    return load.load_gpu(gpu)


def defaults_used(model: str) -> Optional[list[str]]:
    """The family defaults a config.json ``model`` (a path, a folder, a Hub id or a name of the
    offline catalog) took, each as ``key = value (reason)``; None for a shipped or YAML spec."""
    from llm_cost.specs import hub
    from llm_cost.specs.hf import defaults_used as from_file
    from llm_cost.specs.load import catalog_name

    if not isinstance(model, str):
        raise InputError(f"model: {model!r} is not a name or path", fields=("model",))
    if (short := catalog_name(model)) is not None:
        from llm_cost.specs.catalog import load_catalog_model

        return load_catalog_model(short, verbose=True)[1]
    return hub.load_hub_model(model, verbose=True)[1] if hub.is_hub_id(model) else from_file(model)


def params(
    model: ModelLike,
    weights_dtype: Optional[WeightsDtypeArg] = None,
    layout: Optional[Layout] = None,
    checkpoint: object = None,
    check: bool = False,
    quantize_embeddings: bool = False,
) -> ParamsResult:
    """Parameter breakdown and weight bytes (``llm-cost params``): every stored trainable tensor,
    N_gemm, active parameters of an MoE, the weight bytes at ``weights_dtype`` (default the
    checkpoint's; a GGUF file's own types; int4 with its group scales,
    :func:`llm_cost.api.choices.weight_bits`), per GPU of ``layout``, and the stored tensors of
    ``checkpoint`` (a safetensors folder or a GGUF file; default ``model`` when it is a path,
    or, for a Hugging Face id online with huggingface_hub installed, its safetensors shard headers
    read from the Hub by range requests, no weight byte) compared with the description. A
    ``weights_dtype`` quantizes the matmul weights only, the embedding and LM head kept in 16 bits,
    unless ``quantize_embeddings``.
    ``check``: also build the model with transformers from the same config.json on the meta device
    and compare the counts by top-level module (:mod:`llm_cost.analyses.transformers_check`; the
    ``hf`` extra)."""
    import dataclasses

    from llm_cost.analyses.checkpoint import checkpoint_report
    from llm_cost.model.params import count_params

    spec, source = load_model(model), checkpoint_of(model, checkpoint)
    dtype = choices.weights_dtype_of(weights_dtype)
    gguf = source is not None and source.name.lower().endswith(".gguf")
    mixed = dtype is None and not gguf and spec.quantization is not None
    bits = (
        choices.weight_bits(spec, dtype, source=source, quantize_embeddings=quantize_embeddings)
        if dtype or gguf or mixed
        else None
    )
    shown = dtype.value if dtype else ("the GGUF file's types" if gguf else None)
    if mixed:
        assert spec.quantization is not None
        shown = f"{spec.quantization.weights_format}+{spec.quantization.kept_dtype}"
    report = checkpoint_report(spec, source) if source is not None else None
    if report is None and checkpoint is None and isinstance(model, str) and _is_hub_id(model):
        from llm_cost.analyses.checkpoint import hub_checkpoint_report

        report = hub_checkpoint_report(spec, model)  # the shard headers on the Hub, when online
    result = count_params(spec, bits, shown, choices.layout_of(layout), report)
    if not isinstance(check, bool):
        raise InputError(f"check: {check!r} is not true or false", fields=("check",))
    if check:
        from llm_cost.analyses.transformers_check import check_against_transformers

        config, named = config_of(model)
        result = dataclasses.replace(result, transformers=check_against_transformers(spec, config, named))
    return result


def plain_config(config: dict, path: str = "", depth: int = 0) -> dict:
    """A config dict as ``json.loads`` would give it: string keys, and values that are strings,
    numbers, booleans, None, lists or dicts; an integer or real of another type (numpy's int64,
    float32) becomes an int or float. InputError naming ``model`` and the key for anything else
    (an attacker's ``{3: 4}`` and ``object()`` reached a bare TypeError)."""
    if depth > MAX_CONFIG_DEPTH:
        raise InputError(
            f"model: the config dict nests past {MAX_CONFIG_DEPTH} levels at {path}; a config.json's do not",
            fields=("model",),
        )
    if depth == 0 and _too_many_values(config):
        raise InputError(
            f"model: the config dict holds more than {MAX_CONFIG_VALUES:,} values (in all its lists and mappings), "
            "the most a config.json read from a file may; a config.json holds a few thousand",
            fields=("model",),
        )
    out = {}
    for key, value in config.items():
        if not isinstance(key, str):
            from llm_cost.specs.files import shown

            raise InputError(
                f"model: the config dict's key {shown(repr(key), 40)}{' in ' + path if path else ''} is not a "
                "string; a config.json's keys are",
                fields=("model",),
            )
        out[key] = _plain_value(value, f"{path}.{key}" if path else key, depth)
    return out


def _too_many_values(config: dict) -> bool:
    """Whether ``config`` holds more than :data:`MAX_CONFIG_VALUES` values, counted down to
    :data:`MAX_CONFIG_DEPTH` levels (deeper, :func:`plain_config` refuses it) and stopping at the
    limit: an attacker's dict of 2,000,000 keys took 6.6 s to reach its real error, a list of 24
    million layer indices 9.3 s to be taken, where a config.json file that size is refused at once."""
    stack: list[tuple[object, int]] = [(config, 0)]
    count = 0
    while stack:
        value, depth = stack.pop()
        count += len(value) if isinstance(value, (dict, list, tuple)) else 0
        if count > MAX_CONFIG_VALUES:
            return True
        if depth < MAX_CONFIG_DEPTH and isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, (dict, list, tuple)))
        elif depth < MAX_CONFIG_DEPTH and isinstance(value, (list, tuple)):
            stack.extend((v, depth + 1) for v in value if isinstance(v, (dict, list, tuple)))
    return False


def _plain_value(value: object, path: str, depth: int) -> object:
    """One value of :func:`plain_config`, at ``path`` (dotted keys), ``depth`` levels down."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**64:
        raise InputError(  # an attacker's 10**5000 reached a ValueError in an error message's repr
            f"model: the config dict's {path} holds {shown_number(value)}, past the 64-bit integers a config.json's "
            "readers take",
            fields=("model",),
        )
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_"):  # numpy's bool (an
        return bool(value)  # attacker: refused as "a value of type bool; a config.json holds ... booleans")
    if isinstance(value, dict):
        return plain_config(value, path, depth + 1)
    if isinstance(value, (list, tuple)):
        if depth > MAX_CONFIG_DEPTH:
            return plain_config({}, path, depth + 1)  # refused there, naming the path
        return [_plain_value(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    plain = plain_number(value)  # numpy's int64 and float32 as Python's, as every count and real is read
    if isinstance(plain, (int, float)) and not isinstance(plain, bool):
        return _plain_value(plain, path, depth)
    raise InputError(
        f"model: the config dict's {path} holds a value of type {type(value).__name__}; a config.json holds strings, numbers, "
        "booleans, null, lists and objects",
        fields=("model",),
    )


def config_of(model: ModelLike) -> tuple[dict, str]:
    """The parsed config.json a model was read from and its name: a dict as given, a config.json
    path or folder, a Hub id's cached or downloaded file; InputError for a shipped or YAML spec or a
    GGUF file, which have none."""
    if isinstance(model, dict):
        return plain_config(model), "a config dict"
    from llm_cost.specs import hub
    from llm_cost.specs.hf import is_hf_path, read_config

    if isinstance(model, str) and hub.is_hub_id(model):
        path = hub.config_path(model)
        return read_config(path), model
    if isinstance(model, str) and is_hf_path(model):
        return read_config(Path(model)), model
    raise InputError(
        f"check: {shown_model(model)} has no config.json to build with transformers (give a config.json path or a Hub id)",
        fields=("check",),
    )


def shown_model(model: object) -> str:
    """``model`` as a message names it: its name, or its type for a built spec."""
    return repr(model) if isinstance(model, str) else f"a {type(model).__name__}"


def _is_hub_id(model: Any) -> bool:
    if not isinstance(model, str) or "/" not in model:  # a Hub id is ORG/NAME: a shipped name needs no hub module
        return False
    from llm_cost.specs import hub

    return hub.is_hub_id(model)


def checkpoint_of(model: object, checkpoint: object) -> Optional[Path]:
    """The checkpoint a model's stored tensors are read from: ``checkpoint``, else ``model``
    when it is a path string, else None."""
    if checkpoint is not None and not isinstance(checkpoint, (str, Path)):
        raise InputError(f"checkpoint: {checkpoint!r} is not a path", fields=("checkpoint",))
    chosen = checkpoint if checkpoint is not None else (model if isinstance(model, str) else None)
    return Path(str(chosen).strip()) if chosen is not None else None


def kv(
    model: ModelLike,
    contexts: Sequence[int] = KV_CONTEXTS,
    batch: int = 1,
    kv_dtype: Optional[KvDtypeArg] = None,
    layout: Optional[Layout] = None,
) -> KVResult:
    """KV-cache bytes per token and at each context of ``contexts`` for ``batch`` sequences
    (``llm-cost kv``); ``kv_dtype`` default bf16."""
    return kv_sweep(model, contexts, [checks.count(batch, "batch")], kv_dtype, layout)[0]


def kv_sweep(
    model: ModelLike,
    contexts: Sequence[int] = KV_CONTEXTS,
    batches: Sequence[int] = (1,),
    kv_dtype: Optional[KvDtypeArg] = None,
    layout: Optional[Layout] = None,
) -> list[KVResult]:
    """:func:`kv` at each batch of ``batches``; at most 10,000 points (InputError naming both)."""
    from llm_cost.model.kv import kv_cache

    contexts, batches = checks.counts(contexts, "contexts"), checks.counts(batches, "batches")
    checks.grid_size(len(batches) * len(contexts), ("batches", "contexts"))
    dtype, spec = choices.kv_dtype_of(kv_dtype), load_model(model)
    return [kv_cache(spec, contexts, dtype.bits, dtype.value, b, choices.layout_of(layout)) for b in batches]


def import_config(
    config: Union[str, Path], out: Union[str, Path], name: Optional[str] = None, force: bool = False
) -> ImportResult:
    """Write a YAML spec from a Hugging Face config.json (or its folder) to ``out``, recording the
    source and the family defaults used (``llm-cost import``); InputError if ``out`` exists and
    not ``force``."""
    from llm_cost.analyses.import_spec import import_config as write

    for value, what in ((config, "config"), (out, "out")):
        if not isinstance(value, (str, Path)) or not str(value).strip():
            raise InputError(f"{what}: {value!r} is not a path", fields=(what,))
    if name is not None and not isinstance(name, str):
        raise InputError(f"name: {name!r} is not a spec name", fields=("name",))
    return write(Path(config), Path(out), name, checks.flag(force, "force"))


def catalog(kind: object) -> Union[list[Union[ModelEntry, CatalogEntry]], list[GPUEntry]]:
    """The shipped ``models`` (then those of the offline catalog, with their sources and checkpoint
    totals) or ``gpus`` with their key figures (``llm-cost list``)."""
    from llm_cost.analyses.catalog import gpu_catalog, model_catalog

    chosen = checks.one_of(str(getattr(kind, "value", kind)).strip().lower(), "kind", ("models", "gpus"))
    return model_catalog() if chosen == "models" else gpu_catalog()


def show(name: str) -> SpecView:
    """A model or GPU spec as loaded and validated, with its sources (``llm-cost show``)."""
    from llm_cost.analyses.catalog import find_spec

    if not isinstance(name, str) or not name.strip():
        raise InputError(f"name: {name!r} is not a model or GPU name, alias or path", fields=("name",))
    return find_spec(name)
