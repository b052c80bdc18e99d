"""Calibration profiles: the parameters of :mod:`llm_cost.perf.calibrated` for one (GPU, engine).

A profile is a small YAML file (``llm_cost/data/profiles/*.yaml``): its parameters (units in the key
names or in :data:`PARAMETERS`), the measurement ids it was fitted on, the parameters that the data
could not determine (fixed at their prior, with the reason), and its leave-one-out fit error. A
profile for a GPU without data is *transferred*: the efficiencies of the nearest fitted GPU's profile
(fractions of the target's own datasheet peaks, so its compute and memory terms scale by the datasheet
ratios) and its fixed times, saying so and the error to expect.

The classes are declared as the spec classes are (:mod:`llm_cost.specs.declare`: frozen dataclasses
whose field types carry their bounds, validated by pydantic when a file is read), and the shipped
profiles are rebuilt from a generated index (:mod:`llm_cost.perf.profile_index`) without
validation, so a command that predicts a time with a shipped profile imports neither pydantic nor a
YAML or JSON parser.
"""

from __future__ import annotations

from dataclasses import field
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional, get_type_hints

from llm_cost.core.errors import InputError, SpecError
from llm_cost.core.limits import MAX_CALIBRATION_ROWS, MAX_ECHO, MAX_NAME, MAX_TEXT
from llm_cost.core.notes import Note, note
from llm_cost.core.types import Engine
from llm_cost.specs import index
from llm_cost.specs.declare import Bounds, Spec, field_names, spec, validated
from llm_cost.specs.files import read_yaml, real_path, shown, validation_message

__all__ = [
    "Parameter",
    "PARAMETERS",
    "Parameters",
    "FitError",
    "Profile",
    "profile_name",
    "profiles_dir",
    "profile_names",
    "load_profile",
    "default_profile",
    "profile_note",
    "TRANSFER_WIDEN",
    "transferred",
    "engine_profile",
    "shipped_profiles",
    "nearest_fitted",
    "build_profile_index",
    "profile_index_source",
]


class Parameter(Bounds):
    """A calibrated parameter as the type of its :class:`Parameters` field carries it: its unit,
    meaning, physical range and prior (its value where the data cannot determine it). The range
    bounds the fit and is enforced when a profile is read (pydantic's ``ge`` / ``le``)."""

    __slots__ = ("unit", "meaning", "lower", "upper", "prior")

    def __init__(self, *, unit: str, meaning: str, lower: float, upper: float, prior: float) -> None:
        super().__init__(ge=lower, le=upper)
        self.unit, self.meaning, self.lower, self.upper, self.prior = unit, meaning, lower, upper, prior


