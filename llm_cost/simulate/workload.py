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

import math
import random
from collections.abc import Hashable, Iterator, Sequence
from pathlib import Path

from llm_cost.core.errors import InputError
from llm_cost.core.records import record
from llm_cost.core.units import parse_context

__all__ = [
    "Fixed",
    "Uniform",
    "Normal",
    "LogNormal",
    "Empirical",
    "Lengths",
    "parse_lengths",
    "check_lengths",
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


def check_lengths(lengths: Lengths, what: str) -> None:
    """InputError naming ``what`` for a distribution without positive lengths."""
    bad = None
    if isinstance(lengths, Fixed):
        bad = lengths.tokens < 1 and "tokens must be at least 1"
    elif isinstance(lengths, Uniform):
        bad = not 1 <= lengths.low <= lengths.high and "needs 1 <= low <= high"
    elif isinstance(lengths, (Normal, LogNormal)):
        bad = (
            not (lengths.mean > 0 and lengths.sd >= 0 and lengths.low >= 1) and "needs mean > 0, sd >= 0 and low >= 1"
        ) or (lengths.high is not None and lengths.high < lengths.low and "needs high >= low")
    elif isinstance(lengths, Empirical):
        bad = ((not lengths.values or min(lengths.values) < 1) and "needs values of at least 1 token") or (
            lengths.weights is not None
            and (len(lengths.weights) != len(lengths.values) or min(lengths.weights) < 0 or not sum(lengths.weights))
            and "needs one non-negative weight per value, not all zero"
        )
    if bad:
        raise InputError(f"{what}: {lengths!r} {bad}", fields=(what,))


def _options(text: str, what: str, names: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in names:
            raise InputError(
                f"{what}: {part.strip()!r} is not one of {', '.join(n + '=' for n in names)}", fields=(what,)
            )
        out[key.strip()] = value.strip()
    return out


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
                float(o["mean"]),
                float(o["sd"]),
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


def _check(workload: Workload) -> None:
    """InputError for a workload no generator could run."""
    check_lengths(workload.input_tokens, "input_tokens")
    check_lengths(workload.output_tokens, "output_tokens")
    a = workload.arrivals
    if isinstance(a, OpenLoop):
        if a.process not in ARRIVAL_PROCESSES:
            raise InputError(
                f"process: {a.process!r} is not one of {', '.join(ARRIVAL_PROCESSES)}", fields=("process",)
            )
        if not a.stages or any(not (s.rate_rps > 0 and s.duration_s > 0) for s in a.stages):
            raise InputError("stages: each needs a rate and a duration greater than 0", fields=("stages",))
        if a.process == "gamma" and not a.cv > 0:
            raise InputError(f"cv: {a.cv} must be greater than 0", fields=("cv",))
        if a.process == "fixed_count" and any(math.isinf(s.duration_s) for s in a.stages):
            raise InputError("fixed_count arrivals need finite stage durations", fields=("stages",))
        if math.isinf(a.stages[-1].duration_s) and workload.requests is None:
            raise InputError("an open-ended stage needs a number of requests", fields=("requests",))
        if any(math.isinf(s.duration_s) for s in a.stages[:-1]):
            raise InputError("only the last stage can be open-ended", fields=("stages",))
    else:
        if a.users < 1 or a.think_s < 0 or a.think not in ("fixed", "exponential") or not a.ramp_s >= 0:
            raise InputError(
                "a closed loop needs users >= 1, think_s >= 0, ramp_s >= 0 and think 'fixed' or 'exponential'",
                fields=("users",),
            )
        if math.isinf(a.duration_s) and workload.requests is None:
            raise InputError("a closed loop needs a duration or a number of requests", fields=("requests",))
    p = workload.prefix
    if p is not None and (p.groups < 1 or p.tokens < 1 or p.users_per_group < 1):
        raise InputError("prefix: groups, tokens and users_per_group must be at least 1", fields=("prefix",))
    if workload.requests is not None and workload.requests < 1:
        raise InputError(f"requests: {workload.requests} must be at least 1", fields=("requests",))


def _gaps(rng: random.Random, arrivals: OpenLoop, stage: Stage) -> Iterator[float]:
    """Gaps between the arrivals of one stage, seconds (fixed_count: exactly its count)."""
    mean = 1 / stage.rate_rps
    if arrivals.process == "fixed_count":
        gaps = [rng.expovariate(stage.rate_rps) for _ in range(int(stage.rate_rps * stage.duration_s))]
        scale = stage.duration_s / sum(gaps) if gaps else 0.0
        yield from (g * scale for g in gaps)
        return
    shape = 1 / arrivals.cv**2
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


def requests(workload: Workload, seed: int | str = 0) -> list[Request]:
    """The open-loop requests of ``workload``, in arrival order (deterministic for ``seed``;
    arrival times, lengths and users come from separate streams, so a change of rate keeps the
    lengths). InputError for an invalid workload or a closed loop (the engine runs those)."""
    _check(workload)
    if not isinstance(workload.arrivals, OpenLoop):
        raise InputError("a closed loop's requests depend on the engine: run it with simulate()", fields=("arrivals",))
    times = _arrival_times(random.Random(f"{seed}:arrivals"), workload.arrivals, workload.requests)
    lengths = random.Random(f"{seed}:lengths")
    users = user_table(workload, seed)
    out = []
    for k, t in enumerate(times):
        prompt, output, shared = draw_lengths(workload, lengths, users, k)
        out.append(Request(k, t, prompt, output, shared))
    return out


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


_TRACE_COLUMNS = ("arrival_s", "input_tokens", "output_tokens", "prefix_id", "prefix_tokens")


#: The most tokens a trace row's prompt or output holds, and the most bytes a trace file has.
MAX_TRACE_TOKENS = 2**27
MAX_TRACE_BYTES = 100_000_000


def _trace_count(value: object, name: str, where: str, minimum: int) -> int:
    """A token count of a trace row: an integer (a JSON number without a fraction, or CSV digits)
    in [minimum, MAX_TRACE_TOKENS]; InputError naming the row and column otherwise (a fraction is
    not truncated, a boolean is no count)."""
    text = value.strip() if isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool):
        count = value
    elif text is not None and text.isdigit() and len(text) <= 12:
        count = int(text)
    else:
        raise InputError(f"{where}: {name} {str(value)[:40]!r} is not a whole number of tokens", fields=("trace",))
    if not minimum <= count <= MAX_TRACE_TOKENS:
        raise InputError(
            f"{where}: {name} {count} is not from {minimum} to {MAX_TRACE_TOKENS:,} tokens", fields=("trace",)
        )
    return count


def _trace_row(raw: dict, where: str) -> TraceRow:
    unknown = {str(k) for k in raw} - set(_TRACE_COLUMNS)
    if unknown:
        raise InputError(
            f"{where}: unknown column(s) {', '.join(sorted(unknown))[:200]}; columns: {', '.join(_TRACE_COLUMNS)}",
            fields=("trace",),
        )
    missing = [c for c in _TRACE_COLUMNS[:3] if raw.get(c) in (None, "")]
    if missing:
        raise InputError(f"{where}: no {missing[0]}", fields=("trace",))
    arrival_raw = raw["arrival_s"]
    try:
        arrival = float(arrival_raw) if not isinstance(arrival_raw, bool) else math.nan
    except (TypeError, ValueError, OverflowError):
        arrival = math.nan
    if not (math.isfinite(arrival) and 0 <= arrival <= 1e9):
        raise InputError(
            f"{where}: arrival_s {str(arrival_raw)[:40]!r} is not a time from 0 to 1e9 seconds", fields=("trace",)
        )
    prompt = _trace_count(raw["input_tokens"], "input_tokens", where, 1)
    out = _trace_count(raw["output_tokens"], "output_tokens", where, 1)
    prefix_id = raw.get("prefix_id")
    prefix_id = None if prefix_id in (None, "") else str(prefix_id)
    prefix = _trace_count(raw.get("prefix_tokens") or 0, "prefix_tokens", where, 0)
    if prefix > prompt:
        raise InputError(
            f"{where}: needs arrival_s >= 0, input_tokens and output_tokens >= 1, 0 <= prefix_tokens <= input_tokens",
            fields=("trace",),
        )
    if (prefix_id is None) != (prefix == 0):
        raise InputError(f"{where}: prefix_id and prefix_tokens go together", fields=("trace",))
    return TraceRow(arrival, prompt, out, prefix_id, prefix)


def _trace_text(path: Path) -> str:
    """The text of a trace file: a regular file (:func:`llm_cost.specs.files.open_regular`: no
    FIFO, no link loop) of at most MAX_TRACE_BYTES of UTF-8."""
    from llm_cost.specs.files import open_regular

    with open_regular(path, "a .jsonl or .csv trace") as f:
        try:
            raw = f.read(MAX_TRACE_BYTES + 1)
        except OSError as exc:
            raise InputError(f"{path}: cannot read the trace ({exc.strerror or exc})", fields=("trace",)) from None
    if len(raw) > MAX_TRACE_BYTES:
        raise InputError(
            f"{path}: more than {MAX_TRACE_BYTES:,} bytes; not a trace llm-cost replays", fields=("trace",)
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file", fields=("trace",)) from None


def read_trace(path: str | Path) -> Trace:
    """A trace from a ``.jsonl`` (one JSON object a line) or ``.csv`` (a header line) file of the
    columns ``arrival_s``, ``input_tokens``, ``output_tokens`` and optionally ``prefix_id``,
    ``prefix_tokens``; rows sorted by arrival. InputError naming the file and line otherwise: a
    file that is not regular, too large, a row that is not an object, a count that is not a whole
    number from 1 to :data:`MAX_TRACE_TOKENS`, an arrival that is not a time from 0 to 1e9 s."""
    path = Path(path)
    if path.suffix.lower() not in (".csv", ".jsonl", ".ndjson"):
        raise InputError(f"{path}: a trace is a .jsonl or .csv file", fields=("trace",))
    text = _trace_text(path)
    if path.suffix.lower() == ".csv":
        import csv

        lines = text.splitlines()
        try:
            raws = [(f"{path}:{i + 2}", dict(r)) for i, r in enumerate(csv.DictReader(lines))]
        except csv.Error as exc:
            raise InputError(f"{path}: not a CSV file ({exc})", fields=("trace",)) from None
        for where, raw in raws:
            if None in raw:  # more fields than the header names
                raise InputError(f"{where}: more values than the header has columns", fields=("trace",))
    else:
        import json

        raws = []
        for i, line in enumerate(text.splitlines()):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except RecursionError:
                raise InputError(f"{path}:{i + 1}: nested too deeply", fields=("trace",)) from None
            except ValueError as exc:  # JSONDecodeError, and integers past 4,300 digits
                raise InputError(
                    f"{path}:{i + 1}: not JSON ({getattr(exc, 'msg', str(exc))[:80]})", fields=("trace",)
                ) from None
            if not isinstance(obj, dict):
                raise InputError(f"{path}:{i + 1}: a row is a JSON object", fields=("trace",))
            raws.append((f"{path}:{i + 1}", obj))
    rows = sorted((_trace_row(raw, where) for where, raw in raws), key=lambda r: r.arrival_s)
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
