"""A model on a multi-GPU layout: memory per GPU and the layout's decode step; the smallest
layouts that fit (Megatron-LM / vLLM sharding, see :mod:`llm_cost.model.layout`).

Memory is counted as :mod:`llm_cost.analyses.capacity` says (by default a serving engine's
accounting: physical capacity x 0.9 less weights, workspace and a runtime reserve, paged KV).
The decode step is :func:`llm_cost.analyses.roofline.decode_step` with the layout: the same
operators, per GPU, with the collectives (TP all-reduce, EP all-to-all, PP send) as operators.
"""

from __future__ import annotations

import math
from dataclasses import field
from fractions import Fraction

from llm_cost.analyses.capacity import (
    DEPLOYMENT,
    KvRoom,
    MemoryPolicy,
    kv_room,
    paged_tokens,
    policy_note,
    tight_memory_note,
)
from llm_cost.analyses.memory import Fit
from llm_cost.analyses.roofline import DecodeStep, decode_step
from llm_cost.analyses.serving.replicas import node_gpus
from llm_cost.core.errors import InputError
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Dtype
from llm_cost.model.formats import weight_bits_of
from llm_cost.model.layout import Layout, PerGPU, per_gpu, stage_kv_bytes
from llm_cost.perf.profile import Profile
from llm_cost.perf.timemodel import DEFAULT_NETWORK_GB_S
from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = ["Deployment", "deployment", "smallest_layouts", "FitReport"]


@record
class Deployment(Result):
    """A model on ``layout`` x ``gpu``: memory per GPU by stage, the KV room and the largest
    concurrency at ``context``, and the layout's decode step."""

    model: str
    gpu: str
    layout: Layout
    weight_bits: float
    kv_bits: int
    batch: int
    context: int
    sequences_per_replica: int
    per_gpu: PerGPU
    stage_used_bytes: list[int | Fraction]  # weights + KV on one GPU of each stage
    kv_bytes_per_gpu: int | Fraction  # the fullest stage: its sequences' KV (windows honoured) and fixed state
    used_bytes: int | Fraction  # weights + KV + workspace + reserve on the fullest GPU
    headroom_bytes: int | Fraction  # usable memory less what is used (negative: does not fit)
    shortfall_bytes: int | Fraction  # what is missing when it does not fit (0 when it does)
    fits: bool
    room: KvRoom  # the fullest GPU's KV budget and the concurrency it holds at ``context``
    max_concurrency: int  # sequences of ``context`` tokens the layout holds (all DP replicas)
    step: DecodeStep
    conventions: list[Note] = field(default_factory=list)


def deployment(
    spec: ModelSpec,
    gpu: HardwareSpec,
    layout: Layout,
    batch: int = 1,
    context: int = 8192,
    weight_bits: int | float | Fraction = 16,
    kv_bits: int = 16,
    policy: MemoryPolicy = DEPLOYMENT,
    dtype: Dtype = Dtype.BF16,
    network_gb_s: float = DEFAULT_NETWORK_GB_S,
    profile: Profile | None = None,
) -> Deployment:
    """Per-GPU memory of ``spec`` on ``layout`` and its decode step at ``batch`` x ``context``.

    InputError for a layout that cannot hold the model (see :func:`~llm_cost.model.layout.validate_layout`)."""
    bits = weight_bits_of(weight_bits, limit=True)
    p = per_gpu(spec, layout, bits, kv_bits)
    seqs = math.ceil(batch / layout.dp)
    room = kv_room(spec, gpu, [context], layout=layout, policy=policy, weight_bits=bits, kv_bits=kv_bits)
    kv = [seqs * k for k in _paged_stage_kv(spec, layout, context, kv_bits, policy)]
    used = [w + k for w, k in zip(p.weight_bytes, kv)]
    overhead = room.workspace_bytes + room.reserve_bytes
    step = decode_step(
        spec, gpu, batch, context, dtype, bits, kv_bits, layout=layout, network_gb_s=network_gb_s, profile=profile
    )
    headroom = room.usable_bytes - overhead - max(used)
    conventions = [
        note("layout.sharding"),
        policy_note(gpu, policy),
        note("layout.memory", bits=float(bits), kv_bits=kv_bits, sequences=seqs),
        *tight_memory_note(headroom, f"TP {layout.tp} x PP {layout.pp} at batch {batch} x {context:,} tokens"),
    ]
    return Deployment(
        spec.name,
        gpu.name,
        layout,
        float(bits),
        kv_bits,
        batch,
        context,
        seqs,
        p,
        used,
        max(kv),
        max(used) + overhead,
        headroom,
        max(0, -headroom),
        headroom >= 0,
        room,
        room.max_concurrency * layout.dp,
        step,
        conventions,
    )


