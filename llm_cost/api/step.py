"""The API's questions about one step of a model on a GPU: forward FLOPs, ridge points, a decode
step's or a prefill's bound, estimate and calibrated prediction (one point or a sweep), and long
contexts (``llm-cost flops``, ``roofline``, ``context``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union, cast

from llm_cost.api import checks, choices
from llm_cost.api.model import GpuLike, ModelLike, load_gpu, load_model
from llm_cost.core.choices import AttentionMask, Logits, MLAForm, WeightBytes, WeightFlops
from llm_cost.core.errors import InputError
from llm_cost.core.types import Phase

if TYPE_CHECKING:
    from llm_cost.analyses.context import ContextResult
    from llm_cost.analyses.roofline import DecodeStep, PrefillStep
    from llm_cost.api.requests import DtypeArg, EngineArg, KvDtypeArg, ProfileArg, StepRequest, WeightsDtypeArg
    from llm_cost.model.layout import Layout
    from llm_cost.perf.ridge import Ridge
    from llm_cost.workload.flops import ForwardFlops

#: A step result a note is added to: a decode or a prefill step.
Step = TypeVar("Step", bound="DecodeStep | PrefillStep")

__all__ = ["step_request", "flops", "ridges", "decode", "decode_sweep", "prefill", "prefill_sweep", "context"]

#: Contexts ``context`` reports when none are given (the CLI's default too: 8K, 32K, 128K, 1M).
CONTEXTS = (8192, 32768, 131072, 1048576)
#: Lengths ``flops`` counts when none are given: prompt lengths of a prefill, cached contexts of a
#: decode step (the CLI's defaults too).
FLOPS_LENGTHS: dict[Phase, tuple[int, ...]] = {Phase.PREFILL: (128, 1024, 8192), Phase.DECODE: (8192,)}


def flops(
    model: ModelLike,
    phase: Union[Phase, str] = Phase.PREFILL,
    lengths: Optional[Sequence[int]] = None,
    batch: int = 1,
    attention: Union[AttentionMask, str] = AttentionMask.CAUSAL,
    logits: Union[Logits, str] = Logits.LAST,
    mla: Union[MLAForm, str] = MLAForm.PLAIN,
    detail: bool = True,
) -> list[ForwardFlops]:
    """FLOPs of a forward pass by part (``llm-cost flops``): a prefill of each prompt length of
    ``lengths``, or (``phase="decode"``) one new token after each cached context of ``lengths``
    (its LM head on that one position); default :data:`FLOPS_LENGTHS` of the phase. 2 FLOPs per
    multiply-add (seed 002). Without ``detail`` the results carry their totals only (no FLOPs by
    operator group, no conventions)."""
    from llm_cost.workload.flops import forward_flops

    chosen = checks.one_of(checks.choice(phase, Phase, "phase"), "phase", (Phase.PREFILL, Phase.DECODE))
    minimum = 1 if chosen is Phase.PREFILL else 0
    lengths = checks.counts(FLOPS_LENGTHS[chosen] if lengths is None else lengths, "lengths", minimum)
    batch = checks.count(batch, "batch")
    mask, head = checks.choice(attention, AttentionMask, "attention"), checks.choice(logits, Logits, "logits")
    form, spec = checks.choice(mla, MLAForm, "mla"), load_model(model)
    full = checks.flag(detail, "detail")
    _check_flops_forms(spec, chosen, mask, head, form)
    if chosen is Phase.PREFILL:
        return [forward_flops(spec, n, 0, batch, mask, head, form, full) for n in lengths]
    return [forward_flops(spec, 1, c, batch, mask, Logits.LAST, form, full) for c in lengths]


def _check_flops_forms(spec: Any, phase: Phase, mask: AttentionMask, head: Logits, form: MLAForm) -> None:
    """InputError for a form that cannot change the count: the LM head on every position or the
    full S x S mask for a decode step (one new token a sequence: its head runs once and it attends
    to every cached token under either mask), or an MLA form for a model without MLA."""
    from llm_cost.specs.schema import MLAAttention

    if phase is Phase.DECODE and (head is Logits.ALL or mask is AttentionMask.FULL):
        field, value = ("logits", "all") if head is Logits.ALL else ("attention", "full")
        raise InputError(
            f"{field}: {value} does not apply to phase decode (one new token a sequence: its LM head runs once and "
            "it attends to every cached token under either mask); give phase prefill",
            fields=(field, "phase"),
        )
    if form is not MLAForm.PLAIN and not isinstance(spec.attention, MLAAttention):
        raise InputError(
            f"mla: {form.value} is a form of multi-head latent attention (DeepSeek-V2/V3, Kimi K2); "
            f"{spec.name} has none",
            fields=("mla",),
        )


def ridges(gpu: GpuLike = "h100") -> list[Ridge]:
    """The GPU's ridge point for every dtype its datasheet lists: peak FLOP/s over bandwidth."""
    from llm_cost.perf.ridge import ridge_points

    return ridge_points(load_gpu(gpu))


