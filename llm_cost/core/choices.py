"""The modelling choices a command offers as flags, as string enums: activation recomputation,
where the LM head runs, the attention mask, which weight bytes a step counts, the MLA form, the
memory convention, the serving mode and the parameters behind weight FLOPs.

They live apart from :mod:`llm_cost.core.types` (the engine's own vocabulary) so that a command
which offers none of them (``params``, ``kv``) does not define them on every start.
"""

from __future__ import annotations

from llm_cost.core.types import TextEnum

__all__ = [
    "Recompute",
    "Logits",
    "AttentionMask",
    "WeightBytes",
    "MLAForm",
    "MemoryConvention",
    "ServingMode",
    "WeightFlops",
    "ActivationFormula",
    "Statistic",
    "BandSource",
    "Framework",
    "Fp8Recipe",
    "MoeDispatcher",
    "Router",
]


class Recompute(TextEnum):
    """Activation recomputation in training (Korthikanti et al. 2022)."""

    NONE = "none"
    SELECTIVE = "selective"
    FULL = "full"


class Framework(TextEnum):
    """The training framework a plan assumes: its rank order, the layouts it can run, its overlaps,
    its activation checkpointing and its optimizer-state sharding.

    ``megatron``: Megatron-Core (NeMo, Megatron-LM): TP with sequence parallelism, CP, PP with
    virtual stages, EP (MoE parallel folding), DP with the distributed optimizer (ZeRO-1) or plain
    DDP; ranks ordered tp-cp-ep-dp-pp (``megatron/core/parallel_state.py``). ``fsdp2``: PyTorch
    FSDP2 / HSDP as torchtitan and NeMo AutoModel run it: parameters, gradients and optimizer
    states sharded (ZeRO-3; ZeRO-2 without resharding after the forward), with TP, CP, PP and EP
    composed on a device mesh ordered pp, dp_replicate, dp_shard, cp, tp (tp innermost)."""

    MEGATRON = "megatron"
    FSDP2 = "fsdp2"


class Fp8Recipe(TextEnum):
    """How FP8 training scales its tensors (Transformer Engine's recipes): ``delayed`` per-tensor
    scales from an amax history; ``current`` per-tensor scales from each tensor's own amax (one
    more read of it); ``block`` 1 x 128 activation and 128 x 128 weight blocks (DeepSeek-V3 §3.3);
    ``mxfp8`` 32-element blocks with E8M0 scales, native on Blackwell tensor cores (OCP MX v1.0)."""

    DELAYED = "delayed"
    CURRENT = "current"
    BLOCK = "block"
    MXFP8 = "mxfp8"


class MoeDispatcher(TextEnum):
    """How a MoE layer's tokens reach their experts under expert parallelism: ``alltoall`` sends
    each of a token's k copies to its expert's GPU (Megatron-Core's ``alltoall`` token dispatcher);
    ``deepep`` sends a token once to each node holding one of its experts and forwards it over
    NVLink inside the node (DeepEP's normal kernels, github.com/deepseek-ai/DeepEP; Megatron-Core's
    ``flex`` dispatcher, NeMo AutoModel)."""

    ALLTOALL = "alltoall"
    DEEPEP = "deepep"


class Logits(TextEnum):
    """Where the LM head runs in a step: on the last position of each sequence (serving) or on
    every position (training; the documents' prefill count)."""

    LAST = "last"
    ALL = "all"


class AttentionMask(TextEnum):
    """Causal attention (each token sees itself and those before it) or the full S x S bound."""

    CAUSAL = "causal"
    FULL = "full"


class WeightBytes(TextEnum):
    """Which weight bytes a step counts: those it reads, or every resident weight once (the
    source documents' convention)."""

    READ = "read"
    RESIDENT = "resident"


class MLAForm(TextEnum):
    """MLA attention computed on up-projected heads (plain) or on the cached latent (absorbed)."""

    PLAIN = "plain"
    ABSORBED = "absorbed"


class MemoryConvention(TextEnum):
    """How a GPU's memory is counted: the capacity a deployment gets, as the card reports it (an
    "80 GB" H100 reports 81,559 MiB), or the datasheet's figure read as 10^9 B (the source
    documents' convention)."""

    PHYSICAL = "physical"
    DATASHEET = "datasheet"


class BandSource(TextEnum):
    """What a simulated serving run's error band is calibrated on: a time model's profile (its
    held-out step-time residuals, widened outside the fitted shapes) or the serving prediction's
    own spread on measured serving runs (mean ITL measured / predicted)."""

    PROFILE = "profile"
    SERVING_RUNS = "serving-runs"


class Router(TextEnum):
    """How requests are spread over a deployment's replicas (:func:`llm_cost.simulate.routers.router_of`):
    in turn, to the least loaded (vLLM's data-parallel load balancer), or to the replica whose
    prefix cache holds the most of the prompt unless the loads are imbalanced (SGLang's
    gateway's cache-aware policy)."""

    ROUND_ROBIN = "round-robin"
    LEAST_LOADED = "least-loaded"
    PREFIX_AWARE = "prefix-aware"


class ServingMode(TextEnum):
    """Aggregated serving (prefill chunks mixed into decode steps on the same GPUs) or
    disaggregated (a prefill pool and a decode pool, the KV cache sent between them)."""

    AGGREGATED = "aggregated"
    DISAGGREGATED = "disaggregated"


class WeightFlops(TextEnum):
    """Parameters behind "2 x N" weight FLOPs per token: N_gemm, N less the input embedding, or N."""

    GEMM = "gemm"
    NON_EMBEDDING = "non_embedding"
    TOTAL = "total"


class ActivationFormula(TextEnum):
    """Which block activation memory counts: the model's own (its tensors, no dropout) or the
    paper's GPT block (Korthikanti et al. 2022: MHA, a 4h GELU MLP, dropout; the documents')."""

    MODEL = "model"
    GPT = "gpt"


class Statistic(TextEnum):
    """The statistic of a latency distribution a service target bounds: the mean or a percentile
    (``p99:2s``: 99% of requests within 2 s)."""

    MEAN = "mean"
    P50 = "p50"
    P90 = "p90"
    P99 = "p99"
    PERCENTILE = "percentile"  # any other: Target.percentile (p95, p99.9)
