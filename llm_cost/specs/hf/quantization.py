"""A config.json's ``quantization_config``: which matmul weights a checkpoint quantizes, in what
format, and which stay in 16 bits (a :class:`llm_cost.specs.schema.Quantization`).

Methods read (the format names of :class:`llm_cost.core.types.WeightFormat`):

* ``mxfp4`` (gpt-oss; transformers' Mxfp4Config): the experts in MXFP4, ``modules_to_not_convert``
  (attention, router, embedding, LM head) in BF16.
* ``fp8`` (DeepSeek-V3; transformers' FineGrainedFP8Config, vLLM's Fp8Config): every linear layer in
  FP8 E4M3, with an FP32 scale per 128 x 128 block when ``weight_block_size`` is [128, 128], else
  one scale per tensor; ``modules_to_not_convert`` / ``ignored_layers`` kept.
* ``modelopt`` (TensorRT Model Optimizer's hf_quant_config, in config.json or, for NVIDIA's
  exports, in ``hf_quant_config.json`` beside it: :func:`llm_cost.specs.hf.with_modelopt_file`):
  ``quant_algo`` NVFP4 or FP8, ``exclude_modules`` kept.
* ``compressed-tensors`` (llm-compressor): the first config group's ``weights`` (4-bit float in
  groups of 16: NVFP4; 8-bit float: FP8, in 128 x 128 blocks with the block strategy), ``ignore``
  kept.

* ``awq`` and ``gptq`` (AutoAWQ, GPTQModel / AutoGPTQ): ``bits`` 4 or 8 -> int4 / int8 in groups of
  ``group_size`` input rows (:func:`llm_cost.model.formats.format_bits`), ``modules_to_not_convert`` kept;
  other bit widths or group sizes are not modelled (noted, weighed at torch_dtype).

Always kept, as every one of these methods does: the embedding, the LM head, the router and the
vectors (norms, biases). A kept module names a group of tensors (``model.layers.*.self_attn``:
attention); an entry for one layer (``model.layers.0.mlp``) keeps its whole group, noted. Other
methods (bitsandbytes, HQQ, EXL2, ...) are not modelled here: the caller notes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

from llm_cost.core.errors import SpecError

#: Builds the error of a key's value: (key, what is wrong and what would do) -> the exception.
Fail = Callable[[str, str], Exception]


def _plain_error(key: str, message: str) -> Exception:
    """A SpecError naming ``key`` (for a caller without a file to name)."""
    return SpecError(f"{key} {message}")


__all__ = ["MODELLED_METHODS", "read_quantization"]

#: quant_method values this module reads.
MODELLED_METHODS = ("mxfp4", "fp8", "modelopt", "compressed-tensors", "awq", "gptq")
#: Weight-only integer methods: ``bits`` (AutoAWQ's older ``w_bit``) 4 or 8, in groups of ``group_size``
#: (``q_group_size``) input rows, -1 for one group.
_WEIGHT_ONLY = ("awq", "gptq")

#: (substring of a module name, the kept group), first match wins; None: a module always kept.
_MODULE_GROUPS: tuple[tuple[str, Optional[str]], ...] = (
    ("norm", None),  # a normalisation's weight is a vector, never quantised (Qwen3-*-FP8 list each
    # post_attention_layernorm: read as "attention", their attention was counted unquantised)
    ("lm_head", None),
    ("visual", "vision"),  # before the tower's own attention and MLP
    ("vision", "vision"),
    ("embed", None),
    ("gate_proj", "mlp"),  # before the router's "gate"
    ("gate_up", "routed_experts"),
    ("shared_expert", "shared_experts"),
    ("experts", "routed_experts"),
    ("router", None),
    ("gate", None),  # mlp.gate, block_sparse_moe.gate: the router
    ("indexers_proj", None),  # GLM-5's name of the DSA indexer's weights_proj, never quantised
    ("weights_proj", None),  # (llm_cost.model.formats)
    ("indexer", "indexer"),  # before "attn": self_attn.indexer of DeepSeek Sparse Attention
    ("linear_attn", "linear_attention"),
    ("mamba", "mamba"),
    ("mixer", "mamba"),
    ("attn", "attention"),
    ("attention", "attention"),
    ("mtp", "mtp"),
    ("mlp", "mlp"),
    ("feed_forward", "mlp"),
)


def _kept_group(module: str) -> tuple[bool, Optional[str]]:
    """(understood, the group) of one kept module name or ``re:`` pattern."""
    name = module.lower().removeprefix("re:")
    for part, group in _MODULE_GROUPS:
        if part in name:
            return True, group
    return False, None


def _format(method: str, q: dict[str, Any], fail: Fail, notes: list[str]) -> Optional[str]:
    """The WeightFormat name of the quantized matmuls, or None when the config does not say one
    this tool models."""
    if method == "mxfp4":
        return "mxfp4"
    if method in _WEIGHT_ONLY:
        bits = q.get("bits", q.get("w_bit"))
        group = q.get("group_size", q.get("q_group_size"))
        if type(bits) is int and not 1 <= bits <= 16:  # no checkpoint stores weights in 0 or 32 bits of integer
            raise fail("quantization_config.bits", f"must be a bit width from 1 to 16 (got {bits})")
        if type(group) is int and (group == 0 or group < -1):  # -1: one group per output channel
            raise fail("quantization_config.group_size", f"must be -1 (per channel) or at least 1 (got {group})")
        return {4: "int4", 8: "int8"}.get(bits) if type(bits) is int and _group_size(q) is not None else None
    if method == "fp8":
        return _fp8_format(q.get("weight_block_size"), fail, notes)
    if method == "modelopt":
        nested = _mapping(q.get("quantization"), "quantization_config.quantization", fail)
        algo = str(q.get("quant_algo") or nested.get("quant_algo") or "").upper()
        return {"NVFP4": "nvfp4", "FP8": "fp8"}.get(algo)
    groups = _mapping(q.get("config_groups"), "quantization_config.config_groups", fail)
    name, first = next(iter(groups.items()), ("", {}))
    group = _mapping(first, f"quantization_config.config_groups.{name}", fail)
    weights = _mapping(group.get("weights"), f"quantization_config.config_groups.{name}.weights", fail)
    bits, kind, size = weights.get("num_bits"), weights.get("type"), weights.get("group_size")
    if size is not None and (type(size) is not int or size == 0 or size < -1):  # QuantizationArgs' Optional[int]
        raise fail(
            f"quantization_config.config_groups.{name}.weights.group_size",
            f"must be an integer, -1 (per channel) or at least 1 (got {size!r})",
        )  # an attacker's 0, -16 and 1.5 were read as an unmodelled group
    if kind == "float" and bits == 4 and size == 16:
        return "nvfp4"
    if kind == "float" and bits == 8:
        block = weights.get("block_structure")
        if weights.get("strategy") == "block" and block is not None:
            key = f"quantization_config.config_groups.{name}.weights.block_structure"
            return "fp8_block" if _block_pair(block, key, fail) == [128, 128] else "fp8"
        return "fp8"
    return None


def _mapping(value: object, key: str, fail: Fail) -> dict[str, Any]:
    """``value`` as a mapping ({} for null); ``fail`` naming ``key`` for anything else."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise fail(key, f"must be a mapping or null (got {type(value).__name__})")
    return value


