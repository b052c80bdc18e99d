"""The one place a user-level choice becomes an engine argument, and so the only place a default
is decided: the bits a weight is stored in, the dtype a step computes in, the KV element, the
memory accounting, the time model and its profile, and the layout.

Every function of the API (and so every command) resolves its choices here; the engine below
takes them explicitly and decides none.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, cast

from llm_cost.api import checks
from llm_cost.core.errors import InputError
from llm_cost.core.limits import NETWORK_GB_S_RANGE
from llm_cost.core.types import (
    BLOCK_SCALES,
    DEFAULT_INT4_GROUP,
    DTYPE_BITS,
    Dtype,
    Engine,
    ServingEngine,
    StorageDtype,
    WeightFormat,
    stored_weight_bits,
)

if TYPE_CHECKING:
    from llm_cost.analyses.capacity import MemoryPolicy
    from llm_cost.analyses.saturation_runs import Formats, SaturationRun
    from llm_cost.analyses.serving_runs import ServingBand
    from llm_cost.analyses.train_rates import TrainRates
    from llm_cost.core.choices import Fp8Recipe, Framework
    from llm_cost.core.notes import Note
    from llm_cost.model.layout import Layout
    from llm_cost.perf.calibrated import CalibratedModel
    from llm_cost.perf.profile import Profile
    from llm_cost.perf.timemodel import EfficiencyEstimate
    from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = [
    "weights_dtype_of",
    "weight_bits",
    "unread_quantization_notes",
    "compute_dtype",
    "kv_dtype_of",
    "memory_policy",
    "engine_of",
    "DEFAULT_ENGINE",
    "profile_given",
    "time_model_of",
    "profile_of",
    "saturation_formats",
    "serving_band_of",
    "training_time_model",
    "training_framework_of",
    "fp8_recipe_of",
    "layout_of",
    "network_gb_s_of",
    "mfu_of",
    "mbu_of",
    "global_batch_of",
    "training_reserve_bytes",
    "GROUPED_DTYPES",
    "STEP_DTYPES",
]

#: Dtypes a model's step computes in: FP64 (HPC) and TF32 (FP32 training on tensor cores) are no
#: inference engine's compute dtype, so a step at their peak is refused rather than planned.
STEP_DTYPES = (Dtype.BF16, Dtype.FP16, Dtype.FP8, Dtype.INT8, Dtype.INT4, Dtype.FP4, Dtype.FP32)
#: The engine a prediction assumes when none is given: vLLM, the most deployed open engine.
DEFAULT_ENGINE = Engine.VLLM
#: Weight dtypes stored with a scale and zero per group (weight-only quantisation).
GROUPED_DTYPES = (WeightFormat.INT4, WeightFormat.INT8)


def weights_dtype_of(value: object, name: str = "weights_dtype") -> Optional[WeightFormat]:
    """A format of the weights (a storage dtype or a block-scaled format: fp8_block, mxfp4, nvfp4),
    or None (the checkpoint's)."""
    return checks.optional(value, checks.choice, WeightFormat, name)


def unread_quantization_notes(spec: ModelSpec, weights_dtype: object, bits_per_weight: object) -> list[Note]:
    """The note ``params`` prints (``params.quantization_unread``) when the weights are weighed at
    the config's ``torch_dtype`` because its ``quantization_config`` names a method the reader does
    not model (:func:`llm_cost.model.params.unread_quantization`: bitsandbytes, a 3-bit AWQ), and no
    ``weights_dtype`` or ``bits_per_weight`` says the format; else none."""
    from llm_cost.core.notes import note
    from llm_cost.model.params import unread_quantization

    unread = unread_quantization(spec) if weights_dtype is None and bits_per_weight is None else None
    return [note("params.quantization_unread", method=unread, dtype=str(spec.torch_dtype))] if unread else []


def weight_bits(
    spec: ModelSpec,
    weights_dtype: object = None,
    bits_per_weight: object = None,
    group_size: object = None,
    source: object = None,
    quantize_embeddings: object = False,
) -> int | Fraction:
    """Bits per stored weight, scales included: ``bits_per_weight`` as given; else
    ``weights_dtype`` (int4 and int8 weight-only formats carry a bf16 scale and zero per
    ``group_size`` weights: int4 at the default group of 128 is 4.25 bits, at 32 it is 5; int8
    without a group is per channel, 8 bits: :func:`llm_cost.core.types.stored_weight_bits`); else
    a GGUF file's own types when ``source`` is one; else the checkpoint's formats: by tensor group
    when its ``quantization`` says so (:class:`llm_cost.model.formats.MixedBits`: gpt-oss's MXFP4
    experts beside BF16 attention), else its ``torch_dtype``. A block-scaled ``weights_dtype``
    carries its scales (mxfp4 4.25, nvfp4 4.5, fp8_block 8 + 1/512 bits:
    :data:`llm_cost.core.types.BLOCK_SCALES`). A weight-only ``weights_dtype`` (int4, int8:
    :data:`GROUPED_DTYPES`) quantizes the matmul weights only: the embedding, LM head, router and
    vectors stay in the checkpoint's 16-bit dtype (:func:`llm_cost.model.formats.weight_only_bits`, as
    AWQ and GPTQ checkpoints keep them) unless ``quantize_embeddings``, which stores every parameter
    in it; so do the block-scaled formats, each tensor's scales on its own shape
    (:func:`llm_cost.model.formats.block_scaled_checkpoint_bits`, as DeepSeek-V3's FP8 blocks and gpt-oss's
    MXFP4 checkpoints store them); any other format (fp8, fp4, the storage dtypes) stores every
    parameter in it (the source documents' convention for fp8). InputError naming the arguments
    that conflict or are out of range."""
    dtype = weights_dtype_of(weights_dtype)
    quantize_embeddings = False if quantize_embeddings is None else quantize_embeddings
    if not isinstance(quantize_embeddings, bool):
        raise InputError(
            f"quantize_embeddings: {quantize_embeddings!r} must be True or False", fields=("quantize_embeddings",)
        )
    if quantize_embeddings and dtype is None:
        raise InputError(
            "quantize_embeddings applies to a weights_dtype (the format the embedding and LM head are stored in)",
            fields=("quantize_embeddings", "weights_dtype"),
        )
    if quantize_embeddings and dtype is not None and dtype not in (*GROUPED_DTYPES, *BLOCK_SCALES):
        raise InputError(
            f"quantize_embeddings: weights_dtype {dtype.value} already stores every parameter, the embedding and "
            f"LM head included; it applies to {', '.join(d.value for d in (*GROUPED_DTYPES, *BLOCK_SCALES))}",
            fields=("quantize_embeddings", "weights_dtype"),
        )
    if bits_per_weight is not None and dtype is not None:
        raise InputError("give bits_per_weight or weights_dtype, not both", fields=("bits_per_weight", "weights_dtype"))
    if group_size is not None and dtype not in GROUPED_DTYPES:
        raise InputError(
            "group_size applies to weights_dtype int4 or int8 (weight-only quantisation)",
            fields=("group_size", "weights_dtype"),
        )
    group = checks.optional(group_size, checks.count, "group_size", 1, 2**20)
    if bits_per_weight is not None:
        bits = checks.number(bits_per_weight, "bits_per_weight", maximum=64)
        if bits < 1:
            raise InputError(f"bits_per_weight: {bits:g} is below 1 bit per weight", fields=("bits_per_weight",))
        return Fraction(bits).limit_denominator(10**6) if bits != int(bits) else int(bits)
    if dtype is None and isinstance(source, (str, Path)) and str(source).strip().lower().endswith(".gguf"):
        from llm_cost.analyses.checkpoint import gguf_weight_bits

        return gguf_weight_bits(spec, Path(str(source).strip()))
    if dtype is None and spec.quantization is not None:
        from llm_cost.model.formats import checkpoint_bits

        return checkpoint_bits(spec)
    exact = stored_weight_bits((dtype or StorageDtype(spec.torch_dtype)).value, group)
    kept = Dtype(spec.torch_dtype) if spec.torch_dtype in (Dtype.BF16, Dtype.FP16) else Dtype.BF16
    if dtype in GROUPED_DTYPES and (group is not None or dtype == WeightFormat.INT4):
        from llm_cost.model.formats import check_group_divides

        check_group_divides(spec, dtype, DEFAULT_INT4_GROUP if group is None else group, kept, group is None)
    if dtype in GROUPED_DTYPES and not quantize_embeddings and exact < DTYPE_BITS[kept]:
        from llm_cost.model.formats import weight_only_bits

        return weight_only_bits(spec, dtype, exact, kept)
    if dtype in BLOCK_SCALES and not quantize_embeddings:
        from llm_cost.model.formats import block_scaled_checkpoint_bits

        return block_scaled_checkpoint_bits(spec, dtype, kept)
    return int(exact) if exact.denominator == 1 else exact


def compute_dtype(
    spec: ModelSpec,
    gpu: HardwareSpec,
    dtype: object = None,
    weights_dtype: object = None,
    allowed: tuple[Dtype, ...] = STEP_DTYPES,
) -> Dtype:
    """The dtype a step computes in: ``dtype`` if given (InputError if ``gpu`` has no peak for
    it, or it is not one of ``allowed``: an inference step's :data:`STEP_DTYPES` by default, a
    training plan passes its own); else, by the format of the quantized weights (the
    checkpoint's ``quantization`` or ``torch_dtype``, or ``weights_dtype``): FP8 for FP8 weights
    (per tensor or in blocks) on a GPU with FP8 tensor cores (DeepSeek-V3 serves this way); FP4 for
    NVFP4 or FP4 weights on a GPU with FP4 tensor cores (Blackwell: NVFP4 checkpoints quantize
    activations too, and TensorRT-LLM and vLLM run them W4A4); else BF16: weight-only formats
    (int8, int4, MXFP4 as vLLM's Marlin and Triton MoE kernels run gpt-oss on Hopper) and 16/32-bit
    checkpoints are upcast to BF16, as vLLM's weight-only kernels and its default ``dtype=auto`` do.
    InputError naming the GPU's ``dense_tflops`` when it lists no peak for the default."""
    if dtype is not None:
        chosen = checks.choice(dtype, Dtype, "dtype")
        if chosen not in allowed:
            what = "an inference engine's" if allowed == STEP_DTYPES else "a training plan's"
            raise InputError(
                f"dtype: {chosen.value} is not {what} compute format; give one of "
                f"{', '.join(d.value for d in allowed)}",
                fields=("dtype",),
            )
        if chosen.value not in gpu.dense_tflops:
            raise InputError(
                f"dtype: {gpu.name} ({gpu.display_name}) has no {chosen.value} tensor-core peak; its datasheet "
                f"lists: {', '.join(gpu.dense_tflops)}",
                fields=("dtype",),
            )
        return chosen
    chosen = _default_compute(_stored_format(spec, weights_dtype), gpu)
    if chosen.value not in gpu.dense_tflops:
        raise InputError(
            f"gpu: {gpu.name}'s dense_tflops has no {chosen.value} peak, the dtype {spec.name}'s weights run at; "
            f"give dtype, one of {', '.join(gpu.dense_tflops)}",
            fields=("dtype",),
        )
    return chosen


def _stored_format(spec: ModelSpec, weights_dtype: Any) -> WeightFormat:
    """The format of the quantized weights: ``weights_dtype``, else the checkpoint's."""
    given = weights_dtype_of(weights_dtype)
    if given is not None:
        return given
    q = spec.quantization
    return WeightFormat(q.weights_format if q is not None else spec.torch_dtype)


def activation_dtype(spec: ModelSpec, weights_dtype: object = None) -> Dtype:
    """The dtype a step's activations take when no GPU says its compute dtype (:func:`compute_dtype`'s
    rule on a GPU with every peak): FP8 for FP8 weights, FP4 for NVFP4 or FP4 weights, else BF16
    (weight-only formats, MXFP4 and integers, and 16/32-bit checkpoints)."""
    fmt = _stored_format(spec, weights_dtype)
    if fmt.element is Dtype.FP8:
        return Dtype.FP8
    return Dtype.FP4 if fmt in (WeightFormat.NVFP4, WeightFormat.FP4) else Dtype.BF16


def _default_compute(fmt: WeightFormat, gpu: HardwareSpec) -> Dtype:
    """The compute dtype engines pick for weights in ``fmt`` on ``gpu`` (see :func:`compute_dtype`)."""
    if fmt.element is Dtype.FP8 and "fp8" in gpu.dense_tflops:
        return Dtype.FP8
    if fmt in (WeightFormat.NVFP4, WeightFormat.FP4) and "fp4" in gpu.dense_tflops:
        return Dtype.FP4
    return Dtype.BF16


def kv_dtype_of(value: object = None, name: str = "kv_dtype") -> StorageDtype:
    """The KV-cache element dtype: ``value``, else BF16."""
    return StorageDtype.BF16 if value is None else checks.choice(value, StorageDtype, name)


def memory_policy(
    memory: object = "physical", gpu_memory_utilization: object = None, reserve_bytes: object = None
) -> MemoryPolicy:
    """The memory accounting: a serving engine's (vLLM's defaults: physical GiB, 90%, a 2 GiB
    reserve) or, with ``memory="datasheet"``, the source documents' (the datasheet's GB as 10^9 B,
    all of it), either with its share or reserve replaced when given
    (:mod:`llm_cost.analyses.capacity`)."""
    from dataclasses import replace

    from llm_cost.analyses.capacity import DEPLOYMENT, DOCUMENTS
    from llm_cost.core.choices import MemoryConvention

    convention = checks.choice(memory, MemoryConvention, "memory")
    base = DOCUMENTS if convention is MemoryConvention.DATASHEET else DEPLOYMENT
    share = checks.optional(gpu_memory_utilization, checks.fraction, "gpu_memory_utilization")
    reserve = checks.optional(reserve_bytes, checks.count, "reserve_bytes", 0)
    return replace(
        base,
        utilization=base.utilization if share is None else share,
        reserve_bytes=base.reserve_bytes if reserve is None else reserve,
    )


def check_reserve(gpu: HardwareSpec, policy: MemoryPolicy, given: set[str], sized: bool = False) -> None:
    """InputError when the runtime reserve alone takes every usable byte of one GPU: the reserve is
    per GPU, so no count of GPUs or bits per weight makes room (an attacker's ``--reserve-gb 1000``
    was told to raise --max-gpus by ``fit`` and to add GPUs by ``serve``). It names the first of the
    settings that were ``given`` (``reserve_bytes``, ``gpu_memory_utilization``, ``memory_gb``), else
    the GPU's memory (``memory_gb`` where the caller takes one: ``sized``)."""
    from llm_cost.analyses.capacity import usable_bytes

    usable = usable_bytes(gpu, policy)
    if policy.reserve_bytes < usable:
        return
    gpu_field = "memory_gb" if sized else "gpu"
    named: list[str] = [n for n in ("reserve_bytes", "gpu_memory_utilization", "memory_gb") if n in given] or [
        gpu_field
    ]
    reserve = f"{'the default runtime reserve of ' if 'reserve_bytes' not in given else ''}{policy.reserve_bytes / 1e9:,.4g} GB"
    raise InputError(
        f"{named[0]}: {reserve} per GPU takes all of the {usable / 1e9:,.4g} GB one {gpu.name} may use (at "
        f"gpu_memory_utilization {float(policy.utilization):g}), whatever the GPUs or bits; give a smaller "
        f"reserve_bytes, a larger gpu_memory_utilization or a GPU with more memory{' (memory_gb)' if sized else ''}",
        fields=tuple(
            dict.fromkeys([*named, "reserve_bytes", "gpu_memory_utilization", *(["memory_gb"] if sized else [])])
        ),
    )


def engine_of(value: object = None) -> tuple[Engine, bool]:
    """(the engine a prediction is for, whether it was given): ``value`` (an :class:`Engine` or its
    value: vllm, sglang, trtllm, pytorch-eager, torch-compile, llamacpp), else :data:`DEFAULT_ENGINE`.
    InputError naming ``engine`` and the valid values otherwise."""
    if value is None:
        return DEFAULT_ENGINE, False
    return checks.choice(value, Engine, "engine"), True


def profile_given(profile: object = None) -> Optional[Profile]:
    """A profile the user gave (a name ``<family>-<engine>``, a YAML path or a Profile), or None;
    InputError naming ``profile`` for anything else."""
    from llm_cost.perf.choose import load_profile
    from llm_cost.perf.profile import Profile

    if profile is None or isinstance(profile, Profile):
        return profile
    if not isinstance(profile, str) or not profile.strip():
        raise InputError(f"profile: {profile!r} is not a profile name, a YAML path or a Profile", fields=("profile",))
    return load_profile(profile)


def max_model_len_of(spec: ModelSpec, max_model_len: object = None) -> int:
    """The longest request (prompt + output) an engine admits: ``max_model_len`` (a count, 2 to
    the model's context, :func:`engine_context`) if given, else the model's
    ``max_position_embeddings``, as vLLM defaults it. InputError naming ``max_model_len`` for a
    value out of range: past the context vLLM refuses to start (``_get_and_verify_max_len``) unless
    VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, and the model was not trained on those positions, so a run
    simulated there would serve requests no launched engine does."""
    from llm_cost.core.limits import MAX_MODEL_LEN

    given = checks.optional(max_model_len, checks.count, "max_model_len", 2, MAX_MODEL_LEN)
    context = engine_context(spec)
    if given is not None and given > context:
        raise InputError(
            f"max_model_len: {given:,} is past {spec.name}'s context of {context:,} tokens "
            "(max_position_embeddings, times a linear, dynamic or YaRN rope_scaling factor): vLLM refuses to start "
            f"with it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, on positions the model never saw; give at most {context:,}",
            fields=("max_model_len",),
        )
    return given or spec.max_position_embeddings


def engine_context(spec: ModelSpec) -> int:
    """The longest ``max_model_len`` vLLM starts with for ``spec`` without
    VLLM_ALLOW_LONG_MAX_MODEL_LEN: its ``max_position_embeddings``, times the ``rope_scaling``
    factor of a linear, dynamic or YaRN scaling (YaRN's from ``original_max_position_embeddings``
    when given; llama3, longrope and mrope positions are already the context): vLLM's
    ``_get_and_verify_max_len`` (vllm/config, the derived maximum)."""
    context, rope = spec.max_position_embeddings, spec.rope_scaling
    if rope is None or rope.rope_type not in ("linear", "dynamic", "yarn") or not rope.factor:
        return context
    if rope.rope_type == "yarn" and rope.original_max_position_embeddings:
        context = rope.original_max_position_embeddings
    return int(context * rope.factor)


def check_engine_runs_on(engine: Engine | ServingEngine, gpu: HardwareSpec, field: str = "engine") -> None:
    """InputError naming ``field`` (the argument that chose ``engine``) and ``gpu`` for an engine
    the GPU's vendor cannot run: TensorRT-LLM builds CUDA engines for NVIDIA GPUs only (NVIDIA's
    TensorRT-LLM documentation, 'Supported hardware'); an attacker had it planned, simulated and
    emitted on an MI300X."""
    if engine.value == Engine.TRTLLM.value and gpu.vendor.strip().upper() != "NVIDIA":
        raise InputError(
            f"{field}: trtllm (TensorRT-LLM) runs on NVIDIA GPUs only, and gpu {gpu.name} is {gpu.vendor.strip()}'s; "
            f"give {field} vllm or sglang",
            fields=(field, "gpu"),
        )


def time_model_of(
    gpu: HardwareSpec, engine: object = None, profile: object = None, network_gb_s: object = None
) -> CalibratedModel | EfficiencyEstimate:
    """The time model of a prediction on ``gpu`` under ``engine`` (:func:`engine_of`: default vLLM)
    with the user's ``profile`` if any: THE rule, :func:`llm_cost.perf.choose.time_model_for`, which
    every command, the simulator and the planners reach through this function."""
    from llm_cost.perf.choose import time_model_for

    chosen, _ = engine_of(engine)
    check_engine_runs_on(chosen, gpu)
    model: CalibratedModel | EfficiencyEstimate = time_model_for(
        gpu, chosen, profile_given(profile), network_gb_s_of(network_gb_s)
    )
    return model


def saturation_formats(run: SaturationRun) -> Formats:
    """A published serving run's (:class:`llm_cost.analyses.saturation_runs.SaturationRun`) weight
    bits, KV bits, compute dtype and time model, resolved as ``serve`` resolves them (a checkpoint's
    or MXFP4 run's weights are the checkpoint's), the time model's parameters those of the shipped
    fit's fold without the run's source when the fit has rows of it (:func:`_out_of_source`)."""
    from llm_cost.analyses.saturation_runs import Formats
    from llm_cost.specs.load import load_gpu, load_model

    spec, gpu = load_model(run.model), load_gpu(run.gpu)
    weights = None if run.weights_dtype in ("checkpoint", "mxfp4") else run.weights_dtype
    return Formats(
        weight_bits(spec, weights),
        kv_dtype_of(run.kv_dtype).bits,
        compute_dtype(spec, gpu, None, weights),
        time_model_of(gpu, run.engine, _out_of_source(profile_of(gpu, None, run.engine), gpu, run.source)),
    )


def _out_of_source(profile: Optional[Profile], gpu: HardwareSpec, source: str) -> Optional[Profile]:
    """``profile`` with the parameters of the shipped fit's fold without ``source`` (the fit's
    leave-one-source-out refit, ``llm_cost/data/timemodel-fit.json``), or as it is when the fit
    has no row of that source (or no profile applies)."""
    import dataclasses

    from llm_cost.perf.eras import current_block
    from llm_cost.perf.profile import fit_data, join

    fold = fit_data()["folds"].get(source)
    if profile is None or fold is None:
        return profile
    used = profile.transferred_from.split("-", 1)[1] if profile.transferred_from else None
    used = used or current_block(profile.engine, gpu.vendor).value
    family, engine = fold["families"].get(profile.source_family), fold["engines"].get(used)
    if family is None or engine is None:
        return profile
    note = f"{profile.note}; parameters fitted without {source}"
    return dataclasses.replace(profile, parameters=join(family, engine), note=note)


def given_profile_of(gpu: HardwareSpec, profile: object = None, engine: object = None) -> Optional[Profile]:
    """:func:`profile_of` for a command whose ``engine`` is None unless the user gave one (roofline,
    spec, fit): InputError naming both when the given engine is not the given profile's (the
    profile decides the time model, so the engine would be dropped without a word)."""
    named = profile_given(profile)
    chosen, given = engine_of(engine)
    if given:
        _same_engine(named, chosen)
    return profile_of(gpu, named, engine)


def _same_engine(named: Optional[Profile], chosen: Engine) -> None:
    """InputError naming ``engine`` and ``profile`` when the profile the user gave was fitted under
    another engine than the one given (its step times are that engine's kernels)."""
    if named is not None and named.engine is not chosen:
        raise InputError(
            f"engine: {chosen.value} contradicts profile {named.name}, fitted under {named.engine.value}; give one "
            f"of them, or a profile fitted under {chosen.value}",
            fields=("engine", "profile"),
        )


def serving_engine_of(engine: object = None, profile: object = None) -> Engine:
    """The engine a serving plan or simulation runs (its scheduler, its time model, its launch
    command): ``engine`` if given (one of :data:`~llm_cost.core.types.SERVING_ENGINES`), else the
    given profile's engine when it is one of them, else :data:`DEFAULT_ENGINE`. InputError naming
    ``engine`` for another value, and naming both when the given engine is not the given profile's
    (the profile's step times are its engine's kernels: ``serve --engine sglang --profile
    hopper-vllm`` would schedule as SGLang and time as vLLM)."""
    from llm_cost.core.types import SERVING_ENGINES

    named = profile_given(profile)
    if engine is None:
        return named.engine if named is not None and named.engine in SERVING_ENGINES else DEFAULT_ENGINE
    chosen = Engine(checks.one_of(engine, "engine", SERVING_ENGINES))
    _same_engine(named, chosen)
    return chosen


def profile_of(gpu: HardwareSpec, profile: object = None, engine: object = None) -> Optional[Profile]:
    """The profile of the time model :func:`time_model_of` chooses for ``gpu`` under ``engine``
    (None: no fit applies, the MFU/MBU estimate predicts)."""
    model = time_model_of(gpu, engine, profile)
    return getattr(model, "profile", None)


def serving_band_of(
    gpu: HardwareSpec, profile: Optional[Profile], engine: object = None, closed_loop: bool = False
) -> Optional[ServingBand]:
    """The error band of a simulated serving run drawn from the measured serving runs
    (:func:`llm_cost.analyses.serving_runs.vllm_serving_band`; ``closed_loop``, a plan or run
    without a rate: the runs at saturation), or None for the profile's band:
    the runs check only vLLM's predictions, so only when no profile was given and the engine is
    vLLM (given or the default); another engine (SGLang, TensorRT-LLM) or an explicit profile keeps
    the step-time band (:func:`llm_cost.perf.calibrated.band_for`)."""
    chosen, _ = engine_of(engine)
    if profile is not None or chosen is not Engine.VLLM:
        return None
    from llm_cost.analyses.serving_runs import vllm_serving_band

    return vllm_serving_band(gpu, closed_loop=closed_loop)


def training_time_model(
    gpu: HardwareSpec, profile: object = None, recipe: object = None, framework: object = None
) -> TrainRates:
    """The rates a training step is timed with (:func:`llm_cost.analyses.train_rates.training_rates`):
    the profile of the one rule for ``gpu`` under the training engine (PyTorch's eager kernels, as
    Megatron-Core and FSDP2 run them: :func:`time_model_of`), or ``profile`` if given, with its
    family's fitted training factors for ``framework`` and the FP8 ``recipe``'s casts. Every
    training prediction picks its time model here."""
    from llm_cost.analyses.train_rates import training_rates
    from llm_cost.core.choices import Fp8Recipe, Framework

    return training_rates(
        gpu,
        Fp8Recipe.DELAYED if recipe is None else cast(Fp8Recipe, recipe),
        profile_of(gpu, profile, Engine.PYTORCH_EAGER),
        Framework.MEGATRON if framework is None else cast(Framework, framework),
    )


def layout_of(value: object, name: str = "layout") -> Optional[Layout]:
    """A Layout, or None (one GPU)."""
    if value is None:
        return None
    from llm_cost.model.layout import Layout

    if isinstance(value, Layout):
        return value
    raise InputError(f"{name}: {value!r} is not a Layout, e.g. llm_cost.Layout(tp=2)", fields=(name,))


def network_gb_s_of(value: object = None) -> float:
    """Network bandwidth between nodes per GPU, GB/s per direction: ``value``, else
    :data:`llm_cost.perf.timemodel.DEFAULT_NETWORK_GB_S` (400 Gb/s InfiniBand NDR per GPU)."""
    from llm_cost.perf.timemodel import DEFAULT_NETWORK_GB_S

    # at least 0.1 GB/s: 1 Gb/s Ethernet is 0.125 GB/s, and anything slower is a typing mistake
    return (
        DEFAULT_NETWORK_GB_S
        if value is None
        else checks.number(
            value, "network_gb_s", minimum=NETWORK_GB_S_RANGE[0], maximum=NETWORK_GB_S_RANGE[1], open_min=False
        )
    )


def mfu_of(value: object = None) -> float:
    """The MFU of an estimate: ``value``, else :data:`llm_cost.perf.timemodel.DEFAULT_MFU` (60%)."""
    from llm_cost.perf.timemodel import DEFAULT_MFU

    return DEFAULT_MFU if value is None else checks.efficiency(value, "mfu")


def mbu_of(value: object = None) -> float:
    """The MBU of an estimate: ``value``, else :data:`llm_cost.perf.timemodel.DEFAULT_MBU` (80%)."""
    from llm_cost.perf.timemodel import DEFAULT_MBU

    return DEFAULT_MBU if value is None else checks.efficiency(value, "mbu")


def training_framework_of(value: object = None, zero: Optional[int] = None) -> tuple[Framework, str]:
    """(framework, where it came from) of a training plan: ``value``; else FSDP2 when ``zero`` is 2
    or 3 (the stages FSDP runs); else Megatron-Core, the framework of most published runs the
    training factors are fitted on (NeMo, Megatron-LM). InputError for another value."""
    from llm_cost.core.choices import Framework

    if value is not None:
        return checks.choice(value, Framework, "framework"), "given"
    if zero in (2, 3):
        return Framework.FSDP2, f"zero {zero} is FSDP's"
    return Framework.MEGATRON, "default: Megatron-Core, the framework of most published runs the rates are fitted on"


def fp8_recipe_of(value: object, gpu: HardwareSpec, dtype: Dtype) -> tuple[Fp8Recipe, str]:
    """(FP8 recipe, where it came from): ``value``; else MXFP8 on a GPU with FP4 tensor cores
    (Blackwell: MX formats native), else delayed scaling (Transformer Engine's default recipe, the
    NeMo runs'). InputError for a recipe the GPU lacks (MXFP8 before Blackwell), or one given for
    training that is not FP8 (it would change nothing: an option left without effect, as MoE
    options on a dense model are refused)."""
    from llm_cost.core.choices import Fp8Recipe

    blackwell = "fp4" in gpu.dense_tflops
    if value is not None:
        recipe = checks.choice(value, Fp8Recipe, "fp8_recipe")
        if dtype != Dtype.FP8:
            raise InputError(
                f"fp8_recipe: {recipe} scales FP8 training, and this trains in {dtype}; give dtype fp8, or leave out "
                "fp8_recipe",
                fields=("fp8_recipe", "dtype"),
            )
        if recipe == Fp8Recipe.MXFP8 and not blackwell:
            raise InputError(
                f"fp8_recipe: mxfp8 needs MX tensor cores (Blackwell); {gpu.name} has none: give delayed, current or block",
                fields=("fp8_recipe",),
            )
        return recipe, "given"
    if blackwell:
        return Fp8Recipe.MXFP8, "default on Blackwell: MXFP8, native on its tensor cores"
    return Fp8Recipe.DELAYED, "default: delayed scaling, Transformer Engine's default recipe"


def global_batch_of(value: object = None) -> int:
    """Tokens per training step of the planner: ``value``, else 4M = 2^22 (Llama 2's batch; Llama 3
    405B used 16M, DeepSeek-V3 up to 15,360 x 4K)."""
    return 2**22 if value is None else checks.count(value, "global_batch", 1, 10**12)


def training_reserve_bytes() -> int:
    """Memory per GPU a training process keeps from its tensors
    (:data:`llm_cost.analyses.train_memory.DEFAULT_RESERVE_BYTES`, 2 GiB)."""
    from llm_cost.analyses.train_memory import DEFAULT_RESERVE_BYTES

    return DEFAULT_RESERVE_BYTES
