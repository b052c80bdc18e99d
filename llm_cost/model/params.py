"""How many parameters a model has, where they are, and what they weigh at a dtype.

Every figure is a sum over :func:`llm_cost.structure.build`'s tensor list (seed 000 §六, seed
003 §01). Conventions: a parameter is an element of a tensor a checkpoint stores, trainable or
not (DeepSeek-V3's router bias ``e_score_correction_bias``, which its checkpoint stores and no
gradient updates, is counted; tied embedding counted once; buffers computed at load, such as
RoPE's ``inv_freq``, excluded); N_gemm counts matmul weights only (no embedding lookup, no
norms or biases; LM head included, tied or not); active parameters per token are all
parameters less the routed experts a token skips (DeepSeek's "37B activated").
"""

from __future__ import annotations

import re
from dataclasses import field
from fractions import Fraction
from typing import TYPE_CHECKING

from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import DTYPE_BITS, Dtype, LayerType
from llm_cost.core.units import exact_bits, to_bytes
from llm_cost.model.formats import MixedBits
from llm_cost.model.structure import GROUPS, Structure, build, kv_shared_unloaded_params
from llm_cost.specs.schema import (
    CATALOG_PENDING,
    READ_GENERICALLY,
    AppliedDefault,
    GQAAttention,
    MLAAttention,
    ModelSpec,
)

if TYPE_CHECKING:  # imported by count_params only for a layout: its module costs a cold start about 2 ms
    from llm_cost.model.layout import Layout, PerGPU

__all__ = ["BreakdownRow", "ParamsResult", "count_params", "unread_quantization"]


@record
class BreakdownRow:
    """One row of the breakdown: a group of tensors, per block and across blocks."""

    part: str  # decoder | vision | audio | mtp
    group: str
    label: str
    per_layer: int | None  # elements per block when every tensor of the row is in the same blocks
    layers: int | None  # how many blocks hold them (None: not per block, or varies)
    params: int
    share: float  # of the main model's parameters (decoder + vision + audio)


@record
class ParamsResult(Result):
    """Parameter counts of one model; bytes are exact at ``dtype`` (``bits`` per parameter)."""

    model: str
    dtype: str
    bits_per_param: float
    rows: list[BreakdownRow]
    total_params: int
    decoder_params: int
    vision_params: int
    audio_params: int  # the audio tower and its embedder (Gemma 4 E2B / E4B)
    n_gemm: int
    active_n_gemm: int
    params_without_input_embedding: int
    active_params: int
    routed_expert_params: int
    mtp_params: int
    mtp_checkpoint_copies: int
    checkpoint_params: int  # what the checkpoint files store: main + MTP + its copies + unloaded KV-shared K/V
    kv_shared_unloaded_params: int  # Gemma 4: the KV-shared layers' stored, never-loaded k/v projections and k norms
    weight_bytes: int | Fraction
    weight_flops_per_token: int  # 2 x active N_gemm
    non_routed_params: int  # all parameters less the routed experts
    mtp_share: float  # MTP unique parameters / main-model parameters
    conventions: list[Note] = field(default_factory=list)
    layout: Layout | None = None  # when --tp/--pp/--ep/--dp were given
    per_gpu: PerGPU | None = None  # weights per GPU by pipeline stage
    checkpoint: Result | None = None  # a checkpoint's stored vs described tensors (analyses.checkpoint_roles)
    #: every default the config.json reader applied (its keys left out or null): field, value, source
    defaults: list[AppliedDefault] = field(default_factory=list)
    transformers: Result | None = None  # --check: the count transformers builds (analyses.transformers_check)


