"""MoE serving as it is deployed: attention data-parallel ranks with expert parallelism over the
same GPUs, beside tensor parallelism (with or without EP).

An attention-DP replica of ``G`` GPUs runs ``dp`` ranks of attention TP ``a`` (G = a x dp): each
rank has its own scheduler, sequences and KV cache and computes attention, the dense MLP layers,
the shared experts and the LM head for its own tokens at TP ``a`` (vLLM's data-parallel MoE
deployment: ``--data-parallel-size dp --tensor-parallel-size a --enable-expert-parallel``; SGLang's
``--tp-size G --dp-size dp --enable-dp-attention``), while the routed experts are spread whole over
all ``G`` GPUs (EP = G) and every rank's tokens meet at them through the dispatch and combine
all-to-all (:func:`~llm_cost.workload.step.build_step`, ``Layout(tp=a, dp=dp, ep=G)``). What it buys:
the attention's KV cache is not replicated across the ranks (an MLA latent cache is on every TP
rank of a TP replica, once per rank here), and no TP all-reduce runs outside the attention group.
What it costs: every rank reads the attention, dense and LM-head weights whole (1/a of them), and
a layer waits for the rank whose experts receive the most tokens
(:func:`~llm_cost.perf.calibrated.routed_load`). SGLang runs the dense MLP layers of a DP-attention
replica at TP ``G`` over gathered tokens unless told otherwise; the replica here runs them as vLLM
does, within each rank.

Replica-level figures: ``concurrency`` is the replica's sequences (``dp`` ranks together), and the
token budget of a step is the replica's: :func:`chunks_for` gives each rank the budgets a TP replica
is searched at, so the replica's are ``dp`` times larger.

Layouts span at most :data:`MAX_SPAN` GPUs; beyond one node (wide EP) the all-to-all runs on the
network link (:func:`~llm_cost.perf.timemodel.link_of`), and such replicas keep attention TP 1, as
wide-EP deployments run them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from llm_cost.analyses.serving.replicas import node_gpus
from llm_cost.core.errors import InputError
from llm_cost.core.notes import Note, note
from llm_cost.core.types import Engine, ServingEngine
from llm_cost.model.layout import Layout, validate_layout
from llm_cost.simulate.engine import EngineConfig
from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = [
    "MAX_SPAN",
    "ATTENTION_TP",
    "ATTENTION_DP_ENGINES",
    "attention_dp_layouts",
    "chunks_for",
    "is_attention_dp",
    "replica_engine",
    "check_serving_layout",
    "Ranked",
    "layout_families",
]

#: The most GPUs an attention-DP replica spans in the search (DeepSeek's decode instances span 144,
#: its prefill 32: the DeepSeek-V3/R1 inference system overview, 2025-03-01; the search stops at a
#: power of two that keeps a plan's candidates few).
MAX_SPAN = 64
#: Attention TP degrees tried inside a rank (1: pure attention DP).
ATTENTION_TP = (1, 2, 4, 8)


def is_attention_dp(layout: Layout) -> bool:
    """Whether ``layout`` is an attention data-parallel replica with expert parallelism (dp > 1)."""
    return layout.dp > 1 and layout.ep > 1


def attention_dp_layouts(spec: ModelSpec, gpu: HardwareSpec, budget: int) -> list[Layout]:
    """The attention-DP replica layouts of a MoE model within ``budget`` GPUs (module docstring):
    ``G`` = 2, 4, ... up to :data:`MAX_SPAN` GPUs (and at most the experts), attention TP ``a`` of
    :data:`ATTENTION_TP` below ``G`` within a node (TP 1 only beyond it), dp = G / a ranks, EP = G,
    PP 1; each a layout the model takes (:func:`~llm_cost.model.layout.validate_layout`: EP divides
    the experts). None for a model without routed experts."""
    moe = spec.moe
    if moe is None:
        return []
    node = node_gpus(gpu)
    out = []
    span = 2
    while span <= min(budget, MAX_SPAN, moe.num_experts):
        for a in ATTENTION_TP:
            if a >= span or (span > node and a > 1) or span % a:
                continue
            layout = Layout(tp=a, pp=1, ep=span, dp=span // a)
            try:
                validate_layout(spec, layout)
            except InputError:
                continue
            out.append(layout)
        span *= 2
    return out


def chunks_for(layout: Layout, chunks: Sequence[int | None]) -> list[int | None]:
    """The replica token budgets a search tries for ``layout``: ``chunks`` (per engine) times the
    ranks of an attention-DP replica, each rank taking one engine's budget; as given otherwise."""
    dp = layout.dp if is_attention_dp(layout) else 1
    return [None if c is None else c * dp for c in chunks]


