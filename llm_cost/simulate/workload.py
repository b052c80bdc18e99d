"""Traffic for the simulator: when requests arrive, how long their prompts and outputs are, which
prompts share a prefix, or a recorded trace to replay.

A :class:`Workload` is arrivals (:class:`OpenLoop` stages or a :class:`ClosedLoop` of users), a
length distribution for the prompt (``input_tokens``, the whole prompt) and for the output
(``output_tokens``), and optionally a :class:`SharedPrefix`. :func:`requests` draws the open-loop
requests; the engine draws a closed loop's as its users come back (:func:`draw_lengths`).

Arrivals of one stage (``duration_s`` seconds at ``rate_rps`` requests per second):

* ``poisson``: exponential gaps of mean 1/rate;
* ``gamma``: gamma gaps of mean 1/rate and coefficient of variation ``cv`` (burstiness: 1 is
  Poisson, above 1 burstier, below 1 more regular; shape 1/cv^2);
* ``constant``: gaps of exactly 1/rate;
* ``fixed_count``: inference-perf's ``constant`` load type (``ConstantLoadTimer`` in
  kubernetes-sigs/inference-perf ``inference_perf/loadgen/load_timer.py``): int(rate x duration)
  exponential gaps rescaled to sum to the duration (Poisson arrivals with a fixed count).

Stages follow each other; a workload ends after its last stage or its ``requests``.

Lengths (tokens, integers of at least 1): :class:`Fixed`, :class:`Uniform` (inclusive bounds),
:class:`Normal` and :class:`LogNormal` (by the mean and standard deviation of the lengths
themselves, rounded and clipped to [low, high]), :class:`Empirical` (values, optionally weighted).
:func:`parse_lengths` reads them from text: ``800``, ``2K``, ``uniform:low=100,high=900``,
``normal:mean=800,sd=200``, ``lognormal:mean=800,sd=400``, ``empirical:100,200,400``.

Shared prefixes follow inference-perf's ``shared_prefix`` data profile
(``inference_perf/datagen/shared_prefix_datagen.py``): ``groups`` system prompts of ``tokens``
tokens, each used by ``users_per_group`` users; requests go to the users in turn (a seeded
shuffle, as inference-perf cycles through its shuffled prompts). A prompt is its group's system
prompt followed by a question of its own, so a prompt holds at least ``tokens`` + 1 tokens. With
``repeat_questions`` each user asks the same question every time (inference-perf's single-turn
mode: the whole prompt repeats and can be served from the prefix cache); by default every
question is new and only the system prompt is shared.

Traces (:func:`read_trace`): JSONL or CSV rows of ``arrival_s``, ``input_tokens`` (the whole
prompt), ``output_tokens`` and optionally ``prefix_id`` and ``prefix_tokens`` (the first
``prefix_tokens`` of the prompt are shared by every row of the same ``prefix_id``).

Sampling uses the standard library's ``random.Random`` seeded with a string (deterministic on any
platform and Python version, version-2 seeding): the simulator needs a few draws per request, and
numpy, an optional extra of the package, would only add an import.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Hashable, Iterator, Sequence
from pathlib import Path

from llm_cost.core.errors import InputError
from llm_cost.core.limits import (
    CV_RANGE,
    MAX_LENGTH,
    MAX_PREFIX_USERS,
    MAX_REQUESTS,
    MAX_THINK_S,
    MAX_TRACE_BYTES,
    MAX_TRACE_TOKENS,
)
from llm_cost.core.records import record
from llm_cost.core.units import fmt_rate, parse_context
from llm_cost.specs.files import shown

__all__ = [
    "Fixed",
    "Uniform",
    "Normal",
    "LogNormal",
    "Empirical",
    "Lengths",
    "parse_lengths",
    "check_lengths",
    "check_workload",
    "request_bound",
    "shortest_prompt",
    "drawn_mean",
    "MAX_REQUESTS",
    "Stage",
    "OpenLoop",
    "ClosedLoop",
    "SharedPrefix",
    "Workload",
    "TraceRow",
    "Trace",
    "Request",
    "ARRIVAL_PROCESSES",
    "requests",
    "Users",
    "user_table",
    "draw_lengths",
    "stage_bounds",
    "read_trace",
    "trace_requests",
    "poisson",
    "expected_cached_tokens",
]

#: The arrival processes of a stage (see the module docstring).
ARRIVAL_PROCESSES = ("poisson", "gamma", "constant", "fixed_count")


def _clip(value: float, low: int, high: int | None) -> int:
    n = max(low, round(value))
    return n if high is None else min(n, high)


@record
class Fixed:
    """Every length is ``tokens``."""

    tokens: int

    @property
    def mean(self) -> float:
        """The mean length, tokens."""
        return float(self.tokens)

    def sample(self, rng: random.Random) -> int:
        """One length, tokens."""
        return self.tokens


@record
class Uniform:
    """Lengths uniform on the integers ``low`` .. ``high`` (inclusive)."""

    low: int
    high: int

    @property
    def mean(self) -> float:
        """The mean length, tokens."""
        return (self.low + self.high) / 2

    def sample(self, rng: random.Random) -> int:
        """One length, tokens."""
        return rng.randint(self.low, self.high)


@record
class Normal:
    """Lengths normal with this ``mean`` and standard deviation ``sd`` (tokens), rounded and
    clipped to [``low``, ``high``] (the clipping moves the mean when it cuts much off)."""

    mean: float
    sd: float
    low: int = 1
    high: int | None = None

    def sample(self, rng: random.Random) -> int:
        """One length, tokens."""
        return _clip(rng.gauss(self.mean, self.sd), self.low, self.high)


@record
class LogNormal:
    """Lengths log-normal whose own mean and standard deviation are ``mean`` and ``sd`` (tokens):
    ln L ~ N(mu, sigma^2) with sigma^2 = ln(1 + sd^2 / mean^2), mu = ln(mean) - sigma^2 / 2;
    rounded and clipped to [``low``, ``high``]."""

    mean: float
    sd: float
    low: int = 1
    high: int | None = None

    def sample(self, rng: random.Random) -> int:
        """One length, tokens."""
        sigma2 = math.log(1 + (self.sd / self.mean) ** 2)
        return _clip(rng.lognormvariate(math.log(self.mean) - sigma2 / 2, math.sqrt(sigma2)), self.low, self.high)


@record
class Empirical:
    """Lengths drawn from ``values`` (with ``weights``, else equally likely)."""

    values: tuple[int, ...]
    weights: tuple[float, ...] | None = None

    @property
    def mean(self) -> float:
        """The mean length, tokens."""
        w = self.weights or (1.0,) * len(self.values)
        return sum(v * x for v, x in zip(self.values, w)) / sum(w)

    def sample(self, rng: random.Random) -> int:
        """One length, tokens."""
        if self.weights is None:
            return self.values[rng.randrange(len(self.values))]
        return rng.choices(self.values, self.weights)[0]


Lengths = Fixed | Uniform | Normal | LogNormal | Empirical


def _phi(x: float) -> float:
    """The standard normal distribution function."""
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def _density(z: float) -> float:
    """The standard normal density (0 at an infinite bound)."""
    return math.exp(-z * z / 2) / math.sqrt(2 * math.pi) if math.isfinite(z) else 0.0


def _clipped_mean(lengths: Normal | LogNormal) -> float:
    """E[clip(X, low, high)] of a normal or lognormal X with the distribution's mean and sd (rounding
    aside): low x P(X < low) + E[X; low <= X <= high] + high x P(X > high), with the partial
    expectations of the normal (mu (Phi(b) - Phi(a)) + sigma (phi(a) - phi(b)) at the standardised
    bounds) and of the lognormal (e^(mu + sigma^2/2) (Phi((ln high - mu - sigma^2)/sigma) -
    Phi((ln low - mu - sigma^2)/sigma)))."""
    low, high = float(lengths.low), float(lengths.high) if lengths.high is not None else math.inf
    if isinstance(lengths, Normal):
        if lengths.sd == 0:
            return min(max(lengths.mean, low), high)
        mu, sigma = lengths.mean, lengths.sd
        a, b = (low - mu) / sigma, (high - mu) / sigma
        inside = mu * (_phi(b) - _phi(a)) + sigma * (_density(a) - _density(b))
        return low * _phi(a) + inside + (high * (1 - _phi(b)) if math.isfinite(high) else 0.0)
    sigma2 = math.log(1 + (lengths.sd / lengths.mean) ** 2)
    if sigma2 == 0:
        return min(max(lengths.mean, low), high)
    mu, sigma = math.log(lengths.mean) - sigma2 / 2, math.sqrt(sigma2)
    a, b = (math.log(low) - mu) / sigma, (math.log(high) - mu) / sigma if math.isfinite(high) else math.inf
    inside = lengths.mean * (_phi(b - sigma) - _phi(a - sigma))
    return low * _phi(a) + inside + (high * (1 - _phi(b)) if math.isfinite(high) else 0.0)


def drawn_mean(lengths: Lengths) -> float:
    """The mean of the lengths ``lengths`` draws, tokens: a normal or lognormal distribution's own
    mean, or where its clipping to [low, high] moves that by half a token or more (the rounding of
    each draw to whole tokens moves it by up to that much, and is not counted), the clipped
    distribution's (:func:`_clipped_mean`): an attack's ``lognormal:mean=800,sd=400,high=100``
    draws 100-token prompts, and ``normal:mean=10,sd=1000`` about 404."""
    if not isinstance(lengths, (Normal, LogNormal)):
        return lengths.mean
    clipped = _clipped_mean(lengths)
    return clipped if abs(clipped - lengths.mean) >= 0.5 else lengths.mean


def shortest(lengths: Lengths) -> int:
    """The shortest length ``lengths`` can draw, tokens (a clipped distribution's ``low``)."""
    if isinstance(lengths, Fixed):
        return lengths.tokens
    if isinstance(lengths, Empirical):
        return min(lengths.values)
    return lengths.low


def check_lengths(lengths: Lengths, what: str) -> None:
    """InputError naming ``what`` for a distribution without positive lengths."""
    bad = None
    if isinstance(lengths, Fixed):
        bad = lengths.tokens < 1 and "tokens must be at least 1"
    elif isinstance(lengths, Uniform):
        bad = not 1 <= lengths.low <= lengths.high and "needs 1 <= low <= high"
    elif isinstance(lengths, (Normal, LogNormal)):
        bad = _spread_rule(lengths)
    elif isinstance(lengths, Empirical):
        bad = ((not lengths.values or min(lengths.values) < 1) and "needs values of at least 1 token") or (
            lengths.weights is not None
            and (len(lengths.weights) != len(lengths.values) or min(lengths.weights) < 0 or not sum(lengths.weights))
            and "needs one non-negative weight per value, not all zero"
        )
    if bad:
        raise InputError(f"{what}: {lengths!r} {bad}", fields=(what,))


def _spread_rule(lengths: Normal | LogNormal) -> str | None:
    """The one rule a normal or lognormal distribution breaks, if any: a finite mean from 1 to
    :data:`MAX_LENGTH`, a finite sd from 0 to it, low at least 1, high at least low."""

    def within(value: object, low: float) -> bool:
        ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
        return ok and low <= value <= MAX_LENGTH  # type: ignore[operator]

    if not within(lengths.mean, 1):
        return f"needs a finite mean from 1 to {MAX_LENGTH:,}"
    if not within(lengths.sd, 0):
        return f"needs a finite sd from 0 to {MAX_LENGTH:,}"
    if lengths.low < 1:
        return "needs low >= 1"
    if lengths.high is not None and lengths.high < lengths.low:
        return "needs high >= low"
    return None


def _options(text: str, what: str, names: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in names:
            raise InputError(
                f"{what}: {part.strip()!r} is not one of {', '.join(n + '=' for n in names)}", fields=(what,)
            )
        if key.strip() in out:
            raise InputError(f"{what}: {key.strip()}= is given twice in {text!r}; give it once", fields=(what,))
        out[key.strip()] = value.strip()
    return out


def _amount(text: str, what: str) -> float:
    """A distribution's mean or standard deviation in tokens: a number (``800``, ``812.5``) or a
    count with a suffix as everywhere else (``8K`` = 8,192: :func:`parse_context`)."""
    try:
        return float(text) + 0.0  # -0 is 0 (an attack's sd=-0 was echoed as 'sd -0')
    except ValueError:
        return float(parse_context(text, what))


def parse_lengths(text: str | int, what: str = "input_tokens") -> Lengths:
    """A length distribution from text (see the module docstring): a count (``2K`` = 2,048) or
    ``kind:options``. InputError naming ``what`` for anything else."""
    if isinstance(text, int) or ":" not in str(text):
        return Fixed(parse_context(text, what))
    kind, _, rest = str(text).partition(":")
    kind = kind.strip().lower()
    try:
        if kind == "empirical":
            lengths: Lengths = Empirical(tuple(parse_context(v.strip(), what) for v in rest.split(",")))
        elif kind == "uniform":
            o = _options(rest, what, ("low", "high"))
            lengths = Uniform(parse_context(o["low"], what), parse_context(o["high"], what))
        elif kind in ("normal", "lognormal"):
            o = _options(rest, what, ("mean", "sd", "low", "high"))
            cls = Normal if kind == "normal" else LogNormal
            lengths = cls(
                _amount(o["mean"], what),
                _amount(o["sd"], what),
                parse_context(o.get("low", "1"), what),
                parse_context(o["high"], what) if "high" in o else None,
            )
        else:
            raise InputError(
                f"{what}: {kind!r} is not a length distribution (fixed number, uniform, normal, lognormal, empirical)",
                fields=(what,),
            )
    except KeyError as missing:
        raise InputError(f"{what}: {text!r} needs {missing.args[0]}=", fields=(what,)) from None
    except ValueError as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{what}: {text!r}: {exc}", fields=(what,)) from None
    check_lengths(lengths, what)
    return lengths


@record
class Stage:
    """``duration_s`` seconds of arrivals at ``rate_rps`` requests per second (``math.inf``: until
    the workload's ``requests`` have arrived)."""

    duration_s: float
    rate_rps: float


@record
class OpenLoop:
    """Requests arrive on their own schedule: ``stages`` one after another, each with gaps of the
    ``process`` (one of :data:`ARRIVAL_PROCESSES`; ``cv`` is the gamma gaps' coefficient of
    variation)."""

    stages: tuple[Stage, ...]
    process: str = "poisson"
    cv: float = 1.0


@record
class ClosedLoop:
    """``users`` users, each sending its next request ``think_s`` seconds after its previous one
    completed (``think="exponential"``: exponential think times of that mean), for ``duration_s``
    seconds (requests sent after it are not) or until the workload's ``requests`` were sent. The
    users' first requests are spread evenly over ``ramp_s`` seconds (0: all at once, as a
    benchmark's burst; about one request's E2E reaches the steady state without the burst)."""

    users: int
    think_s: float = 0.0
    think: str = "fixed"
    duration_s: float = math.inf
    ramp_s: float = 0.0


@record
class SharedPrefix:
    """``groups`` system prompts of ``tokens`` tokens, each shared by ``users_per_group`` users
    (inference-perf's shared_prefix profile; see the module docstring)."""

    groups: int
    tokens: int
    users_per_group: int = 1
    repeat_questions: bool = False


@record
class Workload:
    """Arrivals, prompt lengths (``input_tokens``: the whole prompt, prefix included), output
    lengths, an optional shared prefix, and an optional cap on the number of requests."""

    arrivals: OpenLoop | ClosedLoop
    input_tokens: Lengths
    output_tokens: Lengths
    prefix: SharedPrefix | None = None
    requests: int | None = None


def poisson(
    rate_rps: float,
    input_tokens: Lengths,
    output_tokens: Lengths,
    *,
    duration_s: float = math.inf,
    requests: int | None = None,
    prefix: SharedPrefix | None = None,
) -> Workload:
    """Poisson arrivals at one rate for ``duration_s`` seconds or ``requests`` requests."""
    return Workload(OpenLoop((Stage(duration_s, rate_rps),)), input_tokens, output_tokens, prefix, requests)


@record
class Request:
    """One request as the engine sees it: its arrival (seconds), prompt and output lengths
    (tokens) and the prefixes its prompt shares, innermost last: (key, tokens) pairs, each key
    naming a run of leading tokens that every request with the same key holds."""

    index: int
    arrival_s: float
    input_tokens: int
    output_tokens: int
    shared: tuple[tuple[Hashable, int], ...] = ()


def _refuse(where: str | None, api: str, key: str, message: str) -> InputError:
    """An InputError naming the API argument ``api`` (``where`` None: a Workload passed in
    Python; ``a x b`` names two) or the file's key path ``key`` after ``where`` (a workload file)."""
    if where is None:
        return InputError(f"{api}: {message}", fields=tuple(api.split(" x ")))
    return InputError(f"{where}: {key}: {message}", fields=("workload",))


def shortest_prompt(lengths: Lengths) -> float:
    """The prompt length a shared prefix must stay below, tokens: the one length of
    :class:`Fixed`, the least of :class:`Uniform` and :class:`Empirical`, the mean of
    :class:`Normal` and :class:`LogNormal` (whose draws below the prefix are raised to it + 1, as
    the module docstring says)."""
    if isinstance(lengths, Fixed):
        return lengths.tokens
    if isinstance(lengths, Uniform):
        return lengths.low
    if isinstance(lengths, Empirical):
        return min(lengths.values)
    return lengths.mean


def request_bound(workload: Workload) -> float:
    """The most requests ``workload`` sends (``math.inf``: no bound): its ``requests`` if given,
    else an open loop's expected count (the sum of rate x duration over its stages) or a closed
    loop's users x (duration / think time + 1) (each user sends one request at once and at most
    one per think time after it)."""
    a = workload.arrivals
    if isinstance(a, OpenLoop):
        expected = math.fsum(s.rate_rps * s.duration_s for s in a.stages)
    elif a.think_s > 0:
        expected = a.users * (a.duration_s / a.think_s + 1)
    else:
        expected = math.inf
    return expected if workload.requests is None else min(workload.requests, expected)


def check_workload(workload: Workload, where: str | None = None, limit: int | None = MAX_REQUESTS) -> None:
    """InputError for a workload no generator could run, or one past the simulator's bounds
    (:data:`MAX_REQUESTS` requests, users, expected arrivals; :data:`CV_RANGE`;
    :data:`MAX_THINK_S`), or whose shared prefix is not shorter than its prompts
    (:func:`shortest_prompt`). The message names the API argument, or with ``where`` (a workload
    file's name) the file's key path. The one check of a workload's bounds: the file reader, the
    API's traffic and the simulator call it (the simulator with ``limit`` None: a Python caller of
    the engine may run more requests than the front door allows, but never an endless loop)."""
    cap = math.inf if limit is None else limit
    check_lengths(workload.input_tokens, "input_tokens")
    check_lengths(workload.output_tokens, "output_tokens")
    a = workload.arrivals
    n = workload.requests
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= cap):
        raise _refuse(where, "requests", "requests", f"{n!r} must be a whole number from 1 to {cap:,}")
    if isinstance(a, OpenLoop):
        if a.process not in ARRIVAL_PROCESSES:
            raise _refuse(
                where, "process", "arrivals.process", f"{a.process!r} is not one of {', '.join(ARRIVAL_PROCESSES)}"
            )
        if not a.stages or any(not (s.rate_rps > 0 and s.duration_s > 0) for s in a.stages):
            raise _refuse(where, "stages", "arrivals", "each stage needs a rate and a duration greater than 0")
        if a.process == "gamma" and not CV_RANGE[0] <= a.cv <= CV_RANGE[1]:
            raise _refuse(
                where, "cv", "arrivals.cv", f"{a.cv!r} must be from {CV_RANGE[0]:g} to {CV_RANGE[1]:g} (1 is Poisson)"
            )
        if a.process == "fixed_count" and any(math.isinf(s.duration_s) for s in a.stages):
            raise _refuse(where, "stages", "arrivals", "fixed_count arrivals need finite stage durations (duration_s)")
        if math.isinf(a.stages[-1].duration_s) and n is None:
            if where is None:
                raise InputError("an open-ended stage needs a number of requests", fields=("requests",))
            raise _refuse(
                where, "requests", "arrivals", "an open-ended stage needs a number of requests (or duration_s)"
            )
        if any(math.isinf(s.duration_s) for s in a.stages[:-1]):
            raise _refuse(where, "stages", "arrivals.stages", "only the last stage can be open-ended (no duration_s)")
        for i, s in enumerate(a.stages):
            # fixed_count draws each stage's whole count, whatever the requests
            if (a.process == "fixed_count" or n is None) and s.rate_rps * s.duration_s > cap:
                key = "arrivals" if len(a.stages) == 1 else f"arrivals.stages[{i}]"
                raise _refuse(
                    where,
                    "stages",
                    key,
                    f"rate_rps x duration_s = {fmt_rate(s.rate_rps * s.duration_s)} requests, more than the "
                    f"{MAX_REQUESTS:,} one simulation runs; lower them"
                    + (" or give requests" if a.process != "fixed_count" else ""),
                )
        if n is None and request_bound(workload) > cap:
            raise _refuse(
                where,
                "stages",
                "arrivals.stages",
                f"the stages' rate_rps x duration_s add up to {request_bound(workload):,.4g} requests, more than "
                f"the {MAX_REQUESTS:,} one simulation runs; shorten them or give requests",
            )
    else:
        broken = next(
            (
                rule
                for ok, rule in (
                    (a.users >= 1, "users >= 1"),
                    (a.think_s >= 0, "think_s >= 0"),
                    (a.ramp_s >= 0, "ramp_s >= 0"),
                    (a.think in ("fixed", "exponential"), "think 'fixed' or 'exponential'"),
                )
                if not ok
            ),
            None,
        )
        if broken is not None:
            raise InputError(f"a closed loop needs {broken}", fields=("users",))
        if a.users > cap:
            raise _refuse(
                where,
                "users",
                "arrivals.users",
                f"{a.users:,} users is more than the {MAX_REQUESTS:,} requests one simulation runs",
            )
        if not a.think_s <= MAX_THINK_S:
            raise _refuse(where, "users", "arrivals.think_s", f"{a.think_s!r} s is more than a day ({MAX_THINK_S:g} s)")
        if math.isinf(a.duration_s) and n is None:
            raise _refuse(
                where,
                "requests",
                "arrivals",
                "a closed loop needs an end: a number of requests (or a duration_s)",
            )
        if n is None and not a.think_s and limit is not None:
            raise _refuse(
                where,
                "requests",
                "arrivals",
                "a closed loop with no think time sends any number of requests before its duration_s ends; "
                f"give requests (at most {MAX_REQUESTS:,})",
            )
        if n is None and request_bound(workload) > cap:
            raise _refuse(
                where,
                "requests",
                "arrivals",
                f"without requests its users can send users x (duration_s / think_s + 1) = "
                f"{request_bound(workload):,.4g} requests, more than the {MAX_REQUESTS:,} one simulation runs; "
                "give requests",
            )
    p = workload.prefix
    if p is not None and (p.groups < 1 or p.tokens < 1 or p.users_per_group < 1):
        raise InputError("prefix: groups, tokens and users_per_group must be at least 1", fields=("prefix",))
    if p is not None and p.groups * p.users_per_group > MAX_PREFIX_USERS:
        raise _refuse(
            where,
            "prefix_groups x users_per_prefix",
            "prefix.groups x prefix.users_per_group",
            f"{p.groups:,} x {p.users_per_group:,} users is more than {MAX_PREFIX_USERS:,}, the most requests one "
            "simulation runs (each user sends one in turn)",
        )
    if p is not None and not p.tokens < shortest_prompt(workload.input_tokens):
        shortest = shortest_prompt(workload.input_tokens)
        raise _refuse(
            where,
            "prefix_tokens",
            "prefix.tokens",
            f"{p.tokens:,} shared tokens must be fewer than the prompt's {shortest:,g} tokens "
            f"({'its mean' if isinstance(workload.input_tokens, (Normal, LogNormal)) else 'its shortest'}; "
            "input_tokens is the whole prompt, prefix included): the longest shared prefix these prompts take is "
            f"{max(0, math.ceil(shortest) - 1):,} tokens",
        )


def expected_cached_tokens(traffic: Workload | Trace, requests: int | None = None, block_tokens: int = 16) -> float:
    """The prompt tokens per request the prefix cache is expected to hold when the request is
    admitted (vLLM's ``get_computed_blocks``: whole blocks, at most the prompt less its last token),
    the hit rate the traffic implies, before any simulation measures it.

    A workload's shared prefix of P tokens: its whole blocks, floor(P / block) x block tokens, on
    every request whose prefix is warm, the share 1 - groups / N of ``requests`` N (each group's
    first request computes it; None: a long run, every request warm); with repeated questions each
    user's whole prompt also repeats, its whole blocks beyond the prefix warm on a share
    1 - groups x users / N. A trace: each row's own, its prefix's whole blocks when an earlier row
    of the same ``prefix_id`` came first. It assumes the cache keeps what it was given (no LRU
    eviction) and one cache (replicas behind round robin warm each prefix once each: the simulation
    measures that)."""
    if isinstance(traffic, Trace):
        seen: set[str] = set()
        total = 0
        for r in traffic.rows:
            if r.prefix_id is not None:
                if r.prefix_id in seen:
                    total += min(r.prefix_tokens, r.input_tokens - 1) // block_tokens * block_tokens
                seen.add(r.prefix_id)
        return total / len(traffic.rows)
    p = traffic.prefix
    if p is None:
        return 0.0
    n = math.inf if requests is None else max(requests, 1)
    shared = min(p.tokens, int(shortest_prompt(traffic.input_tokens)) - 1) // block_tokens * block_tokens
    cached = shared * max(0.0, 1 - p.groups / n)
    if p.repeat_questions:
        whole = (max(drawn_mean(traffic.input_tokens), p.tokens + 1) - 1) // block_tokens * block_tokens
        cached += max(0.0, whole - shared) * max(0.0, 1 - p.groups * p.users_per_group / n)
    return cached


def _gaps(rng: random.Random, arrivals: OpenLoop, stage: Stage) -> Iterator[float]:
    """Gaps between the arrivals of one stage, seconds (fixed_count: exactly its count)."""
    mean = 1 / stage.rate_rps
    if arrivals.process == "fixed_count":
        gaps = [rng.expovariate(stage.rate_rps) for _ in range(int(stage.rate_rps * stage.duration_s))]
        scale = stage.duration_s / sum(gaps) if gaps else 0.0
        yield from (g * scale for g in gaps)
        return
    shape = 1 / arrivals.cv**2 if arrivals.process == "gamma" else 1.0
    while True:
        if arrivals.process == "poisson":
            yield rng.expovariate(stage.rate_rps)
        elif arrivals.process == "gamma":
            yield rng.gammavariate(shape, mean / shape)
        else:
            yield mean


def _arrival_times(rng: random.Random, arrivals: OpenLoop, limit: int | None) -> Iterator[float]:
    """Arrival times of the stages in turn, seconds from 0 (at most ``limit``)."""
    start, count = 0.0, 0
    for stage in arrivals.stages:
        end, t = start + stage.duration_s, start
        for gap in _gaps(rng, arrivals, stage):
            t += gap
            if t > end * (1 + 1e-12):
                break
            if limit is not None and count >= limit:
                return
            count += 1
            yield min(t, end)
        start = end


def stage_bounds(workload: Workload) -> list[float]:
    """The end of each open-loop stage, seconds from 0 (a closed loop: its one duration)."""
    a = workload.arrivals
    if isinstance(a, ClosedLoop):
        return [a.duration_s]
    ends, t = [], 0.0
    for s in a.stages:
        t += s.duration_s
        ends.append(t)
    return ends


class Users:
    """Which user each request comes from, with each user's group and (with repeated questions)
    fixed question length: inference-perf's users in a seeded shuffle, visited in turn."""

    def __init__(self, prefix: SharedPrefix, lengths: Lengths, rng: random.Random) -> None:
        self.prefix = prefix
        n = prefix.groups * prefix.users_per_group
        self.order = list(range(n))
        rng.shuffle(self.order)
        self.inputs = [max(prefix.tokens + 1, lengths.sample(rng)) for _ in range(n)] if prefix.repeat_questions else []

    def shared(self, k: int, input_tokens: int) -> tuple[int, tuple[tuple[Hashable, int], ...]]:
        """(prompt tokens, shared prefixes) of the ``k``-th request."""
        user = self.order[k % len(self.order)]
        group = user // self.prefix.users_per_group
        levels: tuple[tuple[Hashable, int], ...] = ((("prefix", group), self.prefix.tokens),)
        if self.prefix.repeat_questions:
            input_tokens = self.inputs[user]
            levels += ((("user", user), input_tokens),)
        return max(input_tokens, self.prefix.tokens + 1), levels


def draw_lengths(
    workload: Workload, rng: random.Random, users: Users | None, k: int
) -> tuple[int, int, tuple[tuple[Hashable, int], ...]]:
    """(prompt tokens, output tokens, shared prefixes) of the ``k``-th request."""
    prompt = workload.input_tokens.sample(rng)
    out = workload.output_tokens.sample(rng)
    if users is None:
        return prompt, out, ()
    prompt, shared = users.shared(k, prompt)
    return prompt, out, shared


def user_table(workload: Workload, seed: int | str) -> Users | None:
    """The users of a workload's shared prefix (None without one), drawn from ``seed``."""
    if workload.prefix is None:
        return None
    return Users(workload.prefix, workload.input_tokens, random.Random(f"{seed}:users"))


def requests(workload: Workload, seed: int | str = 0, every: int = 1) -> list[Request]:
    """The open-loop requests of ``workload``, in arrival order (deterministic for ``seed``;
    arrival times, lengths and users come from separate streams, so a change of rate keeps the
    lengths). With ``every`` R > 1, every R-th of them (the 0th, the R-th, ...), as a round-robin
    router hands one of R replicas its share: their arrival times those of every R-th arrival of
    the whole stream (in distribution, :func:`_strided_times`), their lengths drawn for them alone (the same distribution; the
    requests a replica never sees are never drawn, so a deployment of thousands of replicas costs
    one replica's requests), each keeping its index in the whole stream (a shared prefix's users
    are visited in turn over it). InputError for an invalid workload or a closed loop (the engine
    runs those)."""
    check_workload(workload, limit=None)
    if not isinstance(workload.arrivals, OpenLoop):
        raise InputError("a closed loop's requests depend on the engine: run it with simulate()", fields=("arrivals",))
    rng = random.Random(f"{seed}:arrivals")
    times = (
        _arrival_times(rng, workload.arrivals, workload.requests)
        if every == 1
        else _strided_times(rng, workload.arrivals, workload.requests, every)
    )
    lengths = random.Random(f"{seed}:lengths")
    users = user_table(workload, seed)
    out = []
    for i, t in enumerate(times):
        k = i * every
        prompt, output, shared = draw_lengths(workload, lengths, users, k)
        out.append(Request(k, t, prompt, output, shared))
    return out


def _strided_times(rng: random.Random, arrivals: OpenLoop, limit: int | None, every: int) -> Iterator[float]:
    """The arrival times of every ``every``-th request of :func:`_arrival_times` (of at most
    ``limit`` requests in all; the 0th first). For one endless stage of Poisson, gamma or constant
    gaps, each is drawn as the sum of the ``every`` gaps before it, in one draw: a sum of k
    exponential gaps of mean m is Gamma(k, m), of k Gamma(a, m / a) gaps Gamma(k a, m / a), of k
    constant gaps k m. Otherwise (stages, fixed counts) every time is drawn and every ``every``-th
    kept."""
    stage = arrivals.stages[0]
    if len(arrivals.stages) > 1 or math.isfinite(stage.duration_s) or arrivals.process == "fixed_count":
        yield from itertools.islice(_arrival_times(rng, arrivals, limit), 0, None, every)
        return
    mean = 1 / stage.rate_rps
    shape = 1 / arrivals.cv**2 if arrivals.process == "gamma" else 1.0
    count = -(-limit // every) if limit is not None else None  # the kept ones of the first ``limit``
    t, kept = 0.0, 0
    while count is None or kept < count:
        gaps = 1 if kept == 0 else every
        if arrivals.process == "constant":
            t += gaps * mean
        else:
            t += rng.gammavariate(gaps * shape, mean / shape)
        kept += 1
        yield t


@record
class TraceRow:
    """One recorded request: arrival (seconds), prompt and output tokens, and the id and length
    of the prefix it shares (None, 0 when it shares none)."""

    arrival_s: float
    input_tokens: int
    output_tokens: int
    prefix_id: str | None = None
    prefix_tokens: int = 0


@record
class Trace:
    """Recorded requests to replay (arrival times as recorded, sorted on reading)."""

    rows: tuple[TraceRow, ...]

    @property
    def span_s(self) -> float:
        """Seconds from the first arrival to the last (0 for rows at one instant)."""
        return self.rows[-1].arrival_s - self.rows[0].arrival_s


_TRACE_COLUMNS = ("arrival_s", "input_tokens", "output_tokens", "prefix_id", "prefix_tokens")


def _trace_count(value: object, name: str, where: str, minimum: int, text: bool) -> int:
    """A token count of a trace row: an integer (a JSON number without a fraction; with ``text``, a
    CSV cell of ASCII digits) in [minimum, MAX_TRACE_TOKENS]; InputError naming the row and column
    otherwise (a fraction is not truncated, a boolean is no count, JSON text is no number)."""
    digits = value.strip() if text and isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool):
        count = value
    elif digits is not None and digits.isascii() and digits.isdigit() and len(digits) <= 12:  # not '²', not '٣'
        count = int(digits)
    elif isinstance(value, str) and not text:
        raise InputError(
            f"{where}: {name} {shown(value, 40)!r} is text; write the number without quotes", fields=("trace",)
        )
    else:
        raise InputError(f"{where}: {name} {shown(repr(value), 40)} is not a whole number of tokens", fields=("trace",))
    if not minimum <= count <= MAX_TRACE_TOKENS:
        raise InputError(
            f"{where}: {name} {shown(count, 40)} is not from {minimum} to {MAX_TRACE_TOKENS:,} tokens",
            fields=("trace",),
        )
    return count


def _trace_arrival(value: object, where: str, text: bool) -> float:
    """A row's arrival, seconds from 0 to 1e9: a JSON number (with ``text``, a CSV cell in ASCII
    decimal notation); InputError naming the row otherwise."""
    arrival = math.nan
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        arrival = float(value) if abs(value) < 1e300 else math.inf
    elif text and isinstance(value, str) and value.strip().isascii():
        try:
            arrival = float(value)
        except ValueError:
            pass
    if not (math.isfinite(arrival) and 0 <= arrival <= 1e9):
        kind = "text; write the number without quotes" if isinstance(value, str) and not text else None
        raise InputError(
            f"{where}: arrival_s {shown(repr(value), 40)} is {kind or 'not a time from 0 to 1e9 seconds'}",
            fields=("trace",),
        )
    return arrival


def _trace_prefix_id(value: object, where: str) -> str | None:
    """A row's prefix id: text or a whole number (None when absent or empty); InputError naming
    the row for anything else (a list, a mapping, a fraction, a boolean)."""
    if value is None or value == "":
        return None
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return shown(value, 200)
    raise InputError(
        f"{where}: prefix_id {shown(repr(value), 40)} must be text or a whole number naming the shared prefix",
        fields=("trace",),
    )


def _trace_row(raw: dict, where: str, text: bool) -> TraceRow:
    """One trace row; ``text``: a CSV row (every cell text), else a JSON object (numbers typed)."""
    unknown = {str(k) for k in raw} - set(_TRACE_COLUMNS)
    if unknown:
        raise InputError(
            f"{where}: unknown column(s) {shown(', '.join(sorted(unknown)), 200)}; columns: {', '.join(_TRACE_COLUMNS)}",
            fields=("trace",),
        )
    missing = [c for c in _TRACE_COLUMNS[:3] if raw.get(c) in (None, "")]
    if missing:
        raise InputError(f"{where}: no {missing[0]}", fields=("trace",))
    arrival = _trace_arrival(raw["arrival_s"], where, text)
    prompt = _trace_count(raw["input_tokens"], "input_tokens", where, 1, text)
    out = _trace_count(raw["output_tokens"], "output_tokens", where, 1, text)
    prefix_id = _trace_prefix_id(raw.get("prefix_id"), where)
    prefix = _trace_count(raw.get("prefix_tokens") or 0, "prefix_tokens", where, 0, text)
    if prefix > prompt:
        raise InputError(
            f"{where}: prefix_tokens {prefix:,} is more than input_tokens {prompt:,} (the prompt includes its prefix)",
            fields=("trace",),
        )
    if (prefix_id is None) != (prefix == 0):
        raise InputError(f"{where}: prefix_id and prefix_tokens go together", fields=("trace",))
    return TraceRow(arrival, prompt, out, prefix_id, prefix)


def _trace_lines(path: Path) -> Iterator[str]:
    """The lines of a trace file (ends kept), read one at a time: a regular file
    (:func:`llm_cost.specs.files.open_regular`: no FIFO, no link loop) of at most
    MAX_TRACE_BYTES of UTF-8, a byte-order mark at its start dropped (Excel writes one: it would
    otherwise be part of the first column's name or fail the first JSON row)."""
    from llm_cost.specs.files import open_regular

    with open_regular(path, "a .jsonl or .csv trace") as f:
        total, codec = 0, "utf-8-sig"
        while True:
            try:
                raw = f.readline(MAX_TRACE_BYTES + 1 - total)
            except OSError as exc:
                raise InputError(f"{path}: cannot read the trace ({exc.strerror or exc})", fields=("trace",)) from None
            if not raw:
                return
            total += len(raw)
            if total > MAX_TRACE_BYTES:
                raise InputError(
                    f"{path}: more than {MAX_TRACE_BYTES:,} bytes; not a trace llm-cost replays", fields=("trace",)
                )
            try:
                line = raw.decode(codec)
            except UnicodeDecodeError:
                raise InputError(f"{path}: not a UTF-8 text file", fields=("trace",)) from None
            codec = "utf-8"
            yield line


def _too_many_rows(path: Path) -> InputError:
    return InputError(
        f"{path}: more than {MAX_REQUESTS:,} rows, the most requests one simulation runs; replay a part of the trace",
        fields=("trace",),
    )


def _csv_rows(path: Path) -> list[tuple[str, dict]]:
    import csv

    raws: list[tuple[str, dict]] = []
    # a space after each comma (", ") is part of no name or value: an attacker's header of
    # "arrival_s, input_tokens, output_tokens" was refused for columns that looked like the valid ones
    reader = csv.DictReader(_trace_lines(path), skipinitialspace=True)
    try:
        header = list(reader.fieldnames or ())
        if header and header[0].lstrip().startswith(("{", "[")):
            raise InputError(f"{path}: holds JSON, not CSV; name a JSON-lines trace .jsonl", fields=("trace",))
        twice = sorted({c for c in header if header.count(c) > 1})
        if twice:  # DictReader would keep the last column of a name
            raise InputError(
                f"{path}: the header names {', '.join(twice)} twice; name each column once", fields=("trace",)
            )
        for row in reader:
            where = f"{path}:{reader.line_num}"
            if None in row:  # more fields than the header names
                raise InputError(f"{where}: more values than the header has columns", fields=("trace",))
            if len(raws) == MAX_REQUESTS:
                raise _too_many_rows(path)
            raws.append((where, dict(row)))
    except csv.Error as exc:
        raise InputError(f"{path}: not a CSV file ({exc})", fields=("trace",)) from None
    return raws


class _KeyTwice(Exception):
    """A JSON object names a key twice (json.loads would keep the last value)."""


def _one_value_per_key(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object's pairs as a dict; :class:`_KeyTwice` naming a key given twice."""
    out = dict(pairs)
    if len(out) < len(pairs):
        raise _KeyTwice(", ".join(sorted({k for k, _ in pairs if [p for p, _ in pairs].count(k) > 1})))
    return out


def _jsonl_rows(path: Path) -> list[tuple[str, dict]]:
    import json

    raws: list[tuple[str, dict]] = []
    for i, line in enumerate(_trace_lines(path)):
        if not line.strip():
            continue
        if len(raws) == MAX_REQUESTS:
            raise _too_many_rows(path)
        try:
            obj = json.loads(line, object_pairs_hook=_one_value_per_key)
        except RecursionError:
            raise InputError(f"{path}:{i + 1}: nested too deeply", fields=("trace",)) from None
        except _KeyTwice as twice:
            raise InputError(f"{path}:{i + 1}: {twice} given twice; give each field once", fields=("trace",)) from None
        except ValueError as exc:  # JSONDecodeError, and integers past 4,300 digits
            raise InputError(
                f"{path}:{i + 1}: not JSON ({getattr(exc, 'msg', str(exc))[:80]})", fields=("trace",)
            ) from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}:{i + 1}: a row is a JSON object", fields=("trace",))
        raws.append((f"{path}:{i + 1}", obj))
    return raws


def read_trace(path: str | Path) -> Trace:
    """A trace from a ``.jsonl`` (one JSON object a line) or ``.csv`` (a header line) file of the
    columns ``arrival_s``, ``input_tokens``, ``output_tokens`` and optionally ``prefix_id``,
    ``prefix_tokens``; rows sorted by arrival. InputError naming the file and line otherwise: a
    file that is not regular, too large, more than :data:`MAX_REQUESTS` rows (read no further), a
    row that is not an object, a count that is not a whole number (ASCII digits) from 1 to
    :data:`MAX_TRACE_TOKENS`, an arrival that is not a time from 0 to 1e9 s, a ``prefix_id`` whose
    rows give different ``prefix_tokens``."""
    path = Path(path)
    if path.suffix.lower() not in (".csv", ".jsonl", ".ndjson"):
        raise InputError(f"{path}: a trace is a .jsonl or .csv file", fields=("trace",))
    text = path.suffix.lower() == ".csv"
    raws = _csv_rows(path) if text else _jsonl_rows(path)
    parsed = [(where, _trace_row(raw, where, text)) for where, raw in raws]
    prefixes: dict[str, tuple[str, int]] = {}
    for where, row in parsed:
        if row.prefix_id is None:
            continue
        first = prefixes.setdefault(row.prefix_id, (where, row.prefix_tokens))
        if first[1] != row.prefix_tokens:
            raise InputError(
                f"{where}: prefix_id {shown(row.prefix_id, 40)!r} has prefix_tokens {row.prefix_tokens}, but "
                f"{first[1]} at {first[0]}; one prefix has one length",
                fields=("trace",),
            )
    rows = sorted((row for _, row in parsed), key=lambda r: r.arrival_s)
    if not rows:
        raise InputError(f"{path}: the trace has no rows", fields=("trace",))
    return Trace(tuple(rows))


def trace_requests(trace: Trace | Sequence[TraceRow]) -> list[Request]:
    """The requests of a trace, arrival times shifted to start at 0."""
    rows = trace.rows if isinstance(trace, Trace) else tuple(trace)
    start = min(r.arrival_s for r in rows)
    return [
        Request(
            k,
            r.arrival_s - start,
            r.input_tokens,
            r.output_tokens,
            ((("trace", r.prefix_id), r.prefix_tokens),) if r.prefix_id is not None else (),
        )
        for k, r in enumerate(rows)
    ]
