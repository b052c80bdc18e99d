"""The API's training question: FLOPs, time, energy, cost and memory of a training run
(``llm-cost train``), at a given MFU or GPU-hour budget, or predicted for a parallel layout (the
training planner) when neither is given."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

from llm_cost.api import checks, choices
from llm_cost.api.model import GpuLike, ModelLike, load_gpu, load_model
from llm_cost.core.choices import Fp8Recipe, Framework, MoeDispatcher, Recompute
from llm_cost.core.errors import InputError
from llm_cost.core.limits import MAX_GRID_KG_PER_KWH, MAX_LAYOUT, MOE_CAPACITY_FACTOR_RANGE, POWER_W_RANGE, PUE_RANGE
from llm_cost.core.types import TRAINING_DTYPES, Dtype, TrainingDtype

if TYPE_CHECKING:
    from llm_cost.analyses.train_plan import TrainPlan
    from llm_cost.analyses.train_step import MoeRouting
    from llm_cost.analyses.training import TrainResult
    from llm_cost.perf.profile import Profile

__all__ = ["train", "train_plan", "TRAINING_DTYPES"]


def train(
    model: ModelLike,
    tokens: int,
    gpu: GpuLike = "h100",
    *,
    gpus: Optional[int] = None,
    mfu: Optional[float] = None,
    gpu_hours: Optional[float] = None,
    recompute: Recompute | str | None = None,
    dtype: Dtype | str | None = None,
    power_w: Optional[float] = None,
    pue: float = 1.0,
    grid_kg_per_kwh: Optional[float] = None,
    usd_per_gpu_hour: Optional[float] = None,
    seq: int = 8192,
    micro_batch: Optional[int] = None,
    tp: Optional[int] = None,
    pp: Optional[int] = None,
    dp: Optional[int] = None,
    zero: Optional[int] = None,
    sequence_parallel: bool = False,
    cp: Optional[int] = None,
    vp: Optional[int] = None,
    ep: Optional[int] = None,
    global_batch: Optional[int] = None,
    network_gb_s: Optional[float] = None,
    profile: Profile | str | None = None,
    tp_comm_overlap: Optional[bool] = None,
    top: Optional[int] = None,
    framework: Framework | str | None = None,
    fp8_recipe: Fp8Recipe | str | None = None,
    fsdp_shard: Optional[int] = None,
    moe_dispatcher: MoeDispatcher | str | None = None,
    moe_capacity_factor: Optional[float] = None,
    ep_comm_overlap: Optional[bool] = None,
) -> Union[TrainResult, TrainPlan]:
    """Training of ``tokens`` tokens D (``llm-cost train``).

    With ``mfu`` or ``gpu_hours`` (exactly one): 6ND FLOPs, the time at that MFU or the MFU the
    budget implies, energy at ``power_w`` (default the GPU's TDP) x ``pue``, CO2 and dollars, state
    memory per GPU under ZeRO ``zero`` (default 1) and, with ``tp``/``pp``/``dp``, that layout's
    memory (recompute default none, micro-batch 1; ``sequence_parallel`` as Megatron's): a
    TrainResult.

    With neither, on ``gpus`` GPUs (or tp x cp x pp x dp when all four are given): the training
    planner (:func:`train_plan`), a TrainPlan; its own arguments (``cp``, ``vp``, ``ep``,
    ``global_batch``, ``network_gb_s``, ``profile``, ``tp_comm_overlap``, ``top``, ``framework``,
    ``fp8_recipe``, ``fsdp_shard``, ``moe_dispatcher``, ``moe_capacity_factor``, ``ep_comm_overlap``)
    are refused with mfu or gpu_hours. InputError naming the argument."""
    checks.flag(sequence_parallel, "sequence_parallel")
    if mfu is None and gpu_hours is None and (gpus is not None or None not in (tp, cp, pp, dp)):
        if sequence_parallel:  # an attack: given to a plan, it was dropped without a word
            raise InputError(
                "sequence_parallel: a predicted plan runs sequence parallelism wherever it runs TP, as Megatron-Core "
                "does; leave out sequence_parallel",
                fields=("sequence_parallel",),
            )
        return train_plan(
            model, tokens, gpu, gpus=gpus, global_batch=global_batch, seq=seq, tp=tp, cp=cp, pp=pp, vp=vp,
            dp=dp, ep=ep, zero=zero, recompute=recompute, micro_batch=micro_batch, dtype=dtype,
            network_gb_s=network_gb_s, profile=profile, tp_comm_overlap=tp_comm_overlap, power_w=power_w, pue=pue,
            grid_kg_per_kwh=grid_kg_per_kwh, usd_per_gpu_hour=usd_per_gpu_hour, framework=framework,
            fp8_recipe=fp8_recipe, fsdp_shard=fsdp_shard, moe_dispatcher=moe_dispatcher,
            moe_capacity_factor=moe_capacity_factor, ep_comm_overlap=bool(ep_comm_overlap),
            **({} if top is None else {"top": top}),
        )  # fmt: skip
    from llm_cost.analyses.training import train as run

    if (mfu is None) == (gpu_hours is None):  # before the plan's own arguments: they need gpus
        raise InputError(
            "give exactly one of mfu (to get the time) or gpu_hours (to get the implied MFU), "
            "or gpus without either for a predicted plan",
            fields=("mfu", "gpu_hours", "gpus"),
        )
    _unused_at_a_given_mfu(locals())
    tokens = checks.large_count(tokens, "tokens", 1, 10**40)
    gpus = checks.optional(gpus, checks.count, "gpus", 1, 10**7)
    mfu = checks.optional(mfu, checks.efficiency, "mfu")
    gpu_hours = checks.optional(gpu_hours, checks.number, "gpu_hours")
    compute = Dtype(checks.choice(Dtype.BF16 if dtype is None else dtype, TrainingDtype, "dtype").value)
    power_w, pue, grid, price = _costs(power_w, pue, grid_kg_per_kwh, usd_per_gpu_hour)
    seq = checks.count(seq, "seq")
    micro_batch = checks.count(1 if micro_batch is None else micro_batch, "micro_batch")
    tp, pp, dp = (checks.optional(v, checks.count, n, 1, MAX_LAYOUT) for v, n in ((tp, "tp"), (pp, "pp"), (dp, "dp")))
    zero = checks.one_of(1 if zero is None else zero, "zero", (0, 1, 2, 3))
    spec, g = load_model(model), load_gpu(gpu)
    recompute = checks.choice(Recompute.NONE if recompute is None else recompute, Recompute, "recompute")
    return run(spec, tokens, g, gpus, mfu, gpu_hours, recompute, compute, power_w, pue, grid, price, seq, micro_batch,
               tp, pp, dp, zero, sequence_parallel)  # fmt: skip


#: What ``train`` at a given MFU or GPU-hour budget is, and the forms that take the arguments it
#: refuses (:func:`~llm_cost.api.checks.unused`).
_AT_A_GIVEN_MFU = "a run at a given mfu or gpu_hours"
_PLANNER = ("cp", "vp", "ep", "global_batch", "network_gb_s", "profile", "tp_comm_overlap", "top", "framework",
            "fp8_recipe", "fsdp_shard", "moe_dispatcher", "moe_capacity_factor", "ep_comm_overlap")  # fmt: skip
_LAYOUT_MEMORY = ("zero", "sequence_parallel")


def _unused_at_a_given_mfu(given: dict[str, Any]) -> None:
    """InputError for the arguments a run at a given MFU or GPU-hour budget would ignore: the
    planner's (they shape a predicted plan), and without tp, pp or dp a layout's (ZeRO and
    sequence parallelism shape a layout's per-GPU memory; the state memory is shown for every
    ZeRO stage)."""
    mentions = ("mfu", "gpu_hours")
    checks.unused(train, given, _PLANNER, _AT_A_GIVEN_MFU, "a predicted plan (neither mfu nor gpu_hours)", mentions)
    if given["tp"] is None and given["pp"] is None and given["dp"] is None:
        checks.unused(
            train, given, _LAYOUT_MEMORY, f"{_AT_A_GIVEN_MFU} without a layout", "a layout's memory (tp, pp or dp)",
            (*mentions, "tp", "pp", "dp"),
        )  # fmt: skip


def _costs(
    power_w: Any, pue: Any, grid_kg_per_kwh: Any, usd_per_gpu_hour: Any
) -> tuple[Optional[float], float, Optional[float], Optional[float]]:
    """(power per GPU, PUE, grid kg CO2e/kWh, USD per GPU-hour), checked."""
    return (
        checks.optional(
            power_w, checks.number, "power_w", minimum=POWER_W_RANGE[0], maximum=POWER_W_RANGE[1], open_min=False
        ),  # an attacker's 1e-320 W was taken
        checks.number(pue, "pue", minimum=PUE_RANGE[0], maximum=PUE_RANGE[1], open_min=False),
        checks.optional(grid_kg_per_kwh, checks.price, "grid_kg_per_kwh", MAX_GRID_KG_PER_KWH, "an intensity"),
        checks.optional(usd_per_gpu_hour, checks.price, "usd_per_gpu_hour"),
    )


def train_plan(
    model: ModelLike,
    tokens: int,
    gpu: GpuLike = "h100",
    *,
    gpus: Optional[int] = None,
    global_batch: Optional[int] = None,
    seq: int = 8192,
    tp: Optional[int] = None,
    cp: Optional[int] = None,
    pp: Optional[int] = None,
    vp: Optional[int] = None,
    dp: Optional[int] = None,
    ep: Optional[int] = None,
    zero: Optional[int] = None,
    recompute: Recompute | str | None = None,
    micro_batch: Optional[int] = None,
    dtype: Dtype | str | None = None,
    framework: Framework | str | None = None,
    fp8_recipe: Fp8Recipe | str | None = None,
    fsdp_shard: Optional[int] = None,
    moe_dispatcher: MoeDispatcher | str | None = None,
    moe_capacity_factor: Optional[float] = None,
    ep_comm_overlap: bool = False,
    network_gb_s: Optional[float] = None,
    profile: Profile | str | None = None,
    tp_comm_overlap: Optional[bool] = None,
    power_w: Optional[float] = None,
    pue: float = 1.0,
    grid_kg_per_kwh: Optional[float] = None,
    usd_per_gpu_hour: Optional[float] = None,
    top: int = 5,
) -> TrainPlan:
    """The training planner: the predicted step time, MFU (6ND and with attention), tokens/s per
    GPU, days, GPU-hours, energy and dollars of ``tokens`` tokens on ``gpus`` GPUs with steps of
    ``global_batch`` tokens (default :func:`llm_cost.api.choices.global_batch_of`) of ``seq``-token
    sequences, for the best layout that fits in memory under ``framework`` (``megatron`` or
    ``fsdp2``; default :func:`llm_cost.api.choices.training_framework_of`). Each of TP, CP, PP (and
    ``vp`` virtual stages), DP, EP (MoE), ZeRO stage, recompute, micro-batch and, under FSDP2, the
    HSDP shard group ``fsdp_shard`` given is fixed; the others are searched
    (:mod:`llm_cost.analyses.train_plan`); TP always runs with sequence parallelism. ``dtype``:
    bf16 (default) or fp8 with ``fp8_recipe`` (:func:`llm_cost.api.choices.fp8_recipe_of`); MoE
    tokens reach their experts by ``moe_dispatcher`` (``alltoall``, the default, or ``deepep``),
    dropless unless ``moe_capacity_factor`` pads each expert to a capacity, the all-to-all exposed
    unless ``ep_comm_overlap`` (:class:`~llm_cost.analyses.train_step.MoeRouting`). Timed
    by :func:`llm_cost.api.choices.training_time_model` (the GPU's profile, or ``profile``, x the
    fitted training factors); the network between nodes at ``network_gb_s`` per GPU (default 50
    GB/s); TP collectives overlap the GEMMs with ``tp_comm_overlap`` (default: Megatron yes, as its
    performance recipes run, FSDP2 no). The plan's ``defaults`` say which were taken and why.
    InputError naming the argument."""
    from llm_cost.analyses.train_plan import Cluster, Costs, default_space, fixed, plan_training
    from llm_cost.analyses.train_ranks import links_of
    from llm_cost.core.choices import Framework

    tokens = checks.large_count(tokens, "tokens", 1, 10**40)
    degrees = {n: checks.optional(v, checks.count, n, 1, MAX_LAYOUT) for n, v in
               (("tp", tp), ("cp", cp), ("pp", pp), ("vp", vp), ("dp", dp), ("ep", ep))}  # fmt: skip
    gpus = _cluster_size(checks.optional(gpus, checks.count, "gpus", 1, 10**7), degrees)
    seq = checks.count(seq, "seq")
    batch = choices.global_batch_of(global_batch)
    zero = checks.optional(zero, checks.one_of, "zero", (0, 1, 2, 3))
    rec = checks.optional(recompute, checks.choice, Recompute, "recompute")
    micro_batch = checks.optional(micro_batch, checks.count, "micro_batch")
    shard = checks.optional(fsdp_shard, checks.count, "fsdp_shard", 1, MAX_LAYOUT)
    compute = Dtype(checks.choice(Dtype.BF16 if dtype is None else dtype, TrainingDtype, "dtype").value)
    power_w, pue, grid, price = _costs(power_w, pue, grid_kg_per_kwh, usd_per_gpu_hour)
    costs = Costs(power_w=power_w, pue=pue, usd_per_gpu_hour=price, grid_kg_per_kwh=grid)
    checks.optional(tp_comm_overlap, checks.flag, "tp_comm_overlap")
    top = checks.count(top, "top", 1, 100)
    chosen_framework, framework_from = choices.training_framework_of(framework, zero)
    spec, g = load_model(model), load_gpu(gpu)
    moe_given = [n for n, v in (("moe_dispatcher", moe_dispatcher), ("moe_capacity_factor", moe_capacity_factor),
                                ("ep_comm_overlap", ep_comm_overlap or None)) if v is not None]  # fmt: skip
    if spec.moe is None and moe_given:  # an attack: they were taken without a word
        raise InputError(
            f"{moe_given[0]}: {spec.name} is dense (no routed experts), so no token is dispatched to an expert; "
            "leave it out",
            fields=(moe_given[0],),
        )
    compute = choices.compute_dtype(spec, g, compute, allowed=TRAINING_DTYPES)
    recipe, recipe_from = choices.fp8_recipe_of(fp8_recipe, g, compute)
    rates = choices.training_time_model(g, profile, recipe, chosen_framework)
    q = rates.q
    network = choices.network_gb_s_of(network_gb_s)
    links = links_of(g, network, q["collective_latency_s"], q["link_efficiency"])
    overlap = tp_comm_overlap if tp_comm_overlap is not None else chosen_framework == Framework.MEGATRON
    cluster = Cluster(g, gpus, links, rates, compute, choices.training_reserve_bytes(), overlap,
                      _moe_routing(moe_dispatcher, moe_capacity_factor, ep_comm_overlap))  # fmt: skip
    space = fixed(
        default_space(spec, g, gpus, seq, chosen_framework),
        zero=zero, recompute=rec, micro_batch=micro_batch, shard=shard, **degrees,
    )  # fmt: skip
    defaults = _defaults(global_batch, batch, dtype, compute, chosen_framework, framework_from, recipe, recipe_from,
                         tp_comm_overlap, overlap, network_gb_s, network)  # fmt: skip
    if moe_dispatcher is None and spec.moe is not None:
        defaults["moe_dispatcher"] = (
            "alltoall: each token copy to its expert's GPU (Megatron-Core's default dispatcher)"
        )
    return plan_training(spec, cluster, tokens, batch, seq, space, costs, top, defaults)


def _moe_routing(dispatcher: Any, capacity_factor: Any, overlap: Any) -> MoeRouting:
    """The MoE routing of a plan, checked: ``dispatcher`` (default alltoall), a capacity factor from 1
    to 16 or None (dropless), ``overlap`` true or false."""
    from llm_cost.analyses.train_step import MoeRouting
    from llm_cost.core.choices import MoeDispatcher

    chosen = checks.choice(MoeDispatcher.ALLTOALL if dispatcher is None else dispatcher, MoeDispatcher,
                           "moe_dispatcher")  # fmt: skip
    factor = checks.optional(
        capacity_factor,
        checks.number,
        "moe_capacity_factor",
        minimum=MOE_CAPACITY_FACTOR_RANGE[0],
        maximum=MOE_CAPACITY_FACTOR_RANGE[1],
        open_min=False,
    )
    if not isinstance(overlap, bool):
        raise InputError(f"ep_comm_overlap: {overlap!r} must be True or False", fields=("ep_comm_overlap",))
    return MoeRouting(chosen, factor, overlap)


def _defaults(
    global_batch: Any, batch: int, dtype: Any, compute: Dtype, framework: Any, framework_from: str, recipe: Any,
    recipe_from: str, tp_comm_overlap: Any, overlap: bool, network_gb_s: Any, network: float,
) -> dict[str, str]:  # fmt: skip
    """Each default a plan took, its value and where it came from (the given ones are left out)."""
    out = {}
    if global_batch is None:
        out["global_batch"] = f"{batch:,} tokens: the default 4M = 2^22 (Llama 2's batch)"
    if dtype is None:
        out["dtype"] = f"{compute}: the default, BF16 mixed precision"
    if framework_from != "given":
        out["framework"] = f"{framework}: {framework_from}"
    if compute == Dtype.FP8 and not recipe_from.startswith("given"):
        out["fp8_recipe"] = f"{recipe}: {recipe_from}"
    if tp_comm_overlap is None:
        out["tp_comm_overlap"] = f"{'on' if overlap else 'off'}: {framework}'s default " + (
            "(Megatron's tp_comm_overlap, as NeMo's and Megatron-LM's performance runs set it)"
            if overlap
            else "(async TP is opt-in)"
        )
    if network_gb_s is None:
        out["network_gb_s"] = f"{network:g} GB/s per GPU between nodes: 400 Gb/s InfiniBand NDR"
    return out


def _cluster_size(gpus: Optional[int], degrees: dict[str, Optional[int]]) -> int:
    """The GPUs of a plan: ``gpus``, or tp x cp x pp x dp when all four are given (InputError when
    neither, or when they disagree)."""
    layout = [degrees[n] for n in ("tp", "cp", "pp", "dp")]
    product = None if None in layout else layout[0] * layout[1] * layout[2] * layout[3]  # type: ignore[operator]
    if gpus is None and product is None:
        raise InputError("gpus: give the cluster size, or all of tp, cp, pp and dp", fields=("gpus",))
    if gpus is not None and product is not None and product != gpus:
        raise InputError(
            f"gpus: {gpus:,} disagrees with tp x cp x pp x dp = {product:,}; give one or the other",
            fields=("gpus", "tp", "cp", "pp", "dp"),
        )
    return gpus if gpus is not None else product  # type: ignore[return-value]
