"""Forward-pass FLOPs by operator group (seed 000 §八-§九, seed 003 §02, §04-§05).

A view of :func:`llm_cost.workload.step.build_step` on one GPU: ``batch`` sequences each add
``new_tokens`` tokens after ``cached`` tokens already in the cache (prefill: cached = 0;
decode: new_tokens = 1). FLOPs are 2 per multiply-add; the conventions (causal or full
attention, LM head on every position or the last, MLA plain or absorbed) are those of the
step. Norms, activations, softmax and residual adds are not counted (a few FLOPs per element).

``weight_flops_params`` names the parameters behind "2 x N" weight FLOPs per token under the
documents' three conventions.
"""

from __future__ import annotations

from dataclasses import field

from llm_cost.core.choices import AttentionMask, Logits, MLAForm, WeightFlops
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import OpKind, OpRole, Part, TensorGroup, TensorKind
from llm_cost.core.units import Number, quotient
from llm_cost.model.structure import Structure
from llm_cost.specs.schema import MLAAttention, ModelSpec
from llm_cost.workload.step import SeqGroup, Step, build_step

__all__ = ["OP_NAMES", "Op", "ForwardFlops", "forward_flops", "weight_flops_params"]

#: Display names of the matmul groups of the structure.
OP_NAMES: dict[str, str] = {
    TensorGroup.ATTENTION: "attention projections",
    TensorGroup.INDEXER: "sparse-attention indexer projections",
    TensorGroup.LINEAR_ATTENTION: "linear-attention projections",
    TensorGroup.SHORT_CONV: "short-convolution projections",
    TensorGroup.MLP: "MLP",
    TensorGroup.ROUTER: "router",
    TensorGroup.ROUTED_EXPERTS: "routed experts (k of E)",
    TensorGroup.SHARED_EXPERTS: "shared experts",
    TensorGroup.MOE_LATENT: "latent MoE projections",
    TensorGroup.LM_HEAD: "LM head",
}


@record
class Op:
    """One group of operators summed over the layers that have it."""

    name: str
    kind: OpKind
    group: str  # the structure group of a matmul ("attention", "mlp", "routed_experts", ...); "" otherwise
    layers: int
    flops: int


@record
class ForwardFlops(Result):
    """FLOPs of one forward pass over ``batch`` sequences (exact integers)."""

    model: str
    batch: int
    new_tokens: int
    cached: int
    attention: AttentionMask
    logits: Logits
    mla_form: MLAForm
    ops: list[Op]
    linear_flops: int  # weight matmuls in the blocks (per layer x layers)
    attention_flops: int  # QK^T + AV over all layers (plus recurrences)
    lm_head_flops: int
    total_flops: int
    layers: int  # decoder layers
    linear_flops_per_layer: Number  # mean over the layers (an int when the layers share it)
    attention_flops_per_layer: Number
    block_flops: int  # linear + attention, all layers
    conventions: list[Note] = field(default_factory=list)


def weight_flops_params(structure: Structure, convention: WeightFlops = WeightFlops.GEMM) -> int:
    """Parameters behind "2 x N" weight FLOPs per token under a convention (exact for dense
    models; active parameters are whole for every shipped MoE):
    ``gemm`` = active N_gemm (matmul weights; the default), ``non_embedding`` = N less the
    input embedding (seed 003's "8B is 2 x 7.5B"), ``total`` = N (seed 003 §05 and §09 for 70B)."""
    if convention == WeightFlops.GEMM:
        return int(structure.active_gemm)
    if convention == WeightFlops.TOTAL:
        return int(structure.active_params)
    embedding = sum(
        t.total
        for t in structure.tensors
        if t.part == Part.DECODER and t.kind == TensorKind.LOOKUP and t.group == TensorGroup.EMBEDDING
    )
    return int(structure.active_params) - embedding


def _grouped_ops(step: Step) -> list[Op]:
    """A step's operators with FLOPs summed by kind and tensor group (GEMMs) or role (the others),
    each with its most layers."""
    groups: dict[tuple[OpKind, str], list[int]] = {}
    names: dict[tuple[OpKind, str], str] = {}
    for op in step.ops:
        if not op.flops:
            continue
        key = (op.kind, op.group if op.kind == OpKind.GEMM else op.role)  # GEMMs by tensor group
        acc = groups.setdefault(key, [0, 0])
        acc[0] += int(op.flops)
        acc[1] = max(acc[1], op.layers)
        names[key] = OP_NAMES.get(op.group, op.group) if op.kind == OpKind.GEMM else op.name
    return [
        Op(names[key], key[0], key[1] if key[0] == OpKind.GEMM else "", layers, flops)
        for key, (flops, layers) in groups.items()
    ]


def _conventions(spec: ModelSpec, attention: AttentionMask, logits: Logits, mla_form: MLAForm) -> list[Note]:
    """The counting conventions of a forward pass: what is counted, the mask, the logits, and the
    MLA form or sparse attention the model's attention takes."""
    conventions = [
        note("flops.counting"),
        note(f"attention.{attention}"),
        note(f"logits.{logits}"),
        note("flops.not_counted"),
    ]
    if isinstance(spec.attention, MLAAttention):
        conventions.append(note("mla.form", form=str(mla_form)))
        if spec.attention.indexer is not None:
            conventions.append(note("attention.sparse", topk=spec.attention.indexer.index_topk))
    elif spec.attention.indexer is not None:  # MiniMax-M3's block-sparse attention
        idx = spec.attention.indexer
        conventions.append(
            note(
                "attention.block_sparse",
                blocks=idx.index_topk,
                block=idx.index_block_size,
                local=idx.index_local_blocks + idx.index_init_blocks,
                keys=idx.keys_per_query,
            )
        )
    return conventions


def forward_flops(
    spec: ModelSpec,
    new_tokens: int,
    cached: int = 0,
    batch: int = 1,
    attention: AttentionMask = AttentionMask.CAUSAL,
    logits: Logits = Logits.LAST,
    mla_form: MLAForm = MLAForm.PLAIN,
    detail: bool = True,
) -> ForwardFlops:
    """FLOPs of one forward pass of ``batch`` sequences, ``new_tokens`` each after ``cached``,
    under the step's conventions (:func:`~llm_cost.workload.step.build_step`); without ``detail``
    the result's ``ops`` and ``conventions`` are empty (a grid's row of totals), its figures the same."""
    step = build_step(
        spec, [SeqGroup(batch, new_tokens, cached)], logits=logits, attention=attention, mla_form=mla_form
    )
    ops = _grouped_ops(step)
    lm_head = sum(int(op.flops) for op in step.ops if op.role == OpRole.LM_HEAD)
    linear = sum(op.flops for op in ops if op.kind == OpKind.GEMM) - lm_head
    attention_flops = sum(op.flops for op in ops if op.kind in (OpKind.ATTENTION, OpKind.RECURRENCE))
    if not detail:
        ops = []
    conventions = _conventions(spec, attention, logits, mla_form) if detail else []
    return ForwardFlops(
        spec.name,
        batch,
        new_tokens,
        cached,
        attention,
        logits,
        mla_form,
        ops,
        linear,
        attention_flops,
        lm_head,
        linear + attention_flops + lm_head,
        spec.num_hidden_layers,
        quotient(int(linear), spec.num_hidden_layers),
        quotient(int(attention_flops), spec.num_hidden_layers),
        linear + attention_flops,
        conventions,
    )
