"""Workloads by name and from files: the named presets, each with its source, and the YAML
workload file.

A workload file is a YAML mapping (every key optional but the arrivals; lengths as
:func:`~llm_cost.simulate.workload.parse_lengths` reads them, a count or ``kind:options``)::

    preset: chat                  # start from a preset; the keys below replace its own
    arrivals:                     # open loop: one rate, or stages one after another
      process: poisson            # poisson | gamma | constant | fixed_count
      cv: 2.0                     # gamma only: the gaps' coefficient of variation (burstiness)
      rate_rps: 8                 # with duration_s, or stages:
      duration_s: 600
      stages:
        - {rate_rps: 4, duration_s: 300}
        - {rate_rps: 12, duration_s: 300}
    # arrivals: {users: 32, think_s: 2.0, think: exponential, duration_s: 600}   # a closed loop
    input_tokens: lognormal:mean=800,sd=400     # the whole prompt, prefix included
    output_tokens: 256
    prefix: {tokens: 200, groups: 4, users_per_group: 8, repeat_questions: false}
    requests: 2000                # at most this many requests (needed by an open-ended stage)

An unknown key, a missing rate or a bad length is refused with the file and the key path
(``work.yaml: arrivals.stages[1].rate_rps: ...``), and so is a workload past the simulator's
bounds (:func:`~llm_cost.simulate.workload.check_workload`): more than 20,000 requests, users or
expected arrivals (rate_rps x duration_s), a closed loop with no end (requests or duration_s),
a gamma cv outside 0.01..100, a think time over a day, a prefix not shorter than the prompt.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from llm_cost.core.errors import InputError
from llm_cost.core.records import record
from llm_cost.simulate.workload import (
    ARRIVAL_PROCESSES,
    ClosedLoop,
    Fixed,
    LogNormal,
    OpenLoop,
    SharedPrefix,
    Stage,
    Workload,
    check_workload,
    parse_lengths,
)
from llm_cost.specs.files import shown

__all__ = ["Preset", "PRESETS", "preset", "read_workload", "workload_from_dict"]


@record
class Preset:
    """A named workload's lengths and shared prefix (arrivals come from the caller) and where
    its figures come from."""

    name: str
    input_tokens: Any
    output_tokens: Any
    prefix: SharedPrefix | None
    source: str


_SIM_TO_REAL = (
    "inference-sim's sim-to-real accuracy benchmark (inference-perf shared_prefix profile '{}' of its real vLLM "
    "runs; llm_cost/data/measurements/serving/vllm-serving-under-load.yaml)"
)

#: The named workloads (``--workload NAME``).
PRESETS = {
    p.name: p
    for p in (
        Preset("chat", Fixed(547), Fixed(248), SharedPrefix(9, 100, 5), _SIM_TO_REAL.format("general")),
        Preset("code", Fixed(566), Fixed(247), SharedPrefix(11, 100, 4), _SIM_TO_REAL.format("codegen")),
        Preset(
            "rag",
            Fixed(4096),
            Fixed(512),
            None,
            "NVIDIA Enterprise RAG sizing guide, RAG benchmarking methodology: the summarization use case, "
            "ISL/OSL 4096/512 (docs.nvidia.com/enterprise-reference-architectures/enterprise-rag-retrieval-scaling-"
            "and-sizing-guide)",
        ),
        Preset(
            "agentic-long-context",
            # each step re-reads its session's history (the median cached prefix) and appends new tokens
            # (their mean and a spread whose lognormal median is the median append); outputs lognormal of
            # the mean and median output
            LogNormal(115_584 + 5_283, 31_060, low=115_585),
            LogNormal(415, 839),
            SharedPrefix(16, 115_584, 1),
            "SyFI TraceLab (University of Washington), per-step token lengths of Codex agent sessions: cached "
            "prefix median 115,584; appended tokens mean 5,283, median 886; output mean 415, median 184 "
            "(tracelab.cs.washington.edu/exp/llm_generation/token_length_distribution); 16 concurrent sessions "
            "assumed",
        ),
    )
}


def preset(name: str) -> Preset:
    """The preset of that name; InputError naming ``workload`` and the presets otherwise."""
    found = PRESETS.get(str(name).strip().lower())
    if found is None:
        raise InputError(
            f"workload: {name!r} is neither a workload file (.yaml) nor a preset ({', '.join(PRESETS)})",
            fields=("workload",),
        )
    return found


def _fail(where: str, message: str) -> InputError:
    return InputError(f"{where}: {message}", fields=("workload",))


def _keys(data: Any, where: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _fail(where, f"must be a mapping of {', '.join(allowed)}")
    unknown = sorted(set(map(str, data)) - set(allowed))
    if unknown:
        raise _fail(where, f"unknown key(s) {', '.join(unknown)}; keys: {', '.join(allowed)}")
    return {str(k): v for k, v in data.items()}


def _number(value: Any, where: str, zero: bool = False) -> float:
    """A finite number greater than 0 (at least 0 with ``zero``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(where, f"{value!r} must be a number")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not zero):
        raise _fail(where, f"{value!r} must be a finite number {'of at least' if zero else 'greater than'} 0")
    return v


