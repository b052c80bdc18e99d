"""Stored tensors (a checkpoint's headers) against the tensors the config describes.

The structure names tensors generically (``layers.*.self_attn.q_proj.weight``); checkpoints name
them per family (``model.layers.3.self_attn.q_proj.weight``, ``backbone.layers.3.mixer.A_log``,
fused ``qkv_proj`` / ``gate_up_proj`` ...). So both sides are reduced to *roles* and compared by
element totals per role: the projection name with its fused forms merged (q/k/v, gate/up, down,
o), block norms pooled (every family names them differently), the router with its correction bias,
embedding, LM head, final norm, everything of the vision tower as one role, and layers past
``num_hidden_layers`` (DeepSeek-style MTP) or under ``mtp.`` (MiMo-V2, Qwen3.5) as one. A role whose totals differ, or that exists on one
side only, is reported: stored but not described ("unexplained") or described but not stored
("missing"). FP8/NVFP4 scale tensors (``*_scale_inv``, ``*weight_scale*``, ``*input_scale``) are
not parameters: they are counted and weighed apart; nor are rotary ``inv_freq`` buffers (older
conversions save the frequencies the config's ``rope_theta`` implies), counted apart too. An
index's ``total_size`` is compared with the bytes of the tensors its shards hold.

:mod:`llm_cost.analyses.checkpoint` imports this module only when a checkpoint is given.
"""

from __future__ import annotations

import re
from dataclasses import field, replace
from pathlib import Path

from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Part
from llm_cost.model.structure import Structure, build
from llm_cost.specs.checkpoint import Checkpoint
from llm_cost.specs.schema import ModelSpec

__all__ = ["RoleDiff", "CheckpointReport", "stored_role", "described_role", "compare", "compare_gguf"]

_PREFIXES = ("model.", "language_model.", "backbone.", "transformer.", "lm.")
_VISION = (
    "visual.",
    "vision_tower.",
    "vision_model.",
    "multi_modal_projector.",
    "vision.",
    "mm_projector.",
    "vision_embed",
    "embed_vision.",  # Gemma 4's Gemma4MultimodalEmbedder of the vision tower
    "patch_merge.",  # MiniMax-M3's MiniMaxM3VLPatchMerger
)
#: Gemma 4's audio encoder and its embedder (transformers models/gemma4/modeling_gemma4.py).
_AUDIO = ("audio_tower.", "embed_audio.")
_LAYER = re.compile(r"(?:^|\.)(?:layers|h|blocks|blk)\.(\d+|\*)\.")
_SCALE = re.compile(r"(_scale_inv|weight_scale(_2)?|input_scale|_scale)$")
#: Buffers some checkpoints store beside the parameters: rotary inverse frequencies.
_BUFFER = re.compile(r"(?:^|\.)inv_freq$")
_BLOCK_NORMS = {
    "input_layernorm",
    "post_attention_layernorm",
    "pre_feedforward_layernorm",
    "post_feedforward_layernorm",
    "norm1",
    "norm2",
    "norm3",
    "norm4",
    "ln_1",
    "ln_2",
    "norm",
    "layernorm",
    "attention_norm",
    "ffn_norm",
    "attn_norm",
    "post_attention_norm",
    "post_ffw_norm",
}
_MERGE = {
    **dict.fromkeys(("q_proj", "k_proj", "v_proj", "qkv_proj", "query_key_value", "c_attn", "W_pack", "wqkv"), "qkv"),
    **dict.fromkeys(("gate_proj", "up_proj", "gate_up_proj", "w1", "w3", "input_linear", "c_fc"), "gate_up"),
    **dict.fromkeys(("down_proj", "w2", "output_linear"), "down"),
    **dict.fromkeys(("gate", "router", "layer", "e_score_correction_bias", "ffn_gate_inp", "exp_probs_b"), "router"),
    # llama.cpp's GGUF names (gguf-py MODEL_TENSOR)
    **dict.fromkeys(("attn_q", "attn_k", "attn_v", "attn_qkv"), "qkv"),
    **dict.fromkeys(
        ("ffn_gate", "ffn_up", "ffn_gate_exps", "ffn_up_exps", "ffn_gate_up_exps", "ffn_gate_shexp", "ffn_up_shexp"),
        "gate_up",
    ),
    **dict.fromkeys(("ffn_down", "ffn_down_exps", "ffn_down_shexp"), "down"),
    "attn_output": "o_proj",
    "attention_sink_bias": "sinks",  # MiMo-V2's name (transformers conversion_mapping renames it sinks)
    "attn_q_norm": "q_norm",
    "attn_k_norm": "k_norm",
}
_TOP = {
    **dict.fromkeys(("embed_tokens", "wte", "embeddings", "word_embeddings", "tok_embeddings"), "embedding"),
    **dict.fromkeys(("norm", "norm_f", "ln_f", "final_layernorm", "final_norm"), "final_norm"),
    **dict.fromkeys(("embed_positions", "wpe"), "position_embedding"),
    "lm_head": "lm_head",
    "output": "lm_head",
    "token_embd": "embedding",
    "output_norm": "final_norm",
}


@record
class RoleDiff:
    """A role whose stored and described element totals differ (0 when absent on that side)."""

    role: str
    stored: int
    described: int