@spec
class Parameters(Spec):
    """The values of the calibrated model's parameters (:mod:`llm_cost.perf.calibrated`); each
    field's type carries its :class:`Parameter` (:data:`PARAMETERS` lists them by name). Priors:
    typical Hopper/Ampere figures (cuBLAS ~80% of dense peak on large GEMMs, ~80% of bandwidth on
    streaming reads, ~10 us per NCCL all-reduce call on NVLink)."""

    gemm_efficiency_max: Annotated[
        float,
        Parameter(
            unit="fraction of peak FLOP/s",
            lower=0.2,
            upper=1.0,
            prior=0.8,
            meaning="GEMM FLOP rate at many tokens in flight",
        ),
    ]
    gemm_half_tokens: Annotated[
        float,
        Parameter(
            unit="tokens",
            lower=1.0,
            upper=4096.0,
            prior=64.0,
            meaning="tokens in flight M at which a GEMM reaches half its ceiling",
        ),
    ]
    overlap_p: Annotated[
        float,
        Parameter(
            unit="p-norm exponent",
            lower=1.0,
            upper=16.0,
            prior=4.0,
            meaning="overlap of compute and memory in an operator (1: none, large: perfect)",
        ),
    ]
    bandwidth_efficiency_native: Annotated[
        float,
        Parameter(
            unit="fraction of bandwidth",
            lower=0.2,
            upper=1.0,
            prior=0.8,
            meaning="bandwidth reached reading 16-bit (or native fp8) weights",
        ),
    ]
    bandwidth_efficiency_int8: Annotated[
        float,
        Parameter(
            unit="fraction of bandwidth",
            lower=0.1,
            upper=1.0,
            prior=0.65,
            meaning="bandwidth reached reading weight-only int8 weights",
        ),
    ]
    bandwidth_efficiency_int4: Annotated[
        float,
        Parameter(
            unit="fraction of bandwidth",
            lower=0.1,
            upper=1.0,
            prior=0.5,
            meaning="bandwidth reached reading weight-only int4 weights (with scales)",
        ),
    ]
    kv_efficiency_max: Annotated[
        float,
        Parameter(
            unit="fraction of bandwidth",
            lower=0.1,
            upper=1.0,
            prior=0.8,
            meaning="bandwidth of decode attention's KV reads once saturated",
        ),
    ]
    kv_saturation_heads: Annotated[
        float,
        Parameter(
            unit="sequences x KV heads",
            lower=1.0,
            upper=4096.0,
            prior=64.0,
            meaning="KV heads in flight at which decode attention saturates",
        ),
    ]
    attention_efficiency_flash: Annotated[
        float,
        Parameter(
            unit="fraction of peak FLOP/s",
            lower=0.1,
            upper=1.0,
            prior=0.5,
            meaning="FLOP rate of prefill (flash) attention",
        ),
    ]
    layer_overhead_s: Annotated[
        float,
        Parameter(
            unit="s per layer",
            lower=0.0,
            upper=1e-3,
            prior=2e-5,
            meaning="fixed time per layer per step (kernel launches and tails)",
        ),
    ]
    step_overhead_s: Annotated[
        float,
        Parameter(
            unit="s per step",
            lower=0.0,
            upper=0.05,
            prior=0.0,
            meaning="fixed time per step per pipeline stage (graph replay, sampling, sync)",
        ),
    ]
    collective_latency_s: Annotated[
        float,
        Parameter(
            unit="s per call",
            lower=0.0,
            upper=1e-3,
            prior=1e-5,
            meaning="latency of one collective call (all-reduce, all-to-all, send)",
        ),
    ]
    link_efficiency: Annotated[
        float,
        Parameter(
            unit="fraction of link bandwidth",
            lower=0.1,
            upper=1.0,
            prior=0.8,
            meaning="link bandwidth a collective's bytes reach",
        ),
    ]


@cache
def _declared() -> dict[str, Parameter]:
    """The :class:`Parameter` each field of :class:`Parameters` carries in its type, by field
    name in declared order (the field types are evaluated here, on first use: a prediction from a
    shipped profile never needs them)."""
    hints = get_type_hints(Parameters, include_extras=True)
    return {
        name: next(m for m in hints[name].__metadata__ if isinstance(m, Parameter)) for name in field_names(Parameters)
    }


if TYPE_CHECKING:
    from llm_cost.specs.schema import HardwareSpec

    #: Every parameter of the calibrated model by name, in declared order: the :class:`Parameter`
    #: its :class:`Parameters` field's type carries (built on first use, see :func:`__getattr__`).
    PARAMETERS: dict[str, Parameter]


def __getattr__(name: str) -> Any:
    """:data:`PARAMETERS`, derived from :class:`Parameters` on first use."""
    if name == "PARAMETERS":
        return _declared()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@spec
class FitError(Spec):
    """Relative errors |predicted / measured - 1| of a fit, leave-one-out (each row predicted by the
    profile fitted without it) and in-sample; and the signed leave-one-out residuals predicted /
    measured - 1 at the 10th and 90th percentiles (``loo_low`` <= 0 <= ``loo_high``: with fewer than
    10 rows, their least and greatest), from which a prediction's error band is drawn
    (:func:`llm_cost.perf.calibrated.band_factors`)."""

    method: Literal["leave-one-out"] = "leave-one-out"
    rows: Annotated[int, Bounds(ge=1, le=MAX_CALIBRATION_ROWS, strict=True)]
    loo_median: RelativeError
    loo_max: RelativeError
    in_sample_median: RelativeError
    in_sample_max: RelativeError
    loo_low: Annotated[float, Bounds(ge=-1.0, le=0.0)] = 0.0
    loo_high: Annotated[float, Bounds(ge=0.0, le=100.0)] = 0.0