def _count(value: Any, where: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(where, f"{value!r} must be a whole number of at least {minimum}")
    return value


def _arrivals(data: Any, where: str) -> OpenLoop | ClosedLoop:
    d = _keys(data, where, ("process", "cv", "rate_rps", "duration_s", "stages", "users", "think_s", "think"))
    if "users" in d:
        extra = sorted(set(d) & {"process", "cv", "rate_rps", "stages"})
        if extra:
            raise _fail(where, f"a closed loop (users) takes no {', '.join(extra)}")
        think = str(d.get("think", "fixed"))
        if think not in ("fixed", "exponential"):
            raise _fail(f"{where}.think", f"{think!r} is not fixed or exponential")
        return ClosedLoop(
            _count(d["users"], f"{where}.users"),
            _number(d.get("think_s", 0.0), f"{where}.think_s", zero=True),
            think,
            _number(d["duration_s"], f"{where}.duration_s") if "duration_s" in d else math.inf,
        )
    process = str(d.get("process", "poisson"))
    if process not in ARRIVAL_PROCESSES:
        raise _fail(f"{where}.process", f"{process!r} is not one of {', '.join(ARRIVAL_PROCESSES)}")
    closed_only = sorted(set(d) & {"think_s", "think"})
    if closed_only:
        raise _fail(
            where, f"an open loop (rate_rps or stages) takes no {', '.join(closed_only)}; give users for a closed loop"
        )
    if "cv" in d and process != "gamma":
        raise _fail(
            f"{where}.cv", f"sets a gamma process's burstiness; {process!r} arrivals have none (give process: gamma)"
        )
    if "stages" in d:
        if "rate_rps" in d or "duration_s" in d:
            raise _fail(where, "give stages or rate_rps (with duration_s), not both")
        raw = d["stages"]
        if not isinstance(raw, list) or not raw:
            raise _fail(f"{where}.stages", "must be a list of {rate_rps, duration_s}")
        stages = []
        for i, s in enumerate(raw):
            at = f"{where}.stages[{i}]"
            s = _keys(s, at, ("rate_rps", "duration_s"))
            if "rate_rps" not in s:
                raise _fail(at, "needs rate_rps")
            duration = _number(s["duration_s"], f"{at}.duration_s") if "duration_s" in s else math.inf
            stages.append(Stage(duration, _number(s["rate_rps"], f"{at}.rate_rps")))
    else:
        if "rate_rps" not in d:
            raise _fail(where, "needs rate_rps (or stages, or users for a closed loop)")
        duration = _number(d["duration_s"], f"{where}.duration_s") if "duration_s" in d else math.inf
        stages = [Stage(duration, _number(d["rate_rps"], f"{where}.rate_rps"))]
    cv = _number(d["cv"], f"{where}.cv") if "cv" in d else 1.0
    return OpenLoop(tuple(stages), process, cv)


def _prefix(data: Any, where: str) -> SharedPrefix:
    d = _keys(data, where, ("tokens", "groups", "users_per_group", "repeat_questions"))
    if "tokens" not in d:
        raise _fail(where, "needs tokens")
    repeat = d.get("repeat_questions", False)
    if not isinstance(repeat, bool):
        raise _fail(f"{where}.repeat_questions", f"{repeat!r} must be true or false")
    return SharedPrefix(
        _count(d.get("groups", 1), f"{where}.groups"),
        _count(d["tokens"], f"{where}.tokens"),
        _count(d.get("users_per_group", 1), f"{where}.users_per_group"),
        repeat,
    )


def _lengths(value: Any, where: str, name: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _fail(where, f"{value!r} must be a token count or a distribution such as 'lognormal:mean=800,sd=400'")
    try:
        return parse_lengths(value, name)
    except InputError as e:
        raise _fail(where, str(e).split(": ", 1)[-1]) from None


def _preset_field(value: Any, where: str) -> Preset:
    """The preset a workload file's ``preset`` names; InputError naming the file's key and the
    presets otherwise (a number, a list or an unknown name; not the --workload flag's message)."""
    found = PRESETS.get(value.strip().lower()) if isinstance(value, str) else None
    if found is None:
        raise _fail(where, f"{shown(repr(value), 80)} is not a preset; give one of {', '.join(PRESETS)}")
    return found


def workload_from_dict(data: Any, where: str = "workload") -> Workload:
    """A workload from a mapping of the module docstring's keys (``where`` prefixes messages).
    InputError naming the key path otherwise."""
    d = _keys(data, where, ("preset", "arrivals", "input_tokens", "output_tokens", "prefix", "requests"))
    base = _preset_field(d["preset"], f"{where}.preset") if "preset" in d else None
    if "arrivals" not in d:
        raise _fail(where, "needs arrivals (rate_rps, stages, or users)")
    inputs = _lengths(d["input_tokens"], f"{where}.input_tokens", "input_tokens") if "input_tokens" in d else None
    outputs = _lengths(d["output_tokens"], f"{where}.output_tokens", "output_tokens") if "output_tokens" in d else None
    if base is None and (inputs is None or outputs is None):
        raise _fail(where, "needs input_tokens and output_tokens (or a preset)")
    prefix = _prefix(d["prefix"], f"{where}.prefix") if d.get("prefix") is not None else None
    workload = Workload(
        _arrivals(d["arrivals"], f"{where}.arrivals"),
        inputs or base.input_tokens,  # type: ignore[union-attr]
        outputs or base.output_tokens,  # type: ignore[union-attr]
        prefix if "prefix" in d or base is None else base.prefix,
        _count(d["requests"], f"{where}.requests") if "requests" in d else None,
    )
    check_workload(workload, where)  # the simulator's bounds, named by this file's keys
    return workload


def read_workload(path: str | Path) -> Workload:
    """The workload of a YAML file (module docstring); InputError naming the file and key."""
    from llm_cost.specs.files import read_yaml

    path = Path(path)
    try:
        data = read_yaml(path)
    except InputError as e:
        raise InputError(str(e), fields=("workload",)) from None
    return workload_from_dict(data, str(path))