def replica_engine(config: EngineConfig, layout: Layout) -> EngineConfig:
    """The engine settings of one replica of ``layout`` as one scheduler runs it: under vLLM an
    attention-DP replica's ranks each take ``config``'s sequences and token budget (its
    data-parallel ranks each run the engine's ``SchedulerConfig``), so the replica takes ``dp``
    times both; SGLang's settings are the server's already (``ServerArgs`` divides
    ``chunked_prefill_size`` by ``dp_size`` itself); ``config`` as it is otherwise."""
    if not is_attention_dp(layout) or config.engine != Engine.VLLM:
        return config
    dp = layout.dp
    return dataclasses.replace(
        config, max_num_seqs=config.max_num_seqs * dp, max_num_batched_tokens=config.max_num_batched_tokens * dp
    )


#: Engines whose launch flags run an attention-DP layout (vLLM's ``--data-parallel-size`` with
#: ``--enable-expert-parallel``, SGLang's ``--enable-dp-attention``); ``trtllm-serve`` has none.
ATTENTION_DP_ENGINES = (ServingEngine.VLLM, ServingEngine.SGLANG)


def check_serving_layout(spec: ModelSpec, layout: Layout | None, engine: ServingEngine | str) -> None:
    """InputError, naming the field and what would work, for a layout ``serve`` cannot run: data
    parallelism inside a replica (``dp`` > 1: attention DP) of a model without routed experts, or
    without its experts spread over the ranks (``ep`` = tp x dp), or under an engine whose server
    has no flag for it; and what :func:`~llm_cost.model.layout.validate_layout` refuses (an ``ep``
    that does not divide the experts plus the redundant ones, with the EP sizes that do)."""
    if layout is None:
        return
    if layout.dp > 1 and spec.moe is None:
        raise InputError(
            f"dp: {spec.name} has no routed experts; attention data parallelism (dp {layout.dp}) serves MoE models, "
            "whose ranks share the experts; leave dp at 1 (a dense model's copies are replicas, each TP x PP)",
            fields=("dp",),
        )
    if layout.dp > 1 and layout.ep == 1:
        raise InputError(
            f"ep: attention data parallelism (dp {layout.dp}) spreads the experts over all {layout.tp * layout.dp} "
            f"GPUs of the replica; give ep {layout.tp * layout.dp}",
            fields=("ep", "dp"),
        )
    if layout.dp > 1 and engine not in ATTENTION_DP_ENGINES:
        raise InputError(
            f"dp: {engine} has no attention data-parallel flag in its server (trtllm-serve sets "
            "enable_attention_dp only in an extra options file); use engine vllm or sglang, or dp 1",
            fields=("dp", "engine"),
        )
    validate_layout(spec, layout)  # EP dividing the experts (and redundant ones), TP the heads: what would work


class Ranked(Protocol):
    """A simulated run or an analytic candidate, as :func:`layout_families` compares them."""

    @property
    def layout(self) -> Layout: ...  # noqa: D102 - one replica's

    @property
    def output_tokens_per_s_per_gpu(self) -> float: ...  # noqa: D102

    @property
    def meets(self) -> bool: ...  # noqa: D102 - the targets are met

    def describe(self) -> str: ...  # noqa: D102 - replicas x layout


R = TypeVar("R", bound=Ranked)


def layout_families(
    spec: ModelSpec,
    simulated: Sequence[R],
    screened: Sequence[Ranked],
    holds: Callable[[R], bool] | None = None,
    screen_judged: bool = True,
) -> Note | None:
    """For a MoE model, the best configuration of each family of layouts a plan weighed (attention
    DP with EP, and TP with or without EP: ``serve.moe_layouts``): among the ``simulated`` runs of
    the family, the one meeting the targets (``holds``: as the plan ranks its runs) with the most
    output tokens/s per GPU, else its best that misses them; a family with no simulated run, the
    best of the analytic ``screened`` frontier, its ``meets`` None where the screen was not judged
    against the targets (``screen_judged`` False: a simulated plan screens without them, so a
    screen's figure beside a simulated one would say nothing of the targets, as a MoE user found);
    None for a dense model."""
    if spec.moe is None:
        return None
    judge: Callable[[R], bool] = holds or (lambda r: r.meets)
    families: dict[str, dict[str, object] | None] = {}
    for name, member in (("attention_dp", True), ("tp", False)):
        runs = [(judge(r), r) for r in simulated if is_attention_dp(r.layout) == member]
        screen = [(r.meets if screen_judged else None, r) for r in screened if is_attention_dp(r.layout) == member]
        pool: list[tuple[bool | None, Ranked]] = [*runs] or [*screen]
        if not pool:
            families[name] = None
            continue
        meets, best = max(pool, key=lambda p: (bool(p[0]), p[1].output_tokens_per_s_per_gpu))
        families[name] = dict(
            what=best.describe(), per_gpu=best.output_tokens_per_s_per_gpu, meets=meets,
            source="simulated" if runs else "analytic screen",
        )  # fmt: skip
    return note("serve.moe_layouts", attention_dp=families["attention_dp"], tp=families["tp"])