def _attention_label(spec: ModelSpec) -> str:
    """The attention row's label: MLA with its latent, or MHA/MQA/GQA with its heads and widths
    (sliding KV heads, Gemma 4's full-attention geometry)."""
    att = spec.attention
    if isinstance(att, MLAAttention):
        return f"attention (MLA, {att.num_attention_heads} heads, latent {att.kv_lora_rank})"
    assert isinstance(att, GQAAttention)
    n_q, n_kv = att.num_attention_heads, spec.num_key_value_heads
    kind = "MHA" if n_q == n_kv else ("MQA" if n_kv == 1 else "GQA")
    kv = f"{n_kv}kv"
    if att.sliding_num_key_value_heads not in (None, n_kv):
        kv += f" ({att.sliding_num_key_value_heads}kv sliding)"
    width = f"{spec.head_dim}" if spec.v_head_dim == spec.head_dim else f"{spec.head_dim}, v {spec.v_head_dim}"
    if att.has_global_geometry:  # Gemma 4: the full-attention layers' own heads
        g_kv, g_h = spec.heads_of(LayerType.FULL_ATTENTION)
        k_eq_v = ", K = V" if att.global_k_eq_v else ""
        width += f"; full layers {g_kv}kv x {g_h}{k_eq_v}"
    return f"attention ({kind} {n_q}q/{kv} x {width})"


def _label(spec: ModelSpec, group: str) -> str:
    d, V = spec.hidden_size, spec.vocab_size
    if group == "embedding":
        return f"embedding [V={V:,}, d={d:,}]"
    if group == "position_embedding":
        return f"position embedding [{spec.max_position_embeddings:,}, {d:,}]"
    if group == "attention":
        return _attention_label(spec)
    if group == "linear_attention":
        return "linear attention (Gated DeltaNet)"
    if group == "mamba":
        m = spec.mamba
        assert m is not None
        return f"Mamba-2 mixer ({m.num_heads} heads x {m.head_dim}, state {m.state_size})"
    if group == "short_conv":
        sc = spec.short_conv
        assert sc is not None
        return f"short convolution (gated, kernel {sc.conv_kernel})"
    if group == "mlp":
        mlp = spec.mlp
        assert mlp is not None
        return f"MLP ({'gated, 3' if mlp.gated else '2'} x d x {mlp.intermediate_size:,})"
    if group == "router":
        return "router"
    if group == "routed_experts":
        moe = spec.moe
        assert moe is not None
        width = f"l={moe.moe_latent_size:,}" if moe.moe_latent_size else "d"
        return f"routed experts ({moe.num_experts} x {3 if moe.expert_gated else 2} x {width} x {moe.moe_intermediate_size:,})"
    if group == "shared_experts":
        return "shared experts"
    if group == "moe_latent":
        return "latent projections (d -> l -> d)"
    if group == "lm_head":
        return "LM head (tied to embedding)" if spec.tie_word_embeddings else "LM head (untied)"
    return {
        "norms": "norms (in blocks)",
        "final_norm": "final norm",
        "biases": "biases",
        "per_layer_embedding": "per-layer embeddings (PLE)",
        "vision.patch_embed": "vision: patch embedding",
        "vision.blocks": "vision: blocks",
        "vision.merger": "vision: merger",
        "audio.subsample": "audio: sub-sampling convolutions",
        "audio.blocks": "audio: Conformer blocks",
        "audio.projection": "audio: output projection and embedder",
        "mtp": "MTP modules (unique)",
    }.get(group, group)


def _rows(structure: Structure, total: int) -> list[BreakdownRow]:
    order = {g: i for i, g in enumerate(GROUPS)}
    keys: list[tuple[str, str]] = []
    for t in structure.tensors:
        if t.part == "mtp_copy":
            continue
        key = (t.part, t.group)
        if key not in keys:
            keys.append(key)
    part_rank = {"decoder": 0, "vision": 1, "audio": 2, "mtp": 3}
    keys.sort(key=lambda k: (part_rank[k[0]], order.get(k[1], len(order))))
    rows = []
    for part, group in keys:
        members = [t for t in structure.tensors if t.part == part and t.group == group]
        params = sum(t.total for t in members)
        layer_counts = {t.layers for t in members}
        uniform = len(layer_counts) == 1 and 0 not in layer_counts
        layers = layer_counts.pop() if uniform else None
        per_layer = sum(t.per_layer for t in members if t.stored) if uniform else None
        rows.append(BreakdownRow(part, group, _label(structure.spec, group), per_layer, layers, params, params / total))
    return rows