#: A profile's name: a file stem (``validate --profile NAME`` finds a shipped profile by it).
PROFILE_NAME = r"[A-Za-z0-9][A-Za-z0-9._+-]*"
ProfileName = Annotated[str, Bounds(min_length=1, max_length=MAX_NAME, pattern=f"^{PROFILE_NAME}$")]
#: A relative error |predicted / measured - 1| (a finite number; 100: a prediction 101x off).
RelativeError = Annotated[float, Bounds(ge=0.0, le=1e6)]


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


def _units() -> dict[str, str]:
    return {k: p.unit for k, p in _declared().items()}


@spec
class Profile(Spec):
    """A calibration profile (see the module docstring)."""

    name: ProfileName
    gpu: Annotated[str, Bounds(min_length=1, max_length=MAX_NAME)]
    engine: Engine
    kind: Literal["fitted", "transferred"]
    note: Annotated[str, Bounds(max_length=MAX_TEXT)]
    parameters: Parameters
    units: dict[str, str] = field(default_factory=_units)
    # the engine's decode attention splits each sequence's keys over thread blocks (split-KV,
    # flash-decoding: FlashAttention, FlashInfer, TensorRT-LLM's XQA), timed by the split rule of
    # llm_cost.perf.kernels; false for kernels with one block per (sequence, KV head), such as
    # PyTorch's eager SDPA that the h200 profile measured
    decode_split_kv: bool = False
    fitted_on: tuple[str, ...] = ()  # measurement ids (fitted), or those of the source
    measurements: tuple[str, ...] = ()  # the files holding them
    fixed: dict[str, str] = field(default_factory=dict)  # parameter -> why it is at its prior
    error: Optional[FitError] = None
    transferred_from: Optional[str] = None
    expected_error: Optional[str] = None
    engine_version: str = ""  # the engine and version of the measurements, as their files name it
    fitted_batch: tuple[int, ...] = ()  # (least, greatest) batch of the rows fitted on (or the source's)
    fitted_context: tuple[int, ...] = ()  # (least, greatest) decode context or prompt length, tokens
    #: the error band's widening for a transferred profile (see band_factors): at least 1 (a band is
    #: never narrowed), at most 10 (the measured transfer error is 2.4x; 10 leaves a hand-edited
    #: profile room, and a finite band)
    transfer_widen: Annotated[float, Bounds(ge=1.0, le=10.0)] = 1.0
    source_error: Optional[FitError] = None  # a transferred profile's source's leave-one-out errors

    def _check(self) -> None:
        """The GPU is a shipped one: a profile's rows were timed on a GPU the catalogue knows
        (:func:`~llm_cost.specs.load.gpu_names`), and a prediction looks its profile up by it."""
        from llm_cost.specs.load import gpu_names

        if self.gpu not in gpu_names():
            raise ValueError(f"gpu: {shown(self.gpu, MAX_ECHO)!r} is not a shipped GPU ({', '.join(gpu_names())})")


def profiles_dir() -> Path:
    """Folder of the shipped profiles."""
    return Path(__file__).resolve().parent.parent / "data" / "profiles"


def profile_names() -> list[str]:
    """Names of the shipped profiles."""
    return sorted(p.stem for p in profiles_dir().glob("*.yaml"))


def build_profile_index() -> dict[str, dict[str, Any]]:
    """The index of the shipped profiles (:mod:`llm_cost.perf.profile_index`, written by
    ``scripts/build_index.py`` and ``scripts/fit_profiles.py``): per file stem, its
    :func:`~llm_cost.specs.index.entry` (CRC-32, validated content, nested classes), so that a
    command reads a shipped profile without pydantic or a YAML parser, as
    :mod:`llm_cost.specs.load` reads a shipped spec."""
    return {path.stem: index.entry(path, _from_yaml(path)) for path in sorted(profiles_dir().glob("*.yaml"))}