def _step_options(
    spec: Any,
    g: Any,
    dtype: Any,
    weights_dtype: Any,
    bits_per_weight: Any,
    group_size: Any,
    kv_dtype: Any,
    mfu: Any,
    mbu: Any,
    layout: Any,
    network_gb_s: Any,
    profile: Any,
    engine: Any = None,
    quantize_embeddings: Any = False,
) -> dict[str, Any]:
    """The engine arguments every step takes, resolved by :mod:`llm_cost.api.choices` (the profile
    from ``profile``, else from the GPU and ``engine``)."""
    from llm_cost.model.layout import ONE_GPU

    return dict(
        dtype=choices.compute_dtype(spec, g, dtype, weights_dtype),
        weight_bits=choices.weight_bits(
            spec, weights_dtype, bits_per_weight, group_size, quantize_embeddings=quantize_embeddings
        ),
        kv_bits=choices.kv_dtype_of(kv_dtype).bits,
        mfu=choices.mfu_of(mfu),
        mbu=choices.mbu_of(mbu),
        layout=choices.layout_of(layout) or ONE_GPU,
        network_gb_s=choices.network_gb_s_of(network_gb_s),
        profile=choices.given_profile_of(g, profile, engine),
    )


def engine_noted(results: list[Step], profile: Optional[ProfileArg], engine: Optional[EngineArg]) -> list[Step]:
    """``results`` with a note saying which engine their prediction is for and whether it is the
    default (:func:`llm_cost.api.choices.engine_of`); unchanged when ``profile`` was given (the
    profile decides) or the results carry no conventions (rows of figures only) or no prediction."""
    from dataclasses import replace

    from llm_cost.core.notes import note

    if profile is not None:
        return results
    chosen, given = choices.engine_of(engine)
    out: list[Step] = []
    for r in results:
        if r.predicted_s is None or not r.conventions:
            out.append(r)
            continue
        n = note(
            "prediction.engine",
            engine=chosen.value,
            default=not given,
            profile=r.profile,
            kind=r.profile_kind,
            rows=r.profile_rows,
        )
        out.append(replace(r, conventions=[*r.conventions, n]))
    return out


def _unread_noted(results: list[Step], spec: Any, weights_dtype: Any, bits_per_weight: Any) -> list[Step]:
    """``results`` with the note that a ``quantization_config`` not modelled leaves the weights at
    the config's ``torch_dtype`` (:func:`llm_cost.api.choices.unread_quantization_notes`), on the
    rows that carry conventions."""
    from dataclasses import replace

    said = choices.unread_quantization_notes(spec, weights_dtype, bits_per_weight)
    if not said:
        return results
    return [replace(r, conventions=[*r.conventions, *said]) if r.conventions else r for r in results]