@record
class CheckpointReport(Result):
    """A checkpoint's stored totals and how they match the described structure."""

    folder: str
    files: int
    tensors: int
    stored_params: int  # elements of every stored tensor except scales
    stored_bytes: int  # bytes of those tensors
    scale_tensors: int
    scale_elements: int
    scale_bytes: int
    by_dtype: dict[str, list[int]]  # dtype -> [elements, bytes] (parameters only)
    described_params: int  # the structure's checkpoint elements (main model + MTP + its copies)
    unexplained: list[RoleDiff]
    missing: list[RoleDiff]
    index_total_size: int | None
    conventions: list[Note] = field(default_factory=list)
    buffer_tensors: int = 0  # rotary inv_freq buffers: stored, not parameters
    buffer_elements: int = 0
    tensor_bytes: int = 0  # every stored tensor's bytes (parameters, scales, buffers): an index's total_size

    @property
    def matches(self) -> bool:
        return not self.unexplained and not self.missing and self.stored_params == self.described_params

    @property
    def index_total_disagrees(self) -> bool:
        """The index's ``total_size`` is not the bytes of the tensors its shards hold."""
        return self.index_total_size is not None and self.index_total_size != self.tensor_bytes


def _last(name: str) -> str:
    parts = name.split(".")
    return parts[-2] if len(parts) > 1 and parts[-1] in ("weight", "bias") else parts[-1]


def _role(name: str, layers: int) -> str:
    for p in _PREFIXES:
        while name.startswith(p):
            name = name[len(p) :]
    if name.startswith(_VISION):
        return "vision"
    if name.startswith(_AUDIO):
        return "audio"
    if name.startswith("mtp."):  # MTP layers kept apart (MiMo-V2's model.mtp.layers.*, Qwen3.5's mtp.*)
        return "mtp"
    m = _LAYER.search(name)
    last = _last(name)
    if m is None:
        return _TOP.get(last, last)
    if m.group(1) != "*" and int(m.group(1)) >= layers:
        return "mtp"
    if last in _BLOCK_NORMS:
        return "layers: norms"
    return f"layers: {_MERGE.get(last, last)}"


def stored_role(name: str, layers: int) -> str | None:
    """Role of a checkpoint tensor name, or None for a scale tensor or a buffer (not parameters)."""
    return None if _SCALE.search(name) or _BUFFER.search(name) else _role(name, layers)


def described_role(structure: Structure, name: str, part: Part) -> str:
    """Role of a structure tensor."""
    if part == Part.VISION:
        return "vision"
    if part == Part.AUDIO:
        return "audio"
    if part in (Part.MTP, Part.MTP_COPY):
        return "mtp"
    return _role(name, structure.spec.num_hidden_layers)


def compare(spec: ModelSpec, ckpt: Checkpoint) -> CheckpointReport:
    """Stored totals of ``ckpt`` and the roles where they differ from ``spec``'s structure."""
    s = build(spec)
    L = spec.num_hidden_layers
    stored: dict[str, int] = {}
    by_dtype: dict[str, list[int]] = {}
    scales = [0, 0, 0]
    params = nbytes = buffers = buffer_elements = 0
    for t in ckpt.tensors:
        if _BUFFER.search(t.name):
            buffers += 1
            buffer_elements += t.numel
            continue
        role = stored_role(t.name, L)
        if role is None:
            scales[0] += 1
            scales[1] += t.numel
            scales[2] += t.nbytes
            continue
        stored[role] = stored.get(role, 0) + t.numel
        row = by_dtype.setdefault(t.dtype, [0, 0])
        row[0] += t.numel
        row[1] += t.nbytes
        params += t.numel
        nbytes += t.nbytes
    described: dict[str, int] = {}
    for tensor in s.tensors:
        if tensor.total:
            role = described_role(s, tensor.name, tensor.part)
            described[role] = described.get(role, 0) + tensor.total
    unexplained = [RoleDiff(r, n, described.get(r, 0)) for r, n in sorted(stored.items()) if described.get(r) != n]
    missing = [RoleDiff(r, 0, n) for r, n in sorted(described.items()) if r not in stored]
    conventions = [note("checkpoint.stored_safetensors"), note("checkpoint.matched_by_role")]
    return CheckpointReport(
        ckpt.folder,
        len(ckpt.files),
        len(ckpt.tensors),
        params,
        nbytes,
        scales[0],
        scales[1],
        scales[2],
        by_dtype,
        s.total_params + s.mtp_params + s.mtp_copies,
        unexplained,
        missing,
        ckpt.index_total_size,
        conventions,
        buffers,
        buffer_elements,
        ckpt.tensor_bytes,
    )


def compare_gguf(spec: ModelSpec, g) -> CheckpointReport:
    """:func:`compare` for a GGUF file (``llm_cost.specs.gguf.GGUFFile``): its tensors by ggml type
    (Q4_K, Q8_0, F16 ...) with their exact bytes, against the structure its metadata describes."""
    from llm_cost.specs.checkpoint import Checkpoint, StoredTensor

    ckpt = Checkpoint(
        g.path,
        (Path(g.path).name,),
        tuple(StoredTensor(t.name, t.type, t.shape, t.n_bytes, Path(g.path).name) for t in g.tensors),
        None,
    )
    report = compare(spec, ckpt)
    conventions = [note("checkpoint.stored_gguf")] + report.conventions[1:]
    return replace(report, conventions=conventions)
