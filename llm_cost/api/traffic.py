"""The serving question's traffic, targets and engine settings, checked: what ``serve`` and
``serve_compare`` simulate. Defaults are decided here (the requests of a simulation, the engine's
server defaults), as :mod:`llm_cost.api.choices` decides the others."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, cast

from llm_cost.api import checks, choices
from llm_cost.core.errors import InputError
from llm_cost.core.limits import (
    DURATION_RANGE_S,
    MAX_CHUNK_TOKENS,
    MAX_LENGTH,
    MAX_NUM_SEQS,
    MAX_PREFIX_USERS,
    MAX_REQUESTS,
    MAX_TARGET_S,
    PERCENTILE_RANGE,
    QPS_RANGE,
)
from llm_cost.core.types import SERVING_ENGINES, Engine

if TYPE_CHECKING:
    from llm_cost.simulate import EngineConfig, SharedPrefix, Target, Trace, Workload
    from llm_cost.simulate.workload import Lengths
    from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = [
    "target_of",
    "targets_of",
    "traffic_of",
    "engine_of",
    "serving_engine",
    "is_file",
    "lengths_of",
    "check_token_gaps",
    "INPUT_TOKENS",
    "OUTPUT_TOKENS",
    "REQUESTS",
]

#: Prompt and output tokens per request when none are given.
INPUT_TOKENS = 2048
OUTPUT_TOKENS = 256
#: Requests one configuration's simulation runs when none are given.
REQUESTS = 1000
#: The latency metrics a target can bound, in the order they are shown.
METRICS = ("ttft_s", "tpot_s", "itl_s", "e2e_s")


def target_of(value: object, name: str) -> Optional[Target]:
    """A service target: None; a number of seconds (the mean at most that); a
    :class:`~llm_cost.simulate.Target`; or text ``p99:2s`` / ``p90:50ms`` / ``mean:1s`` / ``2s``
    (a unit is required in text). InputError naming ``name`` otherwise."""
    from llm_cost.core.choices import Statistic
    from llm_cost.core.units import parse_duration
    from llm_cost.simulate import Target

    if value is None:
        return None
    if isinstance(value, Target):
        statistic = checks.choice(value.statistic, Statistic, name)
        pct = checks.percentile(value.percentile, name) if statistic == Statistic.PERCENTILE else None
        return Target(statistic, _target_seconds(value.seconds, name), pct)
    if isinstance(value, str):
        head, sep, tail = value.strip().partition(":")
        statistic, pct = _statistic(head.strip().lower(), name) if sep else (Statistic.MEAN, None)
        text = (tail if sep else head).strip()
        if not text or not text[-1].isalpha():
            raise InputError(f"{name}: {value!r} has no unit; give one, e.g. p99:2s or 50ms", fields=(name,))
        seconds = parse_duration(text, name)
        return Target(statistic, _target_seconds(seconds, name), pct)
    return Target(Statistic.MEAN, _target_seconds(value, name))


def _target_seconds(value: object, name: str) -> float:
    """A target's seconds, from a nanosecond to :data:`MAX_TARGET_S`, as a duration's text is read
    (:data:`~llm_cost.core.limits.DURATION_RANGE_S`): an attacker's API target of 1e-320 s was
    taken, and printed as 1e-314 µs, where the flag refuses it."""
    return checks.number(value, name, minimum=DURATION_RANGE_S[0], maximum=MAX_TARGET_S, open_min=False)


def _statistic(text: str, name: str) -> tuple[Any, Optional[float]]:
    """The statistic of a target's text: ``mean``, ``p50``/``p90``/``p99`` (named), or any other
    percentile ``pXX`` with 0 < XX < 100 (``p95``, ``p99.9``: ``Statistic.PERCENTILE``)."""
    from llm_cost.core.choices import Statistic

    if text in ("mean", "p50", "p90", "p99"):
        return Statistic(text), None
    if re.fullmatch(r"p[0-9]+(\.[0-9]+)?", text, re.ASCII):  # ASCII digits: not p٩٩
        return Statistic.PERCENTILE, checks.percentile(float(text[1:]), name)
    low, high = PERCENTILE_RANGE
    raise InputError(
        f"{name}: {text!r} is not a statistic; give mean or a percentile pXX with XX from {low:g} to {high:g} "
        "(p50, p95, p99.9)",
        fields=(name,),
    )


def targets_of(**values: object) -> dict[str, Target]:
    """The targets given, by metric (``ttft_s``, ``tpot_s``, ``itl_s``, ``e2e_s``)."""
    out = {}
    for name in METRICS:
        t = target_of(values.get(name), name)
        if t is not None:
            out[name] = t
    return out


def _check_preset_prefix(prefix: SharedPrefix, inputs: Lengths, workload: str) -> None:
    """InputError naming ``input_tokens`` when the prompts given are no longer than the shared
    prefix of the preset ``workload`` (the preset's prefix, not a flag the user gave: an attack's
    error had named ``prefix_tokens``)."""
    from llm_cost.simulate.workload import shortest_prompt

    if prefix.tokens >= shortest_prompt(inputs):
        raise InputError(
            f"input_tokens: prompts of {shortest_prompt(inputs):,g} tokens are shorter than workload {workload}'s "
            f"{prefix.tokens:,}-token shared prefix; give input_tokens more than {prefix.tokens:,}, or leave it out "
            "(the preset's own lengths)",
            fields=("input_tokens", "workload"),
        )


def check_token_gaps(load: Workload | Trace, goals: dict[str, Target]) -> None:
    """InputError naming the target when a TPOT or ITL target bounds traffic whose every request
    answers with one token: it has no gap between tokens to bound (an attack: ``--output 1 --tpot
    p99:1us`` read "met, 100% of requests within")."""
    from llm_cost.simulate import Fixed, Trace

    gapped = [m for m in ("tpot_s", "itl_s") if m in goals]
    if not gapped:
        return
    if isinstance(load, Trace):
        one = all(row.output_tokens <= 1 for row in load.rows)
    else:
        one = isinstance(load.output_tokens, Fixed) and load.output_tokens.tokens <= 1
    if one:
        raise InputError(
            f"{gapped[0]}: every request answers with one output token, which has no time between tokens to bound; "
            "give output_tokens 2 or more, or leave the target out",
            fields=(gapped[0], "output_tokens"),
        )


def lengths_of(value: object, name: str, default: int) -> Lengths:
    """A length distribution: a token count, a distribution's text (``lognormal:mean=800,sd=400``)
    or a distribution; ``default`` tokens when None."""
    from llm_cost.simulate.workload import Empirical, Fixed, LogNormal, Normal, Uniform, parse_lengths

    if value is None:
        return Fixed(default)
    if isinstance(value, (Fixed, Uniform, Normal, LogNormal, Empirical)):
        return _checked_lengths(value, name)
    if checks.integer(value) is not None:
        return Fixed(checks.count(value, name, 1, MAX_LENGTH))
    if not isinstance(value, str):
        raise InputError(
            f"{name}: {value!r} must be a token count or a distribution such as 'lognormal:mean=800,sd=400'",
            fields=(name,),
        )
    return parse_lengths(value, name)


def _checked_lengths(value: Any, name: str) -> Any:
    from llm_cost.simulate.workload import check_lengths

    check_lengths(value, name)
    return value


def shared_prefix(prefix_tokens: object, prefix_groups: object, users_per_prefix: object) -> Optional[SharedPrefix]:
    """The shared prefix of ``prefix_tokens`` tokens, or None; InputError for ``prefix_groups`` or
    ``users_per_prefix`` other than 1 without ``prefix_tokens`` (they shape a prefix there is none
    of: a preset's or a file's own prefix is not changed by them)."""
    from llm_cost.simulate import SharedPrefix

    if prefix_tokens is None:
        for name, value in (("prefix_groups", prefix_groups), ("users_per_prefix", users_per_prefix)):
            if not checks.is_default(value, 1):
                raise InputError(
                    f"{name}: {value!r} shapes a shared prefix; give prefix_tokens too, or leave {name} out",
                    fields=(name, "prefix_tokens"),
                )
        return None
    return SharedPrefix(
        checks.count(prefix_groups, "prefix_groups", 1, MAX_PREFIX_USERS),
        checks.count(prefix_tokens, "prefix_tokens", 1, MAX_LENGTH),
        checks.count(users_per_prefix, "users_per_prefix", 1, MAX_PREFIX_USERS),
    )


def traffic_of(
    *,
    input_tokens: object,
    output_tokens: object,
    qps: object,
    workload: object,
    trace: object,
    prefix_tokens: object,
    prefix_groups: object,
    users_per_prefix: object,
    requests: object,
) -> tuple[Workload | Trace, bool]:
    """The traffic a simulation serves, and whether it has its own arrivals (a rate, a workload
    file or a trace); without them it is one closed-loop user of the lengths and prefix given,
    for the planner to run each candidate saturated at its concurrency.

    ``workload``: a :class:`~llm_cost.simulate.Workload`, a YAML workload file
    (:mod:`llm_cost.simulate.workfile`), or a preset name (``chat``, ``rag``, ``code``,
    ``agentic-long-context``: its lengths and prefix at ``qps``; ``input_tokens`` /
    ``output_tokens`` given replace its lengths). ``trace``: a :class:`~llm_cost.simulate.Trace`
    or a JSONL/CSV file. Otherwise Poisson arrivals at ``qps`` of ``input_tokens`` /
    ``output_tokens`` (counts or distributions) with an optional shared prefix; ``requests``
    (default :data:`REQUESTS`) ends an open-ended workload. InputError naming the argument."""
    from llm_cost.simulate import ClosedLoop, Trace, Workload, poisson
    from llm_cost.simulate.workfile import preset, read_workload
    from llm_cost.simulate.workload import read_trace

    rate = checks.optional(qps, checks.number, "qps", minimum=QPS_RANGE[0], maximum=QPS_RANGE[1], open_min=False)
    count = checks.optional(requests, checks.count, "requests", 1, MAX_REQUESTS)
    prefix = shared_prefix(prefix_tokens, prefix_groups, users_per_prefix)
    if workload is not None and trace is not None:
        raise InputError("workload and trace: give one of them", fields=("workload", "trace"))
    own = trace is not None or isinstance(workload, Workload) or is_file(workload)
    if own and (rate is not None or prefix is not None):
        name = "trace" if trace is not None else "workload"
        raise InputError(
            f"{name}: the file holds its own arrivals and prefixes; leave out qps and prefix_tokens",
            fields=(name, "qps", "prefix_tokens"),
        )
    if own and (input_tokens is not None or output_tokens is not None):
        name = "trace" if trace is not None else "workload"
        raise InputError(
            f"{name}: the file holds its own request lengths; leave out input_tokens and output_tokens",
            fields=(name, "input_tokens", "output_tokens"),
        )
    if trace is not None:
        t = trace if isinstance(trace, Trace) else read_trace(_path(trace, "trace"))
        if count is not None and count > len(t.rows):  # the first rows are replayed: more were capped unsaid
            raise InputError(  # (an attacker's requests 5 on a trace of 3 rows ran 3)
                f"requests: {count:,} is more than the trace's {len(t.rows):,} rows; give at most {len(t.rows):,} "
                "(the first are replayed), or leave requests out",
                fields=("requests",),
            )
        t = Trace(t.rows[:count]) if count is not None else t
        if len(t.rows) > MAX_REQUESTS:
            raise InputError(
                f"trace: {len(t.rows):,} rows, more than the {MAX_REQUESTS:,} requests one simulation runs",
                fields=("trace",),
            )
        outputs_sum = sum(r.output_tokens for r in t.rows)
        checks.simulated_tokens(len(t.rows), outputs_sum / max(len(t.rows), 1), "trace")
        return t, True
    if own:
        w = workload if isinstance(workload, Workload) else read_workload(_path(workload, "workload"))
        if count is not None:
            w = Workload(w.arrivals, w.input_tokens, w.output_tokens, w.prefix, min(count, w.requests or count))
        return _bounded(w, "workload" if isinstance(workload, Workload) else str(workload)), True
    if workload is not None:
        p = preset(cast(str, workload))
        inputs = p.input_tokens if input_tokens is None else lengths_of(input_tokens, "input_tokens", INPUT_TOKENS)
        outputs = (
            p.output_tokens if output_tokens is None else lengths_of(output_tokens, "output_tokens", OUTPUT_TOKENS)
        )
        if prefix is None and p.prefix is not None and input_tokens is not None:
            _check_preset_prefix(p.prefix, inputs, str(workload))
        prefix = prefix or p.prefix
    else:
        inputs = lengths_of(input_tokens, "input_tokens", INPUT_TOKENS)
        outputs = lengths_of(output_tokens, "output_tokens", OUTPUT_TOKENS)
    if rate is None:
        return _bounded(Workload(ClosedLoop(1), inputs, outputs, prefix, count or REQUESTS), None, work=False), False
    return _bounded(poisson(rate, inputs, outputs, requests=count or REQUESTS, prefix=prefix), None), True


def _bounded(w: Workload, where: str | None, work: bool = True) -> Workload:
    """``w`` within the simulator's bounds (:func:`~llm_cost.simulate.workload.check_workload`,
    named by the file's keys with ``where``) and, with ``work``, within the output tokens one
    simulation decodes (:func:`~llm_cost.api.checks.simulated_tokens`)."""
    from llm_cost.simulate.workload import check_workload, drawn_mean, request_bound

    where = where if where != "workload" else None
    check_workload(w, where)
    if work:
        checks.simulated_tokens(request_bound(w), drawn_mean(w.output_tokens), where)
    return w


def is_file(value: object) -> bool:
    """Whether a workload argument names a file (a path, or text ending in .yaml/.yml)."""
    return isinstance(value, Path) or (isinstance(value, str) and value.strip().lower().endswith((".yaml", ".yml")))


def _path(value: Any, name: str) -> Path:
    if isinstance(value, Path):
        return value
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise InputError(f"{name}: {value!r} is not a file path", fields=(name,))
    return Path(value)


def serving_engine(engine: object) -> Engine:
    """``engine`` (an :class:`~llm_cost.core.types.Engine` or its value) as the Engine member, if its
    scheduler is simulated (:data:`~llm_cost.core.types.SERVING_ENGINES`); InputError naming
    ``engine`` otherwise."""
    return Engine(checks.one_of(engine, "engine", SERVING_ENGINES))


def engine_of(
    spec: ModelSpec,
    gpu: HardwareSpec,
    *,
    engine: object,
    max_num_seqs: object,
    max_num_batched_tokens: object,
    chunked_prefill: object,
    prefix_caching: object,
    max_model_len: object,
) -> EngineConfig:
    """The engine's settings: its server defaults for the GPU
    (:func:`llm_cost.simulate.engine.engine_defaults`: vLLM's, TensorRT-LLM's own), ``max_model_len`` the model's
    ``max_position_embeddings`` (a longer request is refused, as vLLM refuses it), and the
    settings given. Without chunked prefill the token budget is vLLM's default for it,
    ``max(max_model_len, 2048)``."""
    from llm_cost.simulate.engine import engine_defaults

    name = serving_engine(engine)
    checks.flag(prefix_caching, "prefix_caching")
    checks.flag(chunked_prefill, "chunked_prefill")
    length = choices.max_model_len_of(spec, max_model_len)
    changes: dict[str, Any] = {}
    if max_num_seqs is not None:
        changes["max_num_seqs"] = checks.count(max_num_seqs, "max_num_seqs", 1, MAX_NUM_SEQS)
    if max_num_batched_tokens is not None:
        changes["max_num_batched_tokens"] = checks.step_tokens(max_num_batched_tokens, "max_num_batched_tokens")
    if not chunked_prefill and "max_num_batched_tokens" not in changes:
        changes["max_num_batched_tokens"] = max(length, 2048)
    config = engine_defaults(
        gpu,
        engine=name,
        prefix_caching=prefix_caching,
        chunked_prefill=chunked_prefill,
        max_model_len=length,
        **changes,
    )
    check_budget(config)
    return config


def check_budget(config: EngineConfig) -> None:
    """InputError (naming ``max_num_batched_tokens`` and ``max_num_seqs``) for a vLLM token budget
    below its sequence cap, which vLLM refuses: vllm/config/scheduler.py
    SchedulerConfig.verify_max_model_len, vllm-project/vllm @ 01230b40128e ("max_num_batched_tokens
    must be greater than or equal to max_num_seqs")."""
    if config.engine == Engine.VLLM and config.max_num_batched_tokens < config.max_num_seqs:
        if not config.chunked_prefill:  # the budget is vLLM's own, max(max_model_len, 2,048): a larger one
            raise InputError(  # would turn chunked prefill on (a second attacker was told to give one)
                f"max_num_seqs: {config.max_num_seqs:,} is more than the token budget without chunked prefill "
                f"({config.max_num_batched_tokens:,}), which vLLM refuses (each running sequence needs a token of "
                f"the step); give max_num_seqs {config.max_num_batched_tokens:,} or fewer",
                fields=("max_num_seqs",),
            )
        raise InputError(
            f"max_num_batched_tokens: {config.max_num_batched_tokens:,} is fewer than max_num_seqs "
            f"{config.max_num_seqs:,}, which vLLM refuses (each running sequence needs a token of the step); give "
            + (
                f"max_num_batched_tokens {config.max_num_seqs:,} or more, or "
                if config.max_num_seqs <= MAX_CHUNK_TOKENS  # a budget the limit takes (an attack was told 16,777,216)
                else ""
            )
            + f"max_num_seqs {config.max_num_batched_tokens:,} or fewer",
            fields=("max_num_batched_tokens", "max_num_seqs"),
        )


def check_steps(load: Workload | Trace, config: EngineConfig, requests: Optional[int] = None) -> None:
    """InputError (naming ``max_num_batched_tokens``) when simulating ``load`` (at most ``requests``
    of its requests) under ``config`` takes more engine steps at the least than one simulation runs
    (:func:`~llm_cost.api.checks.simulated_steps`): its prompt and output tokens, less the shared
    prefixes the cache serves, over the token budget per step. ``--chunk 2`` under 1,000 requests
    of 2,048 + 256 tokens is 1.15 million steps. Requests longer than ``max_model_len`` are left out:
    the engine refuses them without a step."""
    from llm_cost.simulate import Trace
    from llm_cost.simulate.workload import drawn_mean, request_bound

    cached = config.prefix_caching
    limit = config.max_model_len if config.max_model_len is not None else math.inf
    tokens: float
    if isinstance(load, Trace):
        head = load.rows[:requests] if requests is not None else load.rows
        rows = [r for r in head if r.input_tokens + r.output_tokens <= limit]  # the engine refuses the others
        tokens = sum(r.input_tokens + r.output_tokens - (r.prefix_tokens if cached else 0) for r in rows)
        count = float(len(rows))
    elif drawn_mean(load.input_tokens) + drawn_mean(load.output_tokens) > limit:
        return  # most requests are refused for their length, taking no steps: the run's own error says so
    else:
        count = request_bound(load) if requests is None else min(requests, request_bound(load))
        prefix = load.prefix.tokens if cached and load.prefix is not None else 0
        tokens = count * max(1.0, drawn_mean(load.input_tokens) - prefix + drawn_mean(load.output_tokens))
    if count:
        checks.simulated_steps(count, tokens / count, config.max_num_batched_tokens)