def decode_sweep(
    model: ModelLike,
    gpu: GpuLike = "h100",
    batches: Sequence[int] = (1,),
    contexts: Sequence[int] = (0,),
    *,
    dtype: Optional[DtypeArg] = None,
    weights_dtype: Optional[WeightsDtypeArg] = None,
    bits_per_weight: Optional[float] = None,
    group_size: Optional[int] = None,
    kv_dtype: Optional[KvDtypeArg] = None,
    mfu: Optional[float] = None,
    mbu: Optional[float] = None,
    weight_bytes: Union[WeightBytes, str] = WeightBytes.READ,
    layout: Optional[Layout] = None,
    network_gb_s: Optional[float] = None,
    profile: Optional[ProfileArg] = None,
    detail: bool = True,
    ops: bool = True,
    engine: Optional[EngineArg] = None,
    quantize_embeddings: bool = False,
) -> list[DecodeStep]:
    """Decode steps at every (batch, context) of ``batches`` x ``contexts`` (batch-major), each
    with its Roofline bound, MFU/MBU estimate and calibrated prediction, on one GPU or per GPU of
    ``layout`` (``llm-cost roofline MODEL --batch B --context C``). Defaults:
    :mod:`llm_cost.api.choices`. Without ``detail`` the rows carry figures only (no operator
    table or conventions); without ``ops`` no operator table (the figures and conventions are
    the same); ``quantize_embeddings``: the embedding and LM head in ``weights_dtype`` too (else kept
    in 16 bits, :func:`llm_cost.api.choices.weight_bits`); at most 10,000 points."""
    from llm_cost.analyses.roofline import decode_steps

    batches, contexts = checks.counts(batches, "batches"), checks.counts(contexts, "contexts", 0)
    checks.grid_size(len(batches) * len(contexts), ("batches", "contexts"))
    spec, g = load_model(model), load_gpu(gpu)
    options = _step_options(
        spec,
        g,
        dtype,
        weights_dtype,
        bits_per_weight,
        group_size,
        kv_dtype,
        mfu,
        mbu,
        layout,
        network_gb_s,
        profile,
        engine,
        quantize_embeddings,
    )
    points = [(b, c) for b in batches for c in contexts]
    reads = checks.choice(weight_bytes, WeightBytes, "weight_bytes")
    steps = decode_steps(
        spec,
        g,
        points,
        weight_bytes=reads,
        detail=checks.flag(detail, "detail"),
        ops=checks.flag(ops, "ops"),
        **options,
    )
    return _unread_noted(engine_noted(steps, profile, engine), spec, weights_dtype, bits_per_weight)


def decode(model: ModelLike, gpu: GpuLike = "h100", batch: int = 1, context: int = 0, **options: object) -> DecodeStep:
    """One decode step: ``batch`` sequences each adding a token after ``context`` cached tokens;
    ``options`` as :func:`decode_sweep`."""
    checks.known_options(options, decode_sweep)
    return decode_sweep(
        model,
        gpu,
        [checks.count(batch, "batch")],
        [checks.count(context, "context", 0)],
        **cast("dict[str, Any]", options),
    )[0]


def prefill_sweep(
    model: ModelLike,
    gpu: GpuLike = "h100",
    batches: Sequence[int] = (1,),
    seqs: Sequence[int] = (8192,),
    *,
    dtype: Optional[DtypeArg] = None,
    weights_dtype: Optional[WeightsDtypeArg] = None,
    bits_per_weight: Optional[float] = None,
    group_size: Optional[int] = None,
    kv_dtype: Optional[KvDtypeArg] = None,
    mfu: Optional[float] = None,
    mbu: Optional[float] = None,
    logits: Union[Logits, str] = Logits.LAST,
    layout: Optional[Layout] = None,
    network_gb_s: Optional[float] = None,
    profile: Optional[ProfileArg] = None,
    engine: Optional[EngineArg] = None,
    quantize_embeddings: bool = False,
) -> list[PrefillStep]:
    """Prefills (the time to first token) of ``batch`` prompts of each length of ``seqs``, at
    every batch of ``batches`` (batch-major), with bound, estimate and prediction
    (``llm-cost roofline MODEL --phase prefill --seq N``); ``quantize_embeddings`` as
    :func:`decode_sweep`; at most 10,000 points."""
    from llm_cost.analyses.roofline import prefill_step

    batches, seqs = checks.counts(batches, "batches"), checks.counts(seqs, "seqs")
    checks.grid_size(len(batches) * len(seqs), ("batches", "seqs"))
    spec, g = load_model(model), load_gpu(gpu)
    options = _step_options(
        spec,
        g,
        dtype,
        weights_dtype,
        bits_per_weight,
        group_size,
        kv_dtype,
        mfu,
        mbu,
        layout,
        network_gb_s,
        profile,
        engine,
        quantize_embeddings,
    )
    head = checks.choice(logits, Logits, "logits")
    steps = [prefill_step(spec, g, s, b, logits=head, **options) for b in batches for s in seqs]
    return _unread_noted(engine_noted(steps, profile, engine), spec, weights_dtype, bits_per_weight)


