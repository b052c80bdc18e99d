"""The serving search: every candidate of every replica layout and mode, the frontier, the
choice under the targets, and the messages when nothing meets them (see
:mod:`llm_cost.analyses.serving`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from fractions import Fraction

from llm_cost.analyses.capacity import DEPLOYMENT, MemoryPolicy, policy_note, usable_bytes
from llm_cost.analyses.serving.modes import aggregated, aggregated_point, disaggregated, saturated_frontier
from llm_cost.analyses.serving.moe_layouts import attention_dp_layouts, chunks_for
from llm_cost.analyses.serving.replicas import (
    PP_SEARCHED,
    Replica,
    StepTimes,
    node_gpus,
    replica,
    replica_layouts,
    smallest_step,
    useful_pipelines,
)
from llm_cost.analyses.serving.results import (
    CHUNK_GRID,
    CONCURRENCY_GRID,
    DEFAULT_CHUNK_TOKENS,
    SANE_TTFT_S,
    Candidate,
    ServePlan,
    Targets,
    Traffic,
)
from llm_cost.core.choices import ServingMode
from llm_cost.core.errors import InputError
from llm_cost.core.labels import Limit
from llm_cost.core.limits import MAX_PLAN_GPUS
from llm_cost.core.notes import Note, note
from llm_cost.core.types import Dtype
from llm_cost.core.units import fmt_given, fmt_rate, fmt_seconds
from llm_cost.model.formats import weight_bits_of
from llm_cost.model.layout import Layout, kv_heads_per_gpu, layout_label
from llm_cost.perf.timemodel import DEFAULT_NETWORK_GB_S, TimeModel
from llm_cost.specs.schema import HardwareSpec, MLAAttention, ModelSpec

#: Two configurations within this share of each other's tokens/s per GPU are a tie (aggregated wins it).
_TIE = 0.005


def _frontier(cands: list[Candidate]) -> list[Candidate]:
    """The Pareto frontier of output tokens/s per GPU against tokens/s per user, by rising speed
    per user (no other candidate is better on both)."""
    best: list[Candidate] = []
    for c in sorted(
        cands, key=lambda c: (-c.tokens_per_s_per_user, -c.output_tokens_per_s_per_gpu, c.violates != (), c.ttft_s)
    ):
        if not best or c.output_tokens_per_s_per_gpu > best[-1].output_tokens_per_s_per_gpu:
            best.append(c)
    return list(reversed(best))


def _choose(cands: list[Candidate], qps: float | None) -> Candidate:
    """The best candidate meeting the targets: with a rate, the fewest GPUs (then the most
    tokens/s per GPU); without, the most output tokens/s per GPU (then the fewest GPUs).
    Within a tie (:data:`_TIE`) aggregated serving is chosen: one pool is simpler to run."""

    def simpler(c: Candidate) -> int:
        return 0 if c.mode == ServingMode.AGGREGATED else 1

    if qps is not None:
        fewest = min(c.gpus for c in cands)
        pool = [c for c in cands if c.gpus == fewest]
    else:
        pool = cands
    top = max(c.output_tokens_per_s_per_gpu for c in pool)
    near = [c for c in pool if c.output_tokens_per_s_per_gpu >= top * (1 - _TIE)]
    return min(near, key=lambda c: (simpler(c), -c.output_tokens_per_s_per_gpu, c.gpus, c.ttft_s))


def _impossible(
    cands: list[Candidate], targets: Targets, label: str, few_kv_heads: Callable[[Candidate], bool]
) -> InputError:
    """The one-line error for targets no candidate meets, with the nearest achievable values
    (said to be pessimistic where the profile's decode attention has few KV heads in flight)."""

    def best(metric: str, pool: list[Candidate]) -> Candidate:
        return min(pool, key=lambda c: getattr(c, metric))

    parts, fields = [], []
    for metric, target in (("tpot_s", targets.tpot_s), ("ttft_s", targets.ttft_s)):
        if target is None:
            continue
        b = best(metric, cands)
        if getattr(b, metric) > target:
            caveat = (
                ", pessimistic: few KV heads in flight and no split-KV in the profile"
                if metric == "tpot_s" and few_kv_heads(b)
                else ""
            )
            parts.append(
                f"{metric} {fmt_seconds(target)}: the fastest configuration reaches {fmt_seconds(getattr(b, metric))} "
                f"({b.describe()}, concurrency {b.concurrency}; {label}{caveat})"
            )
            fields.append(metric)
    if not parts:  # each target alone is reachable, both together are not
        assert targets.tpot_s is not None and targets.ttft_s is not None
        pool = [c for c in cands if c.tpot_s <= targets.tpot_s]
        b = best("ttft_s", pool)
        parts.append(
            f"ttft_s {fmt_seconds(targets.ttft_s)} with tpot_s {fmt_seconds(targets.tpot_s)}: no configuration meets "
            f"both; at that TPOT the lowest TTFT is {fmt_seconds(b.ttft_s)} ({b.describe()}, concurrency "
            f"{b.concurrency}; {label})"
        )
        fields += ["ttft_s", "tpot_s"]
    return InputError("; ".join(parts), fields=tuple(fields))


def _binding(
    chosen: Candidate,
    cands: list[Candidate],
    concurrency: Sequence[int],
    pruned: Collection[tuple[Layout, int, int | None, int]] = (),
) -> str:
    """What stops the chosen configuration going further: the next concurrency of the same
    configuration misses a target, or its KV cache would not hold it ("memory"). ``pruned``: the
    (layout, replicas, budget, concurrency) of aggregated configurations without targets found
    dominated and not priced (:func:`~llm_cost.analyses.serving.modes.saturated_frontier`): they
    hold their sequences and miss no target."""
    bigger = [c for c in concurrency if c > chosen.concurrency]
    if not bigger:
        return "the largest concurrency searched"
    if (chosen.layout, chosen.replicas, chosen.chunk_tokens, bigger[0]) in pruned and chosen.prefill_layout is None:
        return "throughput per GPU (a larger concurrency is slower per GPU)"
    same = [
        c
        for c in cands
        if c.concurrency == bigger[0]
        and (c.mode, c.layout, c.replicas, c.prefill_layout, c.prefill_replicas, c.chunk_tokens, c.prefill_batch)
        == (
            chosen.mode,
            chosen.layout,
            chosen.replicas,
            chosen.prefill_layout,
            chosen.prefill_replicas,
            chosen.chunk_tokens,
            chosen.prefill_batch,
        )
    ]
    if not same:
        return "memory" if bigger[0] > chosen.max_concurrency else "prefill capacity"
    if same[0].violates:
        return " and ".join(same[0].violates)
    return "throughput per GPU (a larger concurrency is slower per GPU)"


def _verdict(agg: Candidate | None, dis: Candidate | None, modes: Sequence[ServingMode], budget: int) -> str:
    """Which serving mode wins for this traffic, and the figures that say why."""
    if ServingMode.DISAGGREGATED not in modes:
        return "aggregated only (the one mode searched)"
    if ServingMode.AGGREGATED not in modes:
        return "disaggregated only (the one mode searched)"
    if dis is None:
        return (
            "aggregated: disaggregated serving needs at least 2 GPUs"
            if budget < 2
            else "aggregated: no disaggregated split meets the targets"
        )
    if agg is None:
        return "disaggregated: no aggregated configuration meets the targets"
    ratio = dis.output_tokens_per_s_per_gpu / agg.output_tokens_per_s_per_gpu
    why = (
        f"aggregated: TPOT {fmt_seconds(agg.tpot_s)}, prompt chunks take {agg.prefill_share:.0%} of step time; "
        f"disaggregated: TPOT {fmt_seconds(dis.tpot_s)}, {dis.prefill_share:.0%} of GPUs prefill, KV transfer "
        f"{fmt_seconds(dis.kv_transfer_s)} per request"
    )
    if abs(ratio - 1) < _TIE:
        return f"a tie: both serve the same output tokens/s per GPU within {_TIE:.1%}; aggregated is simpler ({why})"
    winner = "disaggregated" if ratio > 1 else "aggregated"
    return f"{winner} serves {max(ratio, 1 / ratio):.2f}x the output tokens/s per GPU ({why})"


def _check_output_tokens(output_tokens: int) -> None:
    """InputError unless a request generates at least 2 tokens (one from the prefill, the rest
    from decode steps)."""
    if output_tokens < 2:
        raise InputError(
            f"output_tokens: {output_tokens} is fewer than 2 tokens (the prefill gives the first, decode steps "
            "the rest)",
            fields=("output_tokens",),
        )


def plan(
    spec: ModelSpec,
    gpu: HardwareSpec,
    traffic: Traffic,
    targets: Targets,
    model: TimeModel,
    *,
    gpus: int | None = None,
    weight_bits: int | Fraction = 16,
    kv_bits: int = 16,
    compute_dtype: Dtype = Dtype.BF16,
    usd_per_gpu_hour: float | None = None,
    policy: MemoryPolicy = DEPLOYMENT,
    network_gb_s: float = DEFAULT_NETWORK_GB_S,
    modes: Sequence[ServingMode] = (ServingMode.AGGREGATED, ServingMode.DISAGGREGATED),
    layouts: Sequence[Layout] | None = None,
    concurrency: Sequence[int] = CONCURRENCY_GRID,
    chunks: Sequence[int | None] = CHUNK_GRID,
    extra_notes: Sequence[Note] = (),
    reserve_full: bool = False,
    attention_dp: bool = True,
    name_fewest: bool = True,
) -> ServePlan:
    """Search serving configurations and choose the best meeting ``targets`` (module docstring).
    ``name_fewest``: a rate no configuration within the budget carries is refused naming the
    fewest GPUs the screen finds carrying it (a second search, without a budget: 16 of a
    DeepSeek-V3 refusal's 27 s); False for a caller that searches them itself.
    ``reserve_full``: each sequence's KV cache is counted at its whole length, as TensorRT-LLM's
    scheduler reserves it (:func:`~llm_cost.analyses.serving.replicas.replica`). ``attention_dp``:
    a MoE model's attention data-parallel layouts with expert parallelism are searched beside the
    TP ones (:mod:`llm_cost.analyses.serving.moe_layouts`).

    ``gpus`` is the GPU budget (default: one node, :func:`~llm_cost.analyses.serving.replicas.node_gpus`, or
    :data:`MAX_PLAN_GPUS` with ``traffic.qps``).
    InputError when no layout holds the model within the budget (saying how many GPUs it needs),
    or when no configuration meets the targets (naming the nearest achievable values)."""
    _check_output_tokens(traffic.output_tokens)
    budget = gpus or (MAX_PLAN_GPUS if traffic.qps is not None else node_gpus(gpu))
    if budget > MAX_PLAN_GPUS:
        raise InputError(f"gpus: {budget:,} is more than the {MAX_PLAN_GPUS:,} GPUs a plan covers", fields=("gpus",))
    if layouts is not None and layouts and min(layout.gpus for layout in layouts) > budget:
        smallest = min(layouts, key=lambda layout: layout.gpus)
        given = "" if gpus else f" (by default one node of {gpu.name})"
        raise InputError(
            f"tp {smallest.tp} x pp {smallest.pp}: {smallest.gpus:,} GPUs, more than the gpus budget of {budget:,}{given}",
            fields=("tp", "pp", "gpus"),
            advice=f"give gpus {smallest.gpus:,} or more, or a smaller layout",
        )
    bits = weight_bits_of(weight_bits, limit=True)
    steps = StepTimes(spec, gpu, model, bits, kv_bits, compute_dtype)
    candidate_layouts = (
        list(layouts)
        if layouts is not None
        else replica_layouts(spec, gpu, budget) + (attention_dp_layouts(spec, gpu, budget) if attention_dp else [])
    )

    def holding(layout: Layout) -> Replica | None:
        rep = replica(spec, gpu, layout, traffic, policy, bits, kv_bits, reserve_full)
        fits = rep.room(spec, smallest_step(chunks, traffic), 1, policy) >= rep.seq_kv_bytes + rep.prompt_kv_bytes
        return rep if fits else None

    if layouts is None:
        reps = useful_pipelines(candidate_layouts, holding)
    else:
        reps = [rep for rep in map(holding, candidate_layouts) if rep is not None]
    if not reps:
        raise _too_big(spec, gpu, traffic, policy, bits, kv_bits, budget, layouts, "layouts")
    if tuple(modes) == (ServingMode.DISAGGREGATED,) and budget < 2:
        raise InputError(
            "modes: disaggregated alone needs at least 2 GPUs (a prefill pool and a decode pool)",
            fields=("modes", "gpus"),
            advice="give gpus 2 or more",
        )
    smallest = min(reps, key=lambda rep: rep.layout.gpus).layout
    if tuple(modes) == (ServingMode.DISAGGREGATED,) and 2 * smallest.gpus > budget:
        raise InputError(  # a MoE user: the refusal blamed the KV cache
            f"modes: disaggregated serving needs a prefill pool and a decode pool each holding the model; the "
            f"smallest replica of {spec.name} on {gpu.name} is {layout_label(smallest)} ({smallest.gpus:,} GPUs), so "
            f"give gpus {2 * smallest.gpus:,} or more, or the aggregated mode",
            fields=("modes", "gpus"),
        )
    counts: list[int] = [0]
    refusals: dict[Limit, int] = {}
    cands: list[Candidate] = []
    pruned: set[tuple[Layout, int, int | None, int]] = set()  # feasible, dominated, not priced
    if ServingMode.AGGREGATED in modes and traffic.qps is None and targets == Targets():
        cands, pruned = saturated_frontier(
            spec,
            steps,
            [(rep, chunks_for(rep.layout, chunks)) for rep in reps],
            traffic,
            targets,
            budget,
            usd_per_gpu_hour,
            policy,
            concurrency,
            counts,
            refusals,
        )
    elif ServingMode.AGGREGATED in modes:
        for rep in reps:
            cands += aggregated(
                spec,
                steps,
                rep,
                traffic,
                targets,
                budget,
                usd_per_gpu_hour,
                policy,
                concurrency,
                chunks_for(rep.layout, chunks),
                counts,
                refusals,
            )
    if ServingMode.DISAGGREGATED in modes:
        cands += disaggregated(
            spec,
            gpu,
            steps,
            reps,
            traffic,
            targets,
            budget,
            usd_per_gpu_hour,
            policy,
            kv_bits,
            concurrency,
            network_gb_s,
            counts,
        )
    if not cands:
        most = None
        if traffic.qps is not None:  # what the budget carries at most, saturated, for the message
            try:
                most = plan(
                    spec,
                    gpu,
                    Traffic(traffic.input_tokens, traffic.output_tokens, cached_tokens=traffic.cached_tokens),
                    Targets(),
                    model,
                    gpus=budget,
                    weight_bits=weight_bits,
                    kv_bits=kv_bits,
                    compute_dtype=compute_dtype,
                    policy=policy,
                    network_gb_s=network_gb_s,
                    modes=modes,
                    layouts=layouts,
                    concurrency=concurrency,
                    chunks=chunks,
                    reserve_full=reserve_full,
                    attention_dp=attention_dp,
                ).frontier
            except InputError:
                most = None
        fewest = (
            _fewest_gpus_for(
                spec, gpu, traffic, model, budget, weight_bits, kv_bits, compute_dtype, policy, network_gb_s, modes,
                layouts, concurrency, chunks, reserve_full,
            )
            if name_fewest
            else None
        )  # fmt: skip
        raise _nothing_sustains(
            spec, gpu, traffic, budget, refusals,
            max(most, key=lambda c: c.requests_per_s * (budget // c.gpus)) if most else None, fewest,
        )  # fmt: skip
    meeting = [c for c in cands if c.meets]
    if not meeting:
        raise _impossible(cands, targets, model.label, lambda c: bool(_few_kv_heads_note(spec, gpu, model, c)))
    chosen = _choose(meeting, traffic.qps)
    agg = [c for c in meeting if c.mode == ServingMode.AGGREGATED]
    dis = [c for c in meeting if c.mode == ServingMode.DISAGGREGATED]
    best_agg = _choose(agg, traffic.qps) if agg else None
    best_dis = _choose(dis, traffic.qps) if dis else None
    fronts = {m: _frontier([c for c in cands if c.mode == m]) for m in modes}
    return _result(
        spec,
        gpu,
        traffic,
        targets,
        model,
        budget,
        usd_per_gpu_hour,
        bits,
        kv_bits,
        compute_dtype,
        policy,
        extra_notes,
        chosen,
        _binding(chosen, cands, concurrency, pruned),
        best_agg,
        best_dis,
        _verdict(best_agg, best_dis, modes, budget),
        _frontier(cands),
        fronts,
        counts[0],
        len(cands) + len(pruned),
        len(steps.cache),
        _layout_frontiers(cands),
    )


def _result(
    spec: ModelSpec,
    gpu: HardwareSpec,
    traffic: Traffic,
    targets: Targets,
    model: TimeModel,
    budget: int,
    price: float | None,
    bits: Fraction,
    kv_bits: int,
    compute: Dtype,
    policy: MemoryPolicy,
    extra_notes: Sequence[Note],
    chosen: Candidate,
    binding: str,
    best_agg: Candidate | None,
    best_dis: Candidate | None,
    verdict: str,
    frontier: list[Candidate],
    fronts: dict[ServingMode, list[Candidate]],
    evaluated: int,
    feasible: int,
    steps: int,
    by_layout: dict[tuple[Layout, int], list[Candidate]] | None = None,
) -> ServePlan:
    """The plan's result around its chosen configuration, with the conventions it rests on
    (``by_layout``: each aggregated layout's own frontier, :func:`_layout_frontiers`)."""
    conventions = [
        note("serve.model", label=model.label),
        note("serve.queueing", qps=traffic.qps),
        policy_note(gpu, policy),
        note("serve.concurrency"),
        note("serve.cost", price=price),
        *extra_notes,
        *spec.context_note([traffic.input_tokens + traffic.output_tokens]),
        *_few_kv_heads_note(spec, gpu, model, chosen),
        *pcie_note(gpu, chosen.layout, model),
        *_absurd_ttft(chosen, targets, traffic),
        *(
            [note("serve.cached_prompt", cached=traffic.cached_tokens, prompt=traffic.input_tokens)]
            if traffic.cached_tokens
            else []
        ),
    ]
    return ServePlan(
        spec.name,
        gpu.name,
        traffic.input_tokens,
        traffic.output_tokens,
        traffic.qps,
        targets.ttft_s,
        targets.tpot_s,
        budget,
        price,
        model.label,
        float(bits),
        kv_bits,
        compute,
        chosen,
        chosen.ttft_s,
        chosen.tpot_s,
        chosen.output_tokens_per_s,
        chosen.output_tokens_per_s_per_gpu,
        chosen.max_concurrency,
        chosen.gpus,
        chosen.usd_per_million_output_tokens,
        chosen.usd_per_million_input_tokens,
        chosen.usd_per_request,
        binding,
        best_agg,
        best_dis,
        verdict,
        frontier,
        fronts,
        evaluated,
        feasible,
        steps,
        conventions,
        cached_tokens=traffic.cached_tokens,
        frontier_by_layout=by_layout or {},
        usd_per_million_output_tokens_split=chosen.usd_per_million_output_tokens_split,
    )


def _layout_frontiers(cands: list[Candidate]) -> dict[tuple[Layout, int], list[Candidate]]:
    """Each aggregated (layout, replicas)'s own frontier (:func:`_frontier`) among ``cands``."""
    groups: dict[tuple[Layout, int], list[Candidate]] = {}
    for c in cands:
        if c.mode == ServingMode.AGGREGATED:
            groups.setdefault((c.layout, c.replicas), []).append(c)
    return {key: _frontier(group) for key, group in groups.items()}


def _absurd_ttft(chosen: Candidate, targets: Targets, traffic: Traffic) -> list[Note]:
    """A warning when the chosen configuration's TTFT is past :data:`SANE_TTFT_S` with no TTFT
    target (without a rate: saturated, its requests wait for a slot), or when its KV cache does
    not hold its sequences (one configuration evaluated beyond memory)."""
    out = []
    if targets.ttft_s is None and chosen.ttft_s > SANE_TTFT_S:
        out.append(
            note(
                "warning.serve_ttft",
                what="predicted mean TTFT",
                ttft=chosen.ttft_s,
                bound=SANE_TTFT_S,
                queue=chosen.queue_s,
                saturated=traffic.qps is None,
            )
        )
    if Limit.MEMORY in chosen.violates:
        out.append(note("warning.serve_memory", holds=chosen.max_concurrency, asked=chosen.concurrency))
    return out


def pcie_note(gpu: HardwareSpec, layout: Layout, model: TimeModel) -> list[Note]:
    """A note when ``layout``'s tensor parallelism runs over PCIe (a card with no GPU-to-GPU link:
    :func:`~llm_cost.perf.timemodel.pcie_tp`): its collectives at the host link's bandwidth, with
    the time model's latency per call when it has one (a calibrated profile)."""
    from llm_cost.perf.timemodel import pcie_tp

    if not pcie_tp(gpu, layout.tp * layout.dp):
        return []
    params = getattr(getattr(model, "profile", None), "parameters", None)
    latency = getattr(params, "collective_latency_s", None)
    return [
        note(
            "serve.pcie_tp",
            gpu=gpu.name,
            tp=layout.tp,
            gen=gpu.pcie_gen,
            gb_s=gpu.pcie_bytes_s / 1e9,
            latency_s=latency,
        )
    ]


def _few_kv_heads_note(spec: ModelSpec, gpu: HardwareSpec, model: TimeModel, chosen: Candidate) -> list[Note]:
    """A warning when the chosen decode steps have fewer sequences x KV heads per GPU in flight
    than the profile's decode-attention saturation: its kernels split no KV (no flash-decoding),
    so engines that do read the cache faster there and TPOT is pessimistic."""
    profile = getattr(model, "profile", None)
    if profile is None or profile.decode_split_kv or isinstance(spec.attention, MLAAttention):
        return []
    in_flight = chosen.concurrency * kv_heads_per_gpu(spec, chosen.layout.tp)
    from llm_cost.perf.calibrated import DEFAULT_SMS

    saturation = profile.parameters.family.kv_saturation_blocks_per_sm * (gpu.sm_count or DEFAULT_SMS)
    if in_flight >= saturation:
        return []
    return [note("serve.few_kv_heads", in_flight=in_flight, saturation=saturation, profile=profile.name)]


def _fewest_gpus_for(
    spec: ModelSpec,
    gpu: HardwareSpec,
    traffic: Traffic,
    model: TimeModel,
    budget: int,
    weight_bits: int | Fraction,
    kv_bits: int,
    compute_dtype: Dtype,
    policy: MemoryPolicy,
    network_gb_s: float,
    modes: Sequence[ServingMode],
    layouts: Sequence[Layout] | None,
    concurrency: Sequence[int],
    chunks: Sequence[int | None],
    reserve_full: bool,
) -> Candidate | None:
    """With a rate no configuration within ``budget`` carries: the screen's configuration of the
    fewest GPUs that does, past the budget (None: none within :data:`MAX_PLAN_GPUS`)."""
    if traffic.qps is None or budget >= MAX_PLAN_GPUS:
        return None
    try:
        wider = plan(
            spec, gpu, traffic, Targets(), model, gpus=MAX_PLAN_GPUS, weight_bits=weight_bits, kv_bits=kv_bits,
            compute_dtype=compute_dtype, policy=policy, network_gb_s=network_gb_s, modes=modes, layouts=layouts,
            concurrency=concurrency, chunks=chunks, reserve_full=reserve_full,
        )  # fmt: skip
    except InputError:
        return None
    return wider.chosen


def _nothing_sustains(
    spec: ModelSpec,
    gpu: HardwareSpec,
    traffic: Traffic,
    budget: int,
    refusals: dict[Limit, int],
    most: Candidate | None = None,
    fewest: Candidate | None = None,
) -> InputError:
    """The error when no configuration searched is feasible, naming the commonest reason (with a
    rate: the most requests/s the budget carries, ``most``, and the fewest GPUs that carry the
    rate by the screen, ``fewest``)."""
    if traffic.qps is not None:
        copies = budget // most.gpus if most is not None else 0
        carried = (  # the saturated configuration copied over the budget (an attacker: 672 requests/s named
            # on 402 of 4,096 GPUs, where 928 GPUs carry 1,000)
            f"; they carry at most {fmt_rate(most.requests_per_s * copies)} requests/s ("
            + (f"{copies:,} copies of {most.describe()}, {most.gpus:,} GPUs each" if copies > 1 else most.describe())
            + f", concurrency {most.concurrency}, saturated)"
            if most is not None and copies
            else ""
        )
        source = traffic.rate_source
        lower = "lower qps" if source == "qps" else f"a {source} of fewer requests/s"
        fix = (
            f"give gpus {fewest.gpus:,} or more (the screen's fewest that carry it: {fewest.describe()}), or {lower}"
            if fewest is not None
            else f"raise gpus or {lower}"
            if budget < MAX_PLAN_GPUS
            else f"{lower}: {MAX_PLAN_GPUS:,} GPUs are the most a plan covers"  # an attack: gpus was at its cap
        )
        rate = f"qps {fmt_given(traffic.qps)}" if source == "qps" else f"{source}: {fmt_rate(traffic.qps)} requests/s"
        return InputError(
            f"{rate}: no configuration within {budget:,} x {gpu.name} carries it{carried}",
            fields=(source, "gpus"),
            advice=fix,
        )
    if refusals.get(Limit.MEMORY, 0) >= refusals.get(Limit.PREFILL, 0):
        return InputError(
            f"{spec.name} on {gpu.name}: the KV cache holds none of the concurrencies searched at "
            f"{traffic.input_tokens:,} + {traffic.output_tokens:,} tokens; use more GPUs (gpus), "
            "fewer bits (weights_dtype, kv_dtype) or shorter requests",
            fields=("gpus", "weights_dtype", "kv_dtype"),
        )
    return InputError(
        f"{spec.name} on {gpu.name}: {traffic.input_tokens:,}-token prompts arrive faster than the "
        "token budgets searched take them; give larger chunks or fewer output tokens per prompt",
        fields=("chunks",),
    )


def longer_than_context(input_tokens: float, output_tokens: float, context: int, head: str = "") -> InputError:
    """The refusal of requests of ``input_tokens`` + ``output_tokens`` (their means) longer than the
    model's ``context`` (``max_position_embeddings``): no engine admits them, whatever its
    max_model_len (vLLM will not start with one past the context); ``head`` prefixes the reason.
    Names the longer of the two lengths first (an attacker's --output 1e9 was told of --input)."""
    longer = "output_tokens" if output_tokens > input_tokens else "input_tokens"
    return InputError(
        f"{longer}: {head}prompts of {input_tokens:,.0f} + {output_tokens:,.0f} output tokens "
        f"{'(mean) ' if head else ''}are longer than the model's context of {context:,} tokens (no max_model_len "
        "may exceed it): shorter requests (input_tokens and output_tokens, a workload's lengths), or a model of "
        "a longer context",
        fields=(longer, "input_tokens" if longer == "output_tokens" else "output_tokens", "workload"),
    )


def _too_big(
    spec: ModelSpec,
    gpu: HardwareSpec,
    traffic: Traffic,
    policy: MemoryPolicy,
    bits: Fraction,
    kv_bits: int,
    budget: int,
    forced: Sequence[Layout] | None,
    forced_field: str,
) -> InputError:
    """The error for a model no layout within the budget (or none of the ``forced`` layouts, the
    argument ``forced_field``) holds, with the GPUs it would need and the memory accounting that
    decided it; for requests longer than the model's context, that (no engine admits them)."""
    if traffic.input_tokens + traffic.output_tokens > spec.max_position_embeddings:
        return longer_than_context(traffic.input_tokens, traffic.output_tokens, spec.max_position_embeddings)
    usable = usable_bytes(gpu, policy)
    memory = (
        f"{usable / 1e9:,.1f} GB usable per GPU at {float(policy.utilization):.0%}, less a "
        f"{policy.reserve_bytes / 1e9:,.2f} GB reserve"
    )
    what = (
        f"{spec.name} at {float(bits):g} bits with one {traffic.input_tokens + traffic.output_tokens:,}-token sequence"
    )
    for layout in replica_layouts(spec, gpu, MAX_PLAN_GPUS):
        rep = replica(spec, gpu, layout, traffic, policy, bits, kv_bits)
        if rep.room(spec, smallest_step(CHUNK_GRID, traffic), 1, policy) >= rep.seq_kv_bytes + rep.prompt_kv_bytes:
            if forced and layout in forced:  # it holds one at the least step: the chunk's workspace is the cause
                return InputError(
                    f"chunk_tokens: TP {layout.tp} x PP {layout.pp} holds {what} at a "
                    f"{smallest_step(CHUNK_GRID, traffic):,}-token step, but the activation workspace of the step "
                    "given leaves no room for it; give a smaller chunk_tokens",
                    fields=("chunk_tokens",),
                )  # an attacker was told the fewest GPUs that hold it are the very layout refused
            if forced:
                shown = ", ".join(f"TP {f.tp} x PP {f.pp}" for f in forced)
                return InputError(
                    f"{forced_field}: {shown} does not hold {what} ({memory}); the fewest GPUs that do: "
                    f"{layout.gpus} (TP {layout.tp} x PP {layout.pp})",
                    fields=(forced_field,),
                )
            if layout.gpus > budget:
                return InputError(
                    f"gpus: {what} does not fit {budget:,} x {gpu.name} ({memory}); it needs "
                    f"{layout.gpus} (TP {layout.tp} x PP {layout.pp})",
                    fields=("gpus",),
                )
    return InputError(
        f"{what} fits no layout searched (TP up to the node, PP up to {PP_SEARCHED}) of {gpu.name} ({memory}); "
        "give fewer bits (weights_dtype, kv_dtype), shorter requests or more usable memory",
        fields=("weights_dtype", "kv_dtype"),
    )


def evaluate(
    spec: ModelSpec,
    gpu: HardwareSpec,
    traffic: Traffic,
    targets: Targets,
    model: TimeModel,
    layout: Layout,
    concurrency: int,
    *,
    chunk_tokens: int | None = DEFAULT_CHUNK_TOKENS,
    replicas: int = 1,
    weight_bits: int | Fraction = 16,
    kv_bits: int = 16,
    compute_dtype: Dtype = Dtype.BF16,
    usd_per_gpu_hour: float | None = None,
    policy: MemoryPolicy = DEPLOYMENT,
    network_gb_s: float = DEFAULT_NETWORK_GB_S,
    extra_notes: Sequence[Note] = (),
    reserve_full: bool = False,
) -> ServePlan:
    """One aggregated configuration, saturated: ``replicas`` x ``layout`` at ``concurrency``
    decoding sequences each and a token budget of ``chunk_tokens`` per step; the same result as
    :func:`plan`, whose frontier is that one row. Targets it misses, and a KV cache that does not
    hold its sequences ("memory"), are reported in ``violates``, not refused. InputError for a
    budget with no room for prompt tokens, or prompts that arrive faster than chunks take them."""
    I, O = traffic.input_tokens, traffic.output_tokens
    _check_output_tokens(O)
    if chunk_tokens is not None and concurrency >= chunk_tokens:
        raise InputError(
            f"concurrency {concurrency:,} leaves no room for prompt tokens in a step of chunk_tokens "
            f"{chunk_tokens:,} tokens; give a larger chunk_tokens",
            fields=("concurrency", "chunk_tokens"),
        )
    bits = weight_bits_of(weight_bits, limit=True)
    steps = StepTimes(spec, gpu, model, bits, kv_bits, compute_dtype)
    rep = replica(spec, gpu, layout, Traffic(I, O), policy, bits, kv_bits, reserve_full)
    if rep.room(spec, smallest_step([chunk_tokens], Traffic(I, O)), 1, policy) < rep.seq_kv_bytes + rep.prompt_kv_bytes:
        raise _too_big(spec, gpu, Traffic(I, O), policy, bits, kv_bits, layout.gpus, [layout], "layout")
    budget = layout.gpus * replicas
    found, _ = aggregated_point(
        spec,
        steps,
        rep,
        Traffic(I, O),
        targets,
        budget,
        usd_per_gpu_hour,
        policy,
        concurrency,
        chunk_tokens,
        strict_memory=False,
    )
    if not found:
        raise InputError(
            f"concurrency {concurrency:,}: each request brings {I:,} prompt tokens per {O - 1:,} decode "
            "steps, more than the steps take; lower concurrency or raise chunk_tokens",
            fields=("concurrency", "chunk_tokens"),
        )
    c = found[0]
    binding = (
        f"memory: the KV cache holds {c.max_concurrency:,} of these {concurrency:,} sequences per replica"
        if Limit.MEMORY in c.violates
        else "none (one configuration evaluated)"
    )
    return _result(
        spec,
        gpu,
        Traffic(I, O),
        targets,
        model,
        budget,
        usd_per_gpu_hour,
        bits,
        kv_bits,
        compute_dtype,
        policy,
        extra_notes,
        c,
        binding,
        c,
        None,
        "one aggregated configuration evaluated",
        [c],
        {ServingMode.AGGREGATED: [c]},
        1,
        0 if Limit.MEMORY in c.violates else 1,
        len(steps.cache),
    )
