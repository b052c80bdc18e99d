"""Calibration profiles: the parameters of :mod:`llm_cost.perf.calibrated` for one (kernel family,
engine), with the evidence behind them.

The parameters split along what they belong to:

* :class:`FamilyParameters`, the hardware's: the shares of its own datasheet peaks that a GPU
  family's kernels reach (large GEMMs per dtype width, weight streams, decode attention's KV reads,
  flash attention), how compute and memory overlap, and its collectives' latency and link share
  (NVLink with NCCL or the engines' custom all-reduce, xGMI with RCCL). Shared by every engine on the family (they
  all run cuBLAS/hipBLASLt GEMMs and FlashAttention-class kernels), fitted on every row of the
  family's GPUs.
* :class:`EngineParameters`, the software's: fixed costs per layer, per step and per sequence
  (kernel launches or CUDA-graph replay, scheduling, sampling, detokenisation), routing and
  permutation per MoE layer, its weight-only and grouped-MoE kernels' shares of the family's
  bandwidth, and the request overhead of a time to first token. Shared by every GPU the engine runs
  on; a release whose fixed costs differ is fitted apart (:mod:`llm_cost.perf.eras`).

Every parameter has a unit, physical bounds and a prior (:class:`Parameter`); a fit stays inside
the bounds, says which parameters ended at one, and leaves at its prior any parameter the rows do
not determine, saying so.

The shipped fit is one file, ``llm_cost/data/timemodel-fit.json``, written by
``scripts/fit_profiles.py`` from every shipped measurement at once (:mod:`llm_cost.analyses.calibration`):
the parameters of each family and engine with rows, the parameters refitted without each source
(the leave-one-source-out folds ``llm-cost validate`` checks), and the error bands those folds
measured. A :class:`Profile` is a family's parameters joined with an engine's; ``llm-cost calibrate``
writes one as a YAML file of its own (a user's GPU and engine), which ``--profile`` reads
(:func:`llm_cost.perf.choose.load_profile`).
"""

from __future__ import annotations

import json
from dataclasses import field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional, get_type_hints

from llm_cost.core.errors import InputError, SpecError
from llm_cost.core.limits import MAX_ECHO, MAX_NAME, MAX_TEXT
from llm_cost.core.notes import Note, note
from llm_cost.core.types import Engine, TextEnum
from llm_cost.specs.declare import Bounds, Spec, field_names, spec, validated
from llm_cost.specs.files import read_yaml, real_path, shown, validation_message

__all__ = [
    "Parameter",
    "FamilyParameters",
    "EngineParameters",
    "Parameters",
    "PARAMETERS",
    "FAMILY_PARAMETERS",
    "ENGINE_PARAMETERS",
    "Situation",
    "Regime",
    "RegimeBand",
    "SourceError",
    "Profile",
    "profile_name",
    "FIT_FILE",
    "COLLECTIVE_STEP_LATENCY_MAX_S",
    "fit_data",
    "profile_file",
    "profile_names",
    "profile_note",
    "join",
]


class Parameter(Bounds):
    """A calibrated parameter as the type of its field carries it: its unit, meaning, physical
    range and prior (its value where the data cannot determine it). The range bounds the fit and is
    enforced when a profile file is read (pydantic's ``ge`` / ``le``)."""

    __slots__ = ("unit", "meaning", "lower", "upper", "prior")

    def __init__(self, *, unit: str, meaning: str, lower: float, upper: float, prior: float) -> None:
        super().__init__(ge=lower, le=upper)
        self.unit, self.meaning, self.lower, self.upper, self.prior = unit, meaning, lower, upper, prior


def _fraction(meaning: str, lower: float, upper: float, prior: float, of: str = "peak FLOP/s") -> Parameter:
    return Parameter(unit=f"fraction of {of}", lower=lower, upper=upper, prior=prior, meaning=meaning)