def step_request(request: StepRequest) -> list[DecodeStep] | list[PrefillStep]:
    """The steps ``request`` asks for (as the command line builds it from its flags): its decode
    steps (:func:`decode_sweep`) or prefills (:func:`prefill_sweep`). InputError naming the field
    for a decode's arguments given to a prefill, or a prefill's to a decode."""
    from llm_cost.api.requests import StepOptions, StepRequest

    r = checks.record(request, StepRequest, "request")
    options = checks.record(r.options, StepOptions, "options").given()
    logits = checks.choice(r.logits, Logits, "logits")  # before comparing: an array compares elementwise
    weight_bytes = checks.choice(r.weight_bytes, WeightBytes, "weight_bytes")
    if checks.choice(r.phase, Phase, "phase") == Phase.PREFILL:
        decode_only = {"weight_bytes": weight_bytes != WeightBytes.READ, "detail": r.detail is not True,
                       "ops": r.ops is not True}  # fmt: skip
        named = [n for n, given in decode_only.items() if given]
        if named:
            raise InputError(f"{named[0]}: a decode step's; leave it out of a prefill", fields=(named[0], "phase"))
        return prefill_sweep(r.model, r.gpu, r.batches, r.lengths, logits=logits, **options)
    if checks.choice(r.phase, Phase, "phase") != Phase.DECODE:
        raise InputError(f"phase: {r.phase} is not a step of its own; give decode or prefill", fields=("phase",))
    if logits != Logits.LAST:
        raise InputError(
            "logits: a prefill's; a decode step takes each sequence's last token", fields=("logits", "phase")
        )
    return decode_sweep(
        r.model, r.gpu, r.batches, r.lengths, weight_bytes=weight_bytes, detail=r.detail, ops=r.ops, **options
    )


def prefill(model: ModelLike, gpu: GpuLike = "h100", seq: int = 8192, batch: int = 1, **options: object) -> PrefillStep:
    """One prefill of ``batch`` prompts of ``seq`` tokens; ``options`` as :func:`prefill_sweep`."""
    checks.known_options(options, prefill_sweep)
    return prefill_sweep(
        model, gpu, [checks.count(batch, "batch")], [checks.count(seq, "seq")], **cast("dict[str, Any]", options)
    )[0]


def context(
    model: ModelLike,
    contexts: Optional[Sequence[int]] = None,
    gpu: GpuLike = "h100",
    mfu: Optional[float] = None,
    mbu: Optional[float] = None,
    dtype: Optional[DtypeArg] = None,
    kv_dtype: Optional[KvDtypeArg] = None,
    weight_flops: Union[WeightFlops, str] = WeightFlops.GEMM,
    logits: Union[Logits, str] = Logits.LAST,
) -> ContextResult:
    """Long-context costs at each context (``llm-cost context``): attention against weight FLOPs
    and their crossover, the prefill's time, KV per request, the score matrix's size; ``contexts``
    default :data:`CONTEXTS`."""
    from llm_cost.analyses.context import context_analysis

    contexts = checks.counts(CONTEXTS if contexts is None else contexts, "contexts")
    spec, g = load_model(model), load_gpu(gpu)
    compute = choices.compute_dtype(spec, g, dtype)
    convention = checks.choice(weight_flops, WeightFlops, "weight_flops")
    head = checks.choice(logits, Logits, "logits")
    return context_analysis(
        spec,
        contexts,
        g,
        choices.mfu_of(mfu),
        compute,
        convention,
        choices.kv_dtype_of(kv_dtype).bits,
        choices.mbu_of(mbu),
        head,
        choices.weight_bits(spec),
    )