def _block_pair(block: object, key: str, fail: Fail) -> list[int]:
    """A block shape: two positive integers; ``fail`` naming ``key`` for anything else (as
    transformers' FineGrainedFP8Config refuses it: "a tuple of two positive integers")."""
    pair = list(block) if isinstance(block, (list, tuple)) else None
    if pair is None or len(pair) != 2 or not all(type(b) is int and b > 0 for b in pair):
        raise fail(key, f"must be two positive integers, e.g. [128, 128] (got {block!r})")
    return pair


def _fp8_format(block: object, fail: Fail, notes: list[str]) -> str:
    """``fp8_block`` for a ``weight_block_size`` of [128, 128], ``fp8`` (one scale per tensor) when
    there is none. Another block of two positive integers is weighed as per tensor, noted (the FP32
    scales of 128 x 128 blocks are 0.02% of the weights' bytes; smaller blocks' more). Anything
    else is refused (``fail``), as transformers' ``FineGrainedFP8Config.post_init`` refuses it: "a
    tuple of two positive integers"."""
    if block is None:
        return "fp8"
    pair = _block_pair(block, "quantization_config.weight_block_size", fail)
    if pair == [128, 128]:
        return "fp8_block"
    notes.append(
        f"quantization_config fp8: weight_block_size {pair} is not modelled; weighed with one scale per tensor "
        "(the block scales' bytes not counted)"
    )
    return "fp8"