def _seconds(meaning: str, unit: str, upper: float, prior: float, lower: float = 0.0) -> Parameter:
    return Parameter(unit=unit, lower=lower, upper=upper, prior=prior, meaning=meaning)


#: The most one latency step of a collective (a whole call within a node: one step,
#: :func:`~llm_cost.perf.calibrated.latency_hops`) may cost: 44 us, about 1.5x NCCL's. A small all-reduce within
#: a node takes 21-29 us in NCCL and 6-10 us in the engines' custom one-shot kernels: vLLM PR #37756
#: (B300: pynccl 29 us, custom 7 us at 16 KiB), PR #24532 (H100, TP4: pynccl 21 us at 0.5 MB),
#: SGLang PR #2904 (H100, TP8: vLLM's custom all-reduce 10 us at 512 B), vLLM PR #39080 (MI355X,
#: TP8: 6.3 us at 24 KB). Up to 200 us per step, and 3 steps for a TP8 all-reduce, the fit had
#: priced one on MI300X at 100 us when one source was held out (160 per decode step: 16 ms of a
#: measured 8.4 ms step, ROCm vLLM dev-docker, Llama-3.1-70B FP8, batch 1).
COLLECTIVE_STEP_LATENCY_MAX_S = 4.4e-5


@spec
class FamilyParameters(Spec):
    """A kernel family's efficiencies (module docstring). Priors: published kernel figures on
    Hopper (cuBLAS BF16 GEMMs at about 75% of dense peak, FP8 at about 65%; streaming reads at 85-90%
    of HBM bandwidth; FlashAttention-3 BF16 forward at 50-75% of peak: Shah et al. 2024, fig. 5)."""

    gemm_efficiency_16: Annotated[float, _fraction("large 16-bit (bf16/fp16) GEMMs' FLOP rate", 0.3, 0.95, 0.75)]
    gemm_efficiency_8: Annotated[
        float, _fraction("large 8-bit (fp8/int8) GEMMs' FLOP rate, of the 8-bit peak", 0.2, 0.95, 0.65)
    ]
    gemm_efficiency_4: Annotated[
        float, _fraction("large 4-bit (fp4) GEMMs' FLOP rate, of the 4-bit peak", 0.2, 0.95, 0.6)
    ]
    bandwidth_efficiency: Annotated[float, _fraction("bandwidth a weight stream reaches", 0.4, 0.97, 0.85, "bandwidth")]
    kv_efficiency_max: Annotated[
        float, _fraction("bandwidth decode attention reads the KV cache at, saturated", 0.2, 0.97, 0.8, "bandwidth")
    ]
    kv_saturation_blocks_per_sm: Annotated[
        float,
        Parameter(
            unit="thread blocks per SM",
            lower=0.25,
            upper=16.0,
            prior=2.0,
            meaning="thread blocks in flight per SM at which decode attention's KV reads saturate",
        ),
    ]
    flash_efficiency: Annotated[
        float, _fraction("prefill (flash) attention's FLOP rate, of the 16-bit peak", 0.15, 0.9, 0.5)
    ]
    overlap_p: Annotated[
        float,
        Parameter(
            unit="p-norm exponent",
            lower=1.5,
            upper=16.0,
            prior=4.0,
            meaning="overlap of an operator's compute and memory time (1: none, large: perfect)",
        ),
    ]
    collective_latency_s: Annotated[
        float,
        _seconds(
            "latency of one step of a collective call (all-reduce, all-to-all, send: one step within a "
            "node, one more per doubling of the nodes) on the GPUs' links and library",
            "s per step",
            COLLECTIVE_STEP_LATENCY_MAX_S,
            1e-5,
            1e-6,
        ),
    ]
    link_efficiency: Annotated[
        float, _fraction("link bandwidth a collective's bytes reach", 0.2, 0.95, 0.75, "link bandwidth")
    ]