def profile_index_source(built: dict[str, dict[str, Any]]) -> str:
    """The text of :mod:`llm_cost.perf.profile_index` for ``built`` (:func:`build_profile_index`)."""
    return index.index_source(
        "The index of the shipped calibration profiles: their hashes and validated content.\n"
        "Generated by ``python scripts/build_index.py``; do not edit.",
        built,
    )


def _from_yaml(path: Path) -> Profile:
    from pydantic import ValidationError

    try:
        return validated(Profile, read_yaml(path))
    except ValidationError as exc:
        raise SpecError(validation_message(path, exc)) from None


@lru_cache(maxsize=64)
def _load(path: Path) -> Profile:
    """The profile in ``path``: from the index when it is a shipped file unchanged since the index
    was built, else from its YAML."""
    shipped = index.imported("llm_cost.perf.profile_index").get(path.stem) if path.parent == profiles_dir() else None
    found = index.current(shipped, path)
    if found is None:
        return _from_yaml(path)
    return index.rebuilt(Profile, found)


def load_profile(name_or_path: str) -> Profile:
    """A shipped profile by name (``llm-cost validate`` lists them) or a profile YAML file;
    SpecError naming the shipped profiles when neither exists."""
    text = name_or_path.strip()
    path = Path(text)
    if text.lower().endswith((".yaml", ".yml")) or "/" in text:
        if not path.exists() and not path.is_symlink():
            raise SpecError(f"profile: no such file {shown(text, 80)!r}", fields=("profile",))
        return _load(real_path(path, "a profile YAML"))
    shipped = profiles_dir() / f"{text.lower()}.yaml"
    if not shipped.is_file():
        raise SpecError(
            f"profile: {shown(text, 60)!r} is not a shipped one. Shipped profiles: "
            f"{', '.join(profile_names())} (or give the path of a YAML file)",
            fields=("profile",),
        )
    return _load(shipped)


def default_profile(gpu_name: str) -> Profile | None:
    """The shipped default profile of a shipped GPU (the file ``<gpu>.yaml``), or None."""
    path = profiles_dir() / f"{gpu_name.lower()}.yaml"
    return _load(path) if path.is_file() else None


#: How much wider a transferred profile's error band is than its source's leave-one-out band: on the
#: shipped rows, profiles carried to other GPUs of their engine miss by a median 2.4x their own
#: leave-one-out median error (the median over the fitted profiles of that ratio:
#: :func:`llm_cost.analyses.calibration.measured_transfer_widen`, printed by ``llm-cost validate``;
#: from 1.0x for h100-vllm to 13x for mi300x-vllm on NVIDIA rows), rounded to 2.5.
#: ``tests/perf/test_engines.py`` recomputes it.
TRANSFER_WIDEN = 2.5


