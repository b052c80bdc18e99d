"""What a serving plan is asked and answers: the traffic, the targets, one configuration's
figures and the plan; the grids a search tries. The serving model is described in
:mod:`llm_cost.analyses.serving`."""

from __future__ import annotations

from dataclasses import field

from llm_cost.analyses.launch import Launch
from llm_cost.core.choices import BandSource, ServingMode
from llm_cost.core.labels import Limit
from llm_cost.core.notes import Note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Dtype
from llm_cost.model.layout import Layout, layout_label

#: Decode concurrencies a search tries per replica (those the KV cache holds).
CONCURRENCY_GRID = (
    tuple(range(1, 33)) + tuple(range(36, 129, 4)) + tuple(range(144, 513, 16)) + tuple(range(576, 1025, 64))
)
#: Token budgets per step (chunked prefill) a search tries; None: prompts run whole in steps of their own.
CHUNK_GRID = (512, 1024, 2048, 4096, 8192, 16384, None)
#: The most prompt tokens a disaggregated prefill step batches (one prompt may be longer).
MAX_PREFILL_TOKENS = 16384
#: Prompts per prefill step a disaggregated prefill replica runs.
PREFILL_BATCH_GRID = (1, 2, 3, 4, 6, 8)
#: The token budget of one evaluated configuration when none is given.
DEFAULT_CHUNK_TOKENS = 8192
#: The TTFT, seconds, past which no interactive service waits: at a rate without a TTFT target the
#: simulated plan keeps its P99 within it; a chosen plan past it is warned about (saturated, its
#: requests wait for a slot); frontier rows past :data:`FRONTIER_TTFT_S` are left out of tables.
SANE_TTFT_S = 10.0
#: Frontier rows with a TTFT past this many seconds are left out of the printed tables (JSON keeps them).
FRONTIER_TTFT_S = 60.0


@record
class Traffic:
    """Requests of ``input_tokens`` prompt and ``output_tokens`` output tokens, at ``qps`` per
    second (None: as many as the deployment serves); ``cached_tokens`` of each prompt found in the
    prefix cache on average (the hit rate the workload implies,
    :func:`llm_cost.simulate.workload.expected_cached_tokens`, or a simulation's own), which a
    prefill does not compute: its chunks price the other ``input_tokens - cached_tokens``, attending
    to the cached ones. ``rate_source``: the argument the rate comes from, which an error about the
    rate names (``qps``; ``trace`` or ``workload`` for a file's own arrivals)."""

    input_tokens: int
    output_tokens: int
    qps: float | None = None
    cached_tokens: int = 0
    rate_source: str = "qps"

    @property
    def computed_tokens(self) -> int:
        """Prompt tokens a prefill computes (at least 1: the last is always recomputed)."""
        return max(1, self.input_tokens - self.cached_tokens)


@record
class Targets:
    """Latency targets, seconds (None: no target)."""

    ttft_s: float | None = None
    tpot_s: float | None = None


@record
class Candidate(Result):
    """One serving configuration and what it achieves. Times are predictions of the plan's time
    model; rates per second; ``usd_*`` only with a price."""

    mode: ServingMode
    layout: Layout  # of one (decode) replica
    replicas: int
    prefill_layout: Layout | None  # disaggregated: one prefill replica
    prefill_replicas: int
    gpus: int
    concurrency: int  # decoding sequences per (decode) replica
    chunk_tokens: int | None  # aggregated: the token budget per step (None: prompts not chunked)
    prefill_batch: int | None  # disaggregated: prompts per prefill step
    max_concurrency: int  # sequences the (decode) replica's KV cache holds at these lengths
    ttft_s: float
    tpot_s: float
    tpot_max_s: float  # the slowest step a token waits for (a step with a chunk)
    queue_s: float  # of TTFT: waiting for the prefill server and, with a rate, for a slot
    kv_transfer_s: float
    requests_per_s: float
    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float
    prefill_share: float  # of GPU time, what prompts add
    usd_per_request: float | None
    usd_per_million_input_tokens: float | None  # the split's (COST_SPLIT)
    usd_per_million_output_tokens: float | None  # all GPU time over output tokens
    usd_per_million_output_tokens_split: float | None  # the split's
    violates: tuple[Limit, ...]  # the targets missed (TTFT, TPOT), MEMORY when evaluated beyond the KV cache

    @property
    def meets(self) -> bool:
        """Whether the configuration meets every target."""
        return not self.violates

    def describe(self) -> str:
        """``2 x TP4`` (replicas x layout) or ``P 2 x TP1 PP2 + D 1 x TP4`` (prefill and decode pools)."""

        def one(layout: Layout, n: int) -> str:
            return f"{n:,} x {layout_label(layout)}"

        if self.mode == ServingMode.DISAGGREGATED and self.prefill_layout is not None:
            return f"P {one(self.prefill_layout, self.prefill_replicas)} + D {one(self.layout, self.replicas)}"
        return one(self.layout, self.replicas)