@spec
class EngineParameters(Spec):
    """An engine's fixed costs and kernel shares (module docstring). Priors: a CUDA-graph replay of
    a decode step costs a few microseconds per layer; vLLM V1's scheduler, sampler and detokeniser
    cost about 1 ms per step and microseconds per sequence (vLLM's own profiling, RFC #8779 and the
    V1 blog); weight-only int4/int8 kernels (Marlin, Machete) reach 60-80% of the bf16 stream."""

    layer_overhead_s: Annotated[
        float, _seconds("fixed time per layer per step (launches, kernel tails)", "s per layer", 2e-4, 5e-6)
    ]
    step_overhead_s: Annotated[
        float, _seconds("fixed time per step (scheduling, sampling, graph replay, sync)", "s per step", 0.02, 5e-4)
    ]
    sequence_overhead_s: Annotated[
        float, _seconds("time per sequence per step (scheduling, sampling, detokenising)", "s per sequence", 1e-4, 5e-6)
    ]
    moe_layer_overhead_s: Annotated[
        float,
        _seconds("fixed time per MoE layer per step (routing, permutation, combine)", "s per MoE layer", 5e-4, 2e-5),
    ]
    stream_share: Annotated[
        float,
        _fraction("the engine's GEMV/GEMM kernels' weight stream, of the family's", 0.5, 1.0, 0.95, "family's stream"),
    ]
    collective_latency_share: Annotated[
        float,
        Parameter(
            unit="x the family's latency",
            lower=0.05,
            upper=3.0,
            prior=1.0,
            meaning="the engine's collective latency per call, of the family's (a custom one-shot all-reduce vs NCCL)",
        ),
    ]
    moe_gemm_share: Annotated[
        float,
        _fraction("grouped MoE GEMMs' rate, of dense GEMMs' (FLOPs and bytes)", 0.15, 1.0, 0.7, "dense GEMM rate"),
    ]
    int8_bandwidth_share: Annotated[
        float, _fraction("weight-only int8 kernels' bandwidth, of the native stream's", 0.2, 1.0, 0.8, "native stream")
    ]
    int4_bandwidth_share: Annotated[
        float,
        _fraction("weight-only int4 kernels' bandwidth, of the native stream's", 0.15, 1.0, 0.65, "native stream"),
    ]
    request_overhead_s: Annotated[
        float,
        _seconds(
            "time a request's first token waits beside its prefill step (API server, tokenising, scheduling, the first sample)",
            "s per request",
            0.05,
            2e-3,
        ),
    ]


@spec
class Parameters(Spec):
    """The parameters a prediction uses: a family's joined with an engine's (:func:`join`)."""

    family: FamilyParameters
    engine: EngineParameters


@cache
def _declared(cls: type) -> dict[str, Parameter]:
    hints = get_type_hints(cls, include_extras=True)
    return {n: next(m for m in hints[n].__metadata__ if isinstance(m, Parameter)) for n in field_names(cls)}


if TYPE_CHECKING:
    #: Every parameter by name (family then engine), with its unit, bounds and prior.
    PARAMETERS: dict[str, Parameter]
    FAMILY_PARAMETERS: dict[str, Parameter]
    ENGINE_PARAMETERS: dict[str, Parameter]


def __getattr__(name: str) -> Any:
    """:data:`PARAMETERS`, :data:`FAMILY_PARAMETERS`, :data:`ENGINE_PARAMETERS`, built on first use."""
    if name == "FAMILY_PARAMETERS":
        return _declared(FamilyParameters)
    if name == "ENGINE_PARAMETERS":
        return _declared(EngineParameters)
    if name == "PARAMETERS":
        return _declared(FamilyParameters) | _declared(EngineParameters)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Situation(TextEnum):
    """What a prediction's parameters rest on, for its error band: ``fitted`` (rows of this family
    and engine, from other sources, were fitted), ``combined`` (the family's and the engine's rows
    were fitted, never together) or ``transferred`` (the family or the engine had no rows: another's
    parameters stand in)."""

    FITTED = "fitted"
    COMBINED = "combined"
    TRANSFERRED = "transferred"