def transferred(
    source: Profile, gpu: HardwareSpec, source_gpu: HardwareSpec, name: str | None = None, rule: str = ""
) -> Profile:
    """A profile for ``gpu`` from a fitted one: efficiencies (fractions of the target's own peaks
    and bandwidth, so compute and memory times scale by the datasheet ratios) and fixed times kept;
    its error band the source's widened by :data:`TRANSFER_WIDEN`. Built without validation (the
    source was validated), so a prediction needs no pydantic. ``rule``: why this source (the
    transfer rule of :func:`llm_cost.api.choices.profile_of`)."""
    assert source.error is not None  # only fitted profiles are transferred
    ratio_bw = gpu.memory_bandwidth_tb_s / source_gpu.memory_bandwidth_tb_s
    ratio_flops = gpu.dense_tflops.get("bf16", 0) / source_gpu.dense_tflops["bf16"]
    return Profile(
        name=name or gpu.name,
        gpu=gpu.name,
        engine=source.engine,
        kind="transferred",
        transferred_from=source.name,
        note=(
            f"transferred from profile {source.name} ({source_gpu.name}, {source.engine}, fitted on "
            f"{len(source.fitted_on)} rows){': ' + rule if rule else ''}: its efficiencies and fixed times on "
            f"{gpu.name}'s datasheet peaks (bandwidth x{ratio_bw:.2f}, bf16 FLOP/s x{ratio_flops:.2f}); no "
            f"measurement of {gpu.name} was fitted"
        ),
        parameters=source.parameters,
        decode_split_kv=source.decode_split_kv,
        fitted_on=source.fitted_on,
        measurements=source.measurements,
        fixed=dict(source.fixed),
        error=None,
        expected_error=(
            f"not fitted on {gpu.name}: the source's leave-one-out median {source.error.loo_median:.1%} "
            f"(max {source.error.loo_max:.1%}); profiles carried to another GPU or engine miss the shipped rows "
            f"by about {TRANSFER_WIDEN:g}x their source's held-out error (llm-cost validate), so its band is "
            f"{TRANSFER_WIDEN:g}x wider"
        ),
        engine_version=source.engine_version,
        fitted_batch=source.fitted_batch,
        fitted_context=source.fitted_context,
        transfer_widen=TRANSFER_WIDEN,
        source_error=source.error,
    )


def shipped_profiles() -> list[Profile]:
    """Every shipped profile, by name."""
    return [load_profile(n) for n in profile_names()]


def engine_profile(gpu_name: str, engine: Engine) -> Profile | None:
    """The shipped profile of ``gpu_name`` under ``engine``: the file ``<gpu>-<engine>.yaml``, else
    the GPU's own ``<gpu>.yaml`` when its engine is ``engine`` (h200 is the PyTorch-eager fit), else
    None."""
    path = profiles_dir() / f"{gpu_name.lower()}-{engine.value}.yaml"
    if path.is_file():
        return _load(path)
    plain = default_profile(gpu_name)
    return plain if plain is not None and plain.engine == engine else None


def nearest_fitted(gpu: HardwareSpec, engine: Engine | None, gpus: dict[str, HardwareSpec]) -> Profile | None:
    """The fitted shipped profile (of ``engine``, or of any engine when None) on the GPU nearest
    ``gpu`` other than itself: the same vendor first, then the least |log bandwidth ratio| + |log
    bf16 peak ratio| (the datasheet figures a transfer scales by); ``gpus`` the specs by name."""
    import math

    def distance(p: Profile) -> tuple[int, float]:
        other = gpus[p.gpu]
        bw = abs(math.log(gpu.memory_bandwidth_tb_s / other.memory_bandwidth_tb_s))
        flops = abs(math.log(max(gpu.dense_tflops.get("bf16", 1.0), 1e-9) / other.dense_tflops["bf16"]))
        return (0 if other.vendor == gpu.vendor else 1, bw + flops)

    found = [
        p
        for p in shipped_profiles()
        if p.kind == "fitted" and p.gpu != gpu.name and (engine is None or p.engine == engine) and p.gpu in gpus
    ]
    return min(found, key=lambda p: (distance(p), p.name)) if found else None


def profile_note(profile: Profile, gpu_name: str) -> Note:
    """What a prediction under ``profile`` on ``gpu_name`` rests on: fitted (rows, LOO error) or
    transferred (from where, the error to expect), and whether the profile is another GPU's."""
    other = profile.gpu if profile.gpu != gpu_name else None
    if profile.kind == "fitted" and profile.error is not None:
        return note(
            "prediction.fitted",
            name=profile.name,
            engine=profile.engine,
            rows=profile.error.rows,
            gpu=profile.gpu,
            loo_median=profile.error.loo_median,
            loo_max=profile.error.loo_max,
            other_gpu=other,
            target=gpu_name,
        )
    return note(
        "prediction.transferred",
        name=profile.name,
        source=profile.transferred_from,
        engine=profile.engine,
        expected_error=profile.expected_error,
        other_gpu=other,
        target=gpu_name,
    )