def _weight_bytes_note(bits: int | float | Fraction, dtype: str) -> Note:
    """How the weight bytes were weighed: one format for all, or the checkpoint's by group."""
    if not isinstance(bits, MixedBits):
        return note("params.weight_bytes", bits=float(bits), dtype=dtype)
    q = bits.quantization
    kept = "".join(f"{group}, " for group in q.kept)
    return note(
        "params.weight_bytes_mixed",
        method=q.method,
        format=q.weights_format,
        kept=kept,
        kept_dtype=q.kept_dtype,
        bits=float(bits),
        quantized=None if bits.quantized_bits is None else float(bits.quantized_bits),
    )


def unread_quantization(spec: ModelSpec) -> str | None:
    """The method of a config's ``quantization_config`` the reader did not model (its weights are
    then weighed at ``torch_dtype``; the reader says so in the spec's source note), or None."""
    if spec.quantization is not None:
        return None
    found = re.search(r"quantization_config ([\w.-]+)", spec.source.note or "")
    return found.group(1) if found else None


def count_params(
    spec: ModelSpec,
    bits: int | float | Fraction | None = None,
    dtype: str | None = None,
    layout: Layout | None = None,
    checkpoint: Result | None = None,
) -> ParamsResult:
    """Count ``spec``'s parameters and weigh them at ``bits`` per parameter (default: the
    checkpoint's ``torch_dtype``; a :class:`~llm_cost.model.formats.MixedBits` weighs each tensor in
    its group's format); with ``layout``, also the weights on one GPU of each pipeline
    stage. InputError only for a layout that cannot hold the model."""
    dtype = dtype or spec.torch_dtype
    bits_given = bits
    bits = bits if bits is not None else Dtype(dtype).bits
    s = build(spec)
    total = s.total_params
    embedding = sum(t.total for t in s.tensors if t.part == "decoder" and t.group == "embedding")
    weight_bytes = to_bytes(total, exact_bits(bits))
    conventions = [note("params.counted"), note("params.n_gemm"), _weight_bytes_note(bits, str(dtype))]
    if str(dtype) in ("fp8", "fp4") and not isinstance(bits, MixedBits) and bits == DTYPE_BITS[Dtype(dtype)]:
        conventions.append(note("params.no_scales", dtype=str(dtype)))
    if READ_GENERICALLY in (spec.source.note or ""):
        conventions.append(note("params.read_generically", model_type=spec.model_type))
    pending = (spec.source.note or "").partition(CATALOG_PENDING)[2].strip()
    if pending:
        conventions.append(note("params.catalog_pending", reason=pending))
    unread = unread_quantization(spec)
    if unread and bits_given is None:
        conventions.append(note("params.quantization_unread", method=unread, dtype=str(dtype)))
    if spec.moe is not None:
        conventions.append(note("params.active"))
    if spec.mtp is not None:
        conventions.append(note("params.mtp", copies=s.mtp_copies))
    unloaded = kv_shared_unloaded_params(spec)
    if unloaded:
        conventions.append(note("params.kv_shared_unloaded"))
    if layout is not None:
        from llm_cost.model.layout import per_gpu
    return ParamsResult(
        model=spec.name,
        dtype=dtype,
        bits_per_param=float(bits),
        rows=_rows(s, total),
        total_params=total,
        decoder_params=s.decoder_params,
        vision_params=s.vision_params,
        audio_params=s.audio_params,
        n_gemm=s.n_gemm,
        active_n_gemm=int(s.active_gemm),
        params_without_input_embedding=s.decoder_params - embedding,
        active_params=int(s.active_params),
        routed_expert_params=s.routed_expert_params,
        mtp_params=s.mtp_params,
        mtp_checkpoint_copies=s.mtp_copies,
        checkpoint_params=total + s.mtp_params + s.mtp_copies + unloaded,
        kv_shared_unloaded_params=unloaded,
        weight_bytes=weight_bytes,
        weight_flops_per_token=2 * int(s.active_gemm),
        non_routed_params=total - s.routed_expert_params,
        mtp_share=s.mtp_params / total,
        conventions=conventions,
        layout=layout,
        per_gpu=per_gpu(spec, layout, exact_bits(bits)) if layout is not None else None,
        checkpoint=checkpoint,
        defaults=list(spec.source.defaults) if spec.source is not None else [],
    )