class Regime(TextEnum):
    """Shapes whose errors differ: decode at small batch (weights stream: fixed costs and
    bandwidth), decode at larger batch (attention, GEMM ramp, per-sequence costs), prefill
    (compute)."""

    DECODE_SMALL = "decode, batch <= 8"
    DECODE_LARGE = "decode, batch > 8"
    PREFILL = "prefill"
    ALL = "all"


@spec
class RegimeBand(Spec):
    """An error band measured out of source: the measured / predicted ratio of held-out rows at its
    10th (``low``) and 90th (``high``) percentiles, from ``rows`` rows of ``sources`` sources."""

    situation: Situation
    regime: Regime
    low: Annotated[float, Bounds(gt=0.0, le=1.0)]
    high: Annotated[float, Bounds(ge=1.0, le=100.0)]
    rows: Annotated[int, Bounds(ge=0)]
    sources: Annotated[int, Bounds(ge=0)]


@spec
class SourceError(Spec):
    """How a fit does out of source: |predicted / measured - 1| of every row predicted by the fit
    without its source (median, ``rows``, ``sources``), and how many measured values fell inside
    the band a fit without their source would print (``in_band``)."""

    method: Literal["leave-one-source-out", "leave-one-row-out"] = "leave-one-source-out"
    rows: Annotated[int, Bounds(ge=0)]
    sources: Annotated[int, Bounds(ge=0)]
    median: Annotated[float, Bounds(ge=0.0)]
    in_band: Annotated[int, Bounds(ge=0)]


#: A profile's name: a file stem (``validate --profile NAME`` finds a shipped profile by it).
PROFILE_NAME = r"[A-Za-z0-9][A-Za-z0-9._+-]*"
ProfileName = Annotated[str, Bounds(min_length=1, max_length=MAX_NAME, pattern=f"^{PROFILE_NAME}$")]


def profile_name(value: object, name: str = "name") -> str:
    """``value`` as a profile name (:data:`PROFILE_NAME`, at most :data:`MAX_NAME` characters: no
    newline, no path separator, nothing a file name or a YAML header cannot hold); InputError
    naming the argument ``name`` otherwise."""
    import re

    text = value.strip() if isinstance(value, str) else None
    if text is None or len(text) > MAX_NAME or not re.fullmatch(PROFILE_NAME, text, re.ASCII):
        raise InputError(
            f"{name}: {shown(value, MAX_ECHO)!r} is not a valid profile identifier (ASCII letters, digits, . _ + -, starting with "
            f"a letter or digit; at most {MAX_NAME} characters)",
            fields=(name,),
        )
    return text


