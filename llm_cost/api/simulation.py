"""The API's simulation of one engine replica under load: a distribution of TTFT, ITL, TPOT and
E2E, not a mean (:mod:`llm_cost.simulate`; checked on 18 real vLLM v0.15.1 runs,
``scripts/check_serving_runs.py``). The command line reaches the same simulation through ``serve``
with a layout and a rate, a workload or a trace (:func:`llm_cost.serve`, whose result adds
targets, goodput and cost); :func:`simulate_serving` is its Poisson-only form, returning the
simulator's own result (``llm_cost.simulate`` is the simulator package)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

from llm_cost.api import checks, choices
from llm_cost.api.model import GpuLike, ModelLike, load_gpu, load_model
from llm_cost.api.requests import EngineArg, KvDtypeArg, ProfileArg, WeightsDtypeArg
from llm_cost.core.errors import InputError
from llm_cost.core.limits import MAX_LENGTH, MAX_NUM_SEQS, MAX_REQUESTS, MAX_SEED, QPS_RANGE

if TYPE_CHECKING:
    from llm_cost.model.layout import Layout
    from llm_cost.simulate import SimResult

__all__ = ["simulate_serving"]


def simulate_serving(
    model: ModelLike,
    gpu: GpuLike = "h100",
    input_tokens: Union[int, str] = 2048,
    output_tokens: Union[int, str] = 256,
    *,
    qps: float,
    requests: int = 1000,
    prefix_tokens: Optional[int] = None,
    prefix_groups: int = 1,
    users_per_prefix: int = 1,
    layout: Optional[Layout] = None,
    engine: Optional[EngineArg] = None,
    max_num_seqs: Optional[int] = None,
    max_num_batched_tokens: Optional[int] = None,
    prefix_caching: bool = True,
    gpu_memory_utilization: Optional[float] = None,
    weights_dtype: Optional[WeightsDtypeArg] = None,
    kv_dtype: Optional[KvDtypeArg] = None,
    profile: Optional[ProfileArg] = None,
    seed: int = 0,
) -> SimResult:
    """``requests`` requests arriving as a Poisson process at ``qps`` per second, served by one
    replica of ``model`` on ``layout`` GPUs of ``gpu`` under ``engine``'s scheduler (``vllm``: V1's,
    ``sglang``: admission by its new-token estimate, or ``trtllm``: full-length reservation). ``input_tokens`` and ``output_tokens`` are counts or
    distributions (``"lognormal:mean=800,sd=400"``); ``prefix_tokens`` of each prompt are one of
    ``prefix_groups`` shared system prompts, each used by ``users_per_prefix`` users. Engine
    settings default to the engine's server defaults for the GPU
    (:func:`llm_cost.simulate.engine.engine_defaults`, as ``serve`` takes them), ``max_model_len`` to the model's
    ``max_position_embeddings`` (a longer request is refused, as vLLM refuses it); the KV cache holds what
    ``gpu_memory_utilization`` (default 0.9) of each GPU leaves after the weights, a step's
    workspace and the runtime reserve. Steps are timed by ``profile`` if given, else by the time
    model of the GPU under ``engine`` (:func:`llm_cost.api.choices.time_model_of`); ``engine``
    defaults to the profile's engine, else vLLM, and may not contradict it
    (:func:`llm_cost.api.choices.serving_engine_of`).
    Deterministic for ``seed``; InputError naming the argument."""
    from llm_cost.analyses.serving_runs import replica_kv_pool
    from llm_cost.analyses.simulated_serving import no_kv_room
    from llm_cost.api.traffic import check_budget, check_steps, shared_prefix
    from llm_cost.model.layout import ONE_GPU
    from llm_cost.simulate import simulate as run
    from llm_cost.simulate.engine import engine_defaults
    from llm_cost.simulate.workload import check_workload, drawn_mean, parse_lengths, poisson

    rate = checks.number(qps, "qps", minimum=QPS_RANGE[0], maximum=QPS_RANGE[1], open_min=False)
    count = checks.count(requests, "requests", 1, MAX_REQUESTS)
    lengths = [
        parse_lengths(_length(v, n), n) for v, n in ((input_tokens, "input_tokens"), (output_tokens, "output_tokens"))
    ]
    prefix = shared_prefix(prefix_tokens, prefix_groups, users_per_prefix)
    workload = poisson(rate, lengths[0], lengths[1], requests=count, prefix=prefix)
    check_workload(workload)
    checks.simulated_tokens(count, drawn_mean(workload.output_tokens))
    spec, g = load_model(model), load_gpu(gpu)
    changes = {}
    if max_num_seqs is not None:
        changes["max_num_seqs"] = checks.count(max_num_seqs, "max_num_seqs", 1, MAX_NUM_SEQS)
    if max_num_batched_tokens is not None:
        changes["max_num_batched_tokens"] = checks.step_tokens(max_num_batched_tokens, "max_num_batched_tokens")
    checks.flag(prefix_caching, "prefix_caching")
    config = engine_defaults(
        g,
        engine=choices.serving_engine_of(engine, profile),
        prefix_caching=prefix_caching,
        max_model_len=spec.max_position_embeddings,  # vLLM's default: longer requests are refused
        **changes,
    )
    check_budget(config)
    check_steps(workload, config)
    where = choices.layout_of(layout) or ONE_GPU
    bits, kv = choices.weight_bits(spec, weights_dtype), choices.kv_dtype_of(kv_dtype).bits
    policy = choices.memory_policy(gpu_memory_utilization=gpu_memory_utilization)
    pool = replica_kv_pool(spec, g, where, config, policy, bits, kv)
    tokens = pool.tokens
    if tokens < config.block_tokens * (1 + pool.state_blocks):
        raise no_kv_room(spec, g, where.gpus, policy, "layout")
    model_ = choices.time_model_of(g, config.engine, profile)
    compute = choices.compute_dtype(spec, g, None, weights_dtype)
    return run(
        spec,
        g,
        workload,
        config,
        model_,
        where,
        kv_capacity_tokens=tokens,
        sequence_state_blocks=pool.state_blocks,
        weight_bits=bits,
        kv_bits=kv,
        compute_dtype=compute,
        seed=checks.count(seed, "seed", 0, MAX_SEED),
    )


def _length(value: Any, name: str) -> Any:
    """A count or a distribution's text, as :func:`llm_cost.simulate.workload.parse_lengths` reads."""
    if checks.integer(value) is not None:
        return checks.count(value, name, 1, MAX_LENGTH)
    if not isinstance(value, str):
        raise InputError(
            f"{name}: {value!r} must be a token count or a distribution such as 'lognormal:mean=800,sd=400'",
            fields=(name,),
        )
    return value