def _paged_stage_kv(
    spec: ModelSpec, layout: Layout, context: int, kv_bits: int, policy: MemoryPolicy
) -> list[int | Fraction]:
    """KV bytes of one sequence of ``context`` tokens on each stage's GPU, in whole blocks."""
    return stage_kv_bytes(spec, layout, paged_tokens(context, policy.block_tokens), kv_bits)


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def _fewest_gpus(
    spec: ModelSpec,
    gpu: HardwareSpec,
    batch: int,
    context: int,
    weight_bits: Fraction,
    kv_bits: int,
    policy: MemoryPolicy,
) -> int | None:
    """A lower bound on the GPUs of any layout that fits: every weight and KV byte is stored at
    least once, so the fullest of n GPUs holds at least 1/n of what one GPU holding the whole model
    would (floored, so float rounding cannot push it past the true count); None if a GPU has no room."""
    one = Layout(1, 1, 1, 1)
    p = per_gpu(spec, one, weight_bits, kv_bits)
    whole = p.weight_bytes[0] + batch * _paged_stage_kv(spec, one, context, kv_bits, policy)[0]
    room = kv_room(spec, gpu, [context], policy=policy, weight_bits=weight_bits, kv_bits=kv_bits)
    space = room.usable_bytes - room.reserve_bytes
    return max(1, math.floor(whole / space)) if space > 0 else None


def smallest_layouts(
    spec: ModelSpec,
    gpu: HardwareSpec,
    batch: int = 1,
    context: int = 8192,
    weight_bits: int | float | Fraction = 16,
    kv_bits: int = 16,
    policy: MemoryPolicy = DEPLOYMENT,
    max_gpus: int = 64,
    dtype: Dtype = Dtype.BF16,
    limit: int = 8,
    sizes: int = 3,
    profile: Profile | None = None,
) -> list[Deployment]:
    """Feasible inference layouts (DP = 1) of the ``sizes`` smallest GPU counts that work, fewest
    GPUs first, then fastest decode bound; at most ``limit``.

    TP ranges over divisors of the query heads up to the GPUs of one node (a card with no
    GPU-to-GPU link: one host of them over PCIe, :func:`~llm_cost.analyses.serving.replicas.node_gpus`,
    as the serving planner searches); PP over 1..L; EP over
    1 and TP for MoE models. Returns [] when nothing fits within ``max_gpus``. The search starts at
    the fewest GPUs whose memory could hold the model and its KV cache and stops at the largest
    layout there is (the largest TP x L stages), however large ``max_gpus``."""
    n_q = spec.attention.num_attention_heads
    bits = weight_bits_of(weight_bits, limit=True)
    fitting: list[Layout] = []
    counts: list[int] = []
    tps = [t for t in _divisors(n_q) if t <= node_gpus(gpu)]
    fewest = _fewest_gpus(spec, gpu, batch, context, bits, kv_bits, policy)
    largest = min(max_gpus, max(tps) * spec.num_hidden_layers)
    for total in range(fewest, largest + 1) if fewest is not None and fewest <= largest else ():
        if len(counts) == sizes:
            break
        for tp in tps:
            if total % tp or total // tp > spec.num_hidden_layers:
                continue
            for ep in [1] if spec.moe is None else sorted({1, tp}):
                layout = Layout(tp, total // tp, ep, 1)
                try:
                    room = kv_room(
                        spec, gpu, [context], layout=layout, policy=policy, weight_bits=bits, kv_bits=kv_bits
                    )
                except InputError:
                    continue
                if room.max_concurrency >= batch:
                    fitting.append(layout)
                    if not counts or counts[-1] != total:
                        counts.append(total)
    deps = [
        deployment(spec, gpu, layout, batch, context, bits, kv_bits, policy, dtype, profile=profile)
        for layout in fitting
    ]
    deps.sort(key=lambda d: (d.layout.gpus, d.step.bound_s))
    return deps[:limit]


@record
class FitReport(Result):
    """``llm-cost fit``: one GPU's capacity and the smallest layouts, or one given layout."""

    single_gpu: Fit | None
    smallest_layouts: list[Deployment]
    max_gpus: int
    deployment: Deployment | None