@spec
class Profile(Spec):
    """What a prediction is timed with: a family's and an engine's parameters (``parameters``),
    where they came from (``situation``, ``note``, the ``sources`` and ``rows`` fitted, the engine
    versions), the engine's decode-attention launch rule (``decode_split_kv``: split-KV kernels,
    FlashAttention/FlashInfer/XQA, timed by :mod:`llm_cost.perf.kernels`; false for one block per
    sequence and KV head, as PyTorch's eager SDPA), the shapes fitted (``fitted_batch``,
    ``fitted_context``: least and greatest), the error bands (``bands``) and the parameters a fit
    left at a bound or prior (``at_bounds``, ``fixed``)."""

    name: ProfileName
    family: str
    engine: Engine
    situation: Situation
    note: Annotated[str, Bounds(max_length=MAX_TEXT)]
    parameters: Parameters
    decode_split_kv: bool = False
    sources: tuple[str, ...] = ()
    rows: Annotated[int, Bounds(ge=0)] = 0
    engine_version: str = ""
    fitted_batch: tuple[int, ...] = ()
    fitted_context: tuple[int, ...] = ()
    bands: tuple[RegimeBand, ...] = ()
    out_of_source: Optional[SourceError] = None
    at_bounds: tuple[str, ...] = ()
    fixed: dict[str, str] = field(default_factory=dict)
    transferred_from: Optional[str] = None
    #: the family whose fitted parameters these are (the profile's own unless transferred)
    source_family: str = ""

    def _check(self) -> None:
        """The family and the source family are kernel families
        (:class:`~llm_cost.perf.families.KernelFamily`): a prediction joins the parameters of its
        GPU's family, so a profile of no family could time nothing."""
        from llm_cost.perf.families import KernelFamily

        known = [f.value for f in KernelFamily]
        for name, value in (("family", self.family), ("source_family", self.source_family or self.family)):
            if value not in known:
                raise ValueError(f"{name}: {shown(value, MAX_ECHO)!r} is not a kernel family ({', '.join(known)})")
        # the shapes fitted, as calibrate writes them: [least, greatest] (a measured context may be 0)
        for name, span, least in (("fitted_batch", self.fitted_batch, 1), ("fitted_context", self.fitted_context, 0)):
            if span and (len(span) != 2 or span[0] < least or span[0] > span[1]):
                raise ValueError(
                    f"{name}: {shown(list(span), 60)} is not a range of the shapes fitted; give [least, greatest], "
                    f"whole numbers from {least} with the least first (or leave it out)"
                )


#: The shipped fit (module docstring).
FIT_FILE = Path(__file__).resolve().parent.parent / "data" / "timemodel-fit.json"


@cache
def fit_data() -> dict[str, Any]:
    """The shipped fit file as data (JSON: read without a YAML parser or pydantic; checked against
    the classes above by ``tests/perf/test_profile.py``)."""
    return json.loads(FIT_FILE.read_text(encoding="utf-8"))


def join(family: dict[str, float], engine: dict[str, float]) -> Parameters:
    """A family's and an engine's parameters (as data) as one :class:`Parameters`, unvalidated (the
    shipped fit was validated when it was written)."""
    return Parameters(family=FamilyParameters(**family), engine=EngineParameters(**engine))


def profile_note(profile: Profile, gpu_name: str) -> Note:
    """What a prediction under ``profile`` on ``gpu_name`` rests on (``prediction.profile``): its
    situation, where its parameters come from, and the fit's out-of-source error."""
    error = profile.out_of_source
    return note(
        "prediction.profile",
        name=profile.name,
        engine=profile.engine,
        situation=profile.situation,
        note=profile.note,
        rows=error.rows if error is not None else None,
        sources=error.sources if error is not None else None,
        median=error.median if error is not None else None,
        target=gpu_name,
    )


def profile_names() -> list[str]:
    """The profiles the shipped fit names: ``<family>-<engine>`` for every family and engine."""
    from llm_cost.perf.families import KernelFamily

    return [f"{f.value}-{e.value}" for f in KernelFamily for e in Engine]


def _from_yaml(path: Path) -> Profile:
    from pydantic import ValidationError

    try:
        return validated(Profile, read_yaml(path))
    except ValidationError as exc:
        raise SpecError(validation_message(path, exc)) from None


def profile_file(name_or_path: str) -> Profile | None:
    """The profile in a YAML file (as ``llm-cost calibrate`` writes one) when ``name_or_path`` names
    a file (ends in .yaml/.yml or holds a /), else None (a name: :func:`llm_cost.perf.choose.load_profile`);
    SpecError for a file that is not there or not a valid profile, naming the field."""
    text = name_or_path.strip()
    path = Path(text)
    if not (text.lower().endswith((".yaml", ".yml")) or "/" in text):
        return None
    if not path.exists() and not path.is_symlink():
        raise SpecError(f"profile: no such file {shown(text, 80)!r}", fields=("profile",))
    return _from_yaml(real_path(path, "a profile YAML"))