#: How an analytic plan prices tokens (``ServePlan.cost_convention``): its $/M output tokens charges
#: all the GPU time to them, as a simulated run's does (:data:`COST_ALL_OUTPUT`), so that plans of
#: either form, and aggregated against disaggregated serving, compare on it; its $/M input and $/M
#: output ``_split`` share the GPU time by what prefill adds (aggregated: the chunks' share of step
#: time; disaggregated: the prefill pool's share of GPUs), per request they add up to its cost.
COST_SPLIT = (
    "all GPU time charged to output tokens; the _split figures share it between input and output tokens by "
    "prefill's share"
)
#: How a simulated run prices tokens (``ServeRun.cost_convention``): its $/M output tokens is all
#: the deployment's GPU time over the output tokens it served; prompts are not priced apart.
COST_ALL_OUTPUT = "all GPU time charged to output tokens"


@record
class StepBand:
    """How a run's error band was drawn (:func:`llm_cost.analyses.simulated_serving.with_band`; an
    analytic plan's: :func:`llm_cost.analyses.serving.band.with_analytic_band`, one shape,
    ``shapes`` 1). ``source``: what it is calibrated on. From a profile
    (:attr:`~llm_cost.core.choices.BandSource.PROFILE`): the profile whose held-out residuals give
    it (``profile``, its ``engine``, ``kind`` fitted or transferred, the ``rows`` it or its source
    was fitted on, the ``transfer`` widening). From the measured serving runs
    (:attr:`~llm_cost.core.choices.BandSource.SERVING_RUNS`): the time model's profile, the
    ``rows`` runs, ``transfer`` the widening on a GPU they did not use, and ``p_low`` / ``p_high``
    the runs' mean ITL measured / predicted at p10 / p90 (``closed_loop``: the runs at saturation,
    their ITL P50). Either way the least and greatest
    step-time factor of the fast end (``fast_low``, ``fast_high``, at most 1) and of the slow end
    (``slow_low``, ``slow_high``, at least 1) over the ``shapes`` step buckets the band's runs
    timed."""

    profile: str
    engine: str
    kind: str
    rows: int
    transfer: float
    fast_low: float
    fast_high: float
    slow_low: float
    slow_high: float
    shapes: int
    source: BandSource = BandSource.PROFILE
    p_low: float | None = None
    p_high: float | None = None
    closed_loop: bool = False  # the serving runs at saturation (a plan without a rate)


@record
class ServePlan(Result):
    """``llm-cost serve``: the chosen configuration, the frontier, and how they were found.
    ``cost_convention``: how its dollar figures share GPU time (:data:`COST_SPLIT`)."""

    JSON_OMITS = ("frontier_by_layout",)

    model: str
    gpu: str
    input_tokens: int
    output_tokens: int
    qps: float | None
    ttft_target_s: float | None
    tpot_target_s: float | None
    gpu_budget: int
    usd_per_gpu_hour: float | None
    time_model: str
    weight_bits: float
    kv_bits: int
    compute_dtype: Dtype
    chosen: Candidate
    ttft_s: float
    tpot_s: float
    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    max_concurrency: int
    gpus: int
    usd_per_million_output_tokens: float | None
    usd_per_million_input_tokens: float | None
    usd_per_request: float | None
    binding: str  # what stops the chosen configuration from going faster per GPU
    best_aggregated: Candidate | None
    best_disaggregated: Candidate | None
    mode_verdict: str
    frontier: list[Candidate]  # over every mode searched
    frontier_by_mode: dict[ServingMode, list[Candidate]]
    candidates_evaluated: int  # configurations examined (memory, prefill capacity, targets)
    candidates_feasible: int  # of those, the ones that hold their sequences and keep up with their prompts
    steps_timed: int
    conventions: list[Note] = field(default_factory=list)
    launch: Launch | None = None  # the engine command that runs it (``emit``)
    cost_convention: str = COST_SPLIT
    # the chosen configuration's error band, scaled analytically
    # (:func:`llm_cost.analyses.serving.band.with_analytic_band`; None: no profile band)
    ttft_low_s: float | None = None
    ttft_high_s: float | None = None
    tpot_low_s: float | None = None
    tpot_high_s: float | None = None
    output_tokens_per_s_low: float | None = None
    output_tokens_per_s_high: float | None = None
    output_tokens_per_s_per_gpu_low: float | None = None
    output_tokens_per_s_per_gpu_high: float | None = None
    usd_per_million_output_tokens_low: float | None = None
    usd_per_million_output_tokens_high: float | None = None
    violates_at_slow_end: tuple[str, ...] | None = None  # the targets missed at the band's slow end
    band: StepBand | None = None
    cached_tokens: int = 0  # prompt tokens priced as found in the prefix cache (Traffic.cached_tokens)
    # each aggregated replica layout's own frontier, by (layout, replicas): the points a frontier
    # over every layout drops, which a simulation may find meeting a TTFT target where the point
    # that dominated them does not (``analyses/simulated_serving.py``); not in the JSON
    frontier_by_layout: dict[tuple[Layout, int], list[Candidate]] = field(default_factory=dict)
    usd_per_million_output_tokens_split: float | None = None  # the chosen's (COST_SPLIT)