def _group_size(q: dict[str, Any]) -> Optional[int]:
    """An AWQ/GPTQ config's group size (-1: one group per output channel), or None when it is not
    one (absent, 0, below -1, not an integer)."""
    group = q.get("group_size", q.get("q_group_size"))
    return group if type(group) is int and (group >= 1 or group == -1) else None


def _kept_modules(method: str, q: dict[str, Any], fail: Fail) -> list[str]:
    """The module names a config keeps unquantized (its method's key), checked: a list of strings
    or null; ``fail`` naming the key for anything else (a string would be read letter by letter)."""
    if method == "modelopt":
        nested = _mapping(q.get("quantization"), "quantization_config.quantization", fail)
        where = [("exclude_modules", q), ("quantization.exclude_modules", nested)]
    elif method == "compressed-tensors":
        where = [("ignore", q)]
    else:
        where = [("modules_to_not_convert", q), ("ignored_layers", q)]
    for key, owner in where:
        value = owner.get(key.rsplit(".", 1)[-1])
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
            raise fail(f"quantization_config.{key}", f"must be a list of module names or null (got {value!r:.60})")
        if value:
            return list(value)
    return []


def read_quantization(
    q: Optional[dict[str, Any]], torch_dtype: str, notes: list[str], fail: Fail = _plain_error
) -> dict[str, Any]:
    """``{"quantization": {...}}`` for a ModelSpec from a ``quantization_config`` ``q`` (empty when
    there is none or its method is not modelled); notes what was read and what was approximated.
    ``fail(key, message)`` builds the error of a value no checkpoint can have (the caller's, naming
    its file): an FP8 ``weight_block_size`` that is not two positive integers.
    ``torch_dtype`` is the checkpoint's dtype as read; the kept tensors are in it when it is a 16-
    or 32-bit dtype, else in BF16."""
    if not q:
        return {}
    method = str(q.get("quant_method", "unknown"))
    if method not in MODELLED_METHODS:
        return {}
    fmt = _format(method, q, fail, notes)
    if fmt is None:
        notes.append(
            f"quantization_config {method}: its weight format is not one this tool models; weights weighed at torch_dtype {torch_dtype}"
        )
        return {}
    kept: list[str] = []
    unknown, per_layer = [], []
    for module in _kept_modules(method, q, fail):
        understood, group = _kept_group(str(module))
        if not understood:
            unknown.append(str(module))
        elif group is not None and group not in kept:
            kept.append(group)
        if understood and group is not None and any(ch.isdigit() for ch in str(module)):
            per_layer.append(str(module))
    kept_dtype = torch_dtype if torch_dtype in ("bf16", "fp16", "fp32") else "bf16"
    origin = f" (from {q['read_from']} beside config.json)" if q.get("read_from") else ""
    notes.append(
        f"quantization_config {method}{origin}: matmul weights in {fmt} (scales counted), "
        f"{', '.join(kept) + ', ' if kept else ''}embedding, LM head, router and vectors in {kept_dtype}"
    )
    if per_layer:
        notes.append(f"quantization_config keeps single layers ({', '.join(per_layer[:3])}...): their whole group kept")
    if unknown:
        notes.append(f"quantization_config modules not matched to a tensor group (ignored): {', '.join(unknown[:5])}")
    out: dict[str, Any] = {"method": method, "weights_format": fmt, "kept": tuple(kept), "kept_dtype": kept_dtype}
    if method in _WEIGHT_ONLY:
        out["group_size"] = _group_size(q)
        notes.append(
            f"quantization_config {method}: groups of {out['group_size']} input rows, each with an FP16 scale and a "
            f"zero point at the weight's bits{', g_idx (32 bits per input row) not counted' if method == 'gptq' else ''}"
        )
    return {"quantization": out}
