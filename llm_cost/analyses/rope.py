"""RoPE wavelengths and how context extensions stretch them (seed 003 §03, seed 001 "长上下文扩展").

RoPE (RoFormer, Su et al. 2021, arXiv:2104.09864) splits the d rotated dims of a query/key head
into d/2 pairs; pair i turns by theta_i = base^(-2i/d) radians per token, i = 0 .. d/2 - 1, so
its wavelength (tokens per full turn) is

    lambda_i = 2 pi / theta_i = 2 pi * base^(2i/d)            (seed 003 §03)

Base 10000, d_head 128: 6.28 .. 54,410 tokens (the seed's "5.4万"); base 500000: longest
2,559,196 ("256万"). A pair "does not complete a turn within L tokens" when lambda_i > L; with
base 10000, d 128 and L = 8,192 these are the 14 pairs i = 50 .. 63 (seed 003 §03). Past the
train length such pairs reach angles (phases) never seen in training.

Extensions from a train length L_train to a target length L_target, alpha = L_target / L_train
(seed 001, "长上下文扩展：从 4K 到 128K+"):

* PI, position interpolation (Chen et al. 2023, arXiv:2306.15595): m' = m / alpha, so every
  effective wavelength is alpha * lambda_i.
* NTK-aware (bloc97, r/LocalLLaMA 2023): base' = base * alpha^(d/(d-2)); the highest frequency is
  kept, the lowest (i = d/2 - 1) is divided by exactly alpha.
* YaRN, NTK-by-parts (Peng et al. 2023, arXiv:2309.00071), in seed 001's form:
  low = L_train / beta_fast, high = L_train / beta_slow,
  ramp_i = clamp((lambda_i - low) / (high - low), 0, 1),
  theta'_i = theta_i (1 - ramp_i) + (theta_i / alpha) ramp_i; attention scale
  mscale = 0.1 ln(alpha) + 1 (the paper's sqrt(1/t)); logits are multiplied by mscale^2.
* Dynamic NTK (emozilla 2023; seed 001): alpha_dyn = max(1, seq_len / L_train), then the
  NTK-aware base; evaluated here at seq_len = L_target (where it equals NTK-aware).
* Llama 3 ABF: a larger base (500000 instead of 10000), no rescaling; Llama 3.1 "llama3"
  rope_scaling (Meta llama-models ``apply_scaling``; transformers
  ``modeling_rope_utils._compute_llama3_parameters``): with orig = original_max_position_embeddings,
  wavelengths below orig / high_freq_factor are kept, above orig / low_freq_factor the frequency
  is divided by ``factor``, in between smooth = (orig / lambda - low_freq_factor) /
  (high_freq_factor - low_freq_factor) and theta' = (1 - smooth) theta / factor + smooth theta.

Units: lengths and wavelengths in tokens, frequencies in radians per token. Pure functions, no
printing; the results are frozen dataclasses (``--json`` dumps their fields).
"""

from __future__ import annotations

import math
from dataclasses import field

from llm_cost.core.errors import InputError
from llm_cost.core.labels import RopeExtension
from llm_cost.core.limits import MAX_ROPE_DIMS
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.specs.schema import MLAAttention, ModelSpec

__all__ = [
    "Llama3Scaling",
    "RopePair",
    "RopeMethod",
    "RopeResult",
    "DEFAULT_TRAIN_LENGTH",
    "wavelengths",
    "frequencies",
    "ntk_aware_base",
    "yarn_mscale",
    "pi_wavelengths",
    "ntk_wavelengths",
    "yarn_wavelengths",
    "llama3_wavelengths",
    "rope_analysis",
    "rope_for_model",
    "rotated_dims",
]

#: Train length used when neither a model nor ``--train-length`` gives one (seed 003 §03: 8K).
DEFAULT_TRAIN_LENGTH = 8192
_TWO_PI = 2 * math.pi
_REL = 1e-9  # relative tolerance for "the same angle" (PI maps the target exactly onto the train range)


@record
class Llama3Scaling:
    """Llama 3.1 ``rope_scaling`` of type llama3 (config.json field names; Meta's values as defaults)."""

    factor: float = 8.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position_embeddings: int = 8192


@record
class RopePair:
    """One rotated pair i (dims 2i, 2i+1 of the rotated part of a head). Wavelengths in tokens."""

    i: int
    frequency: float  # theta_i = base^(-2i/d), radians per token
    wavelength: float  # lambda_i = 2 pi base^(2i/d), tokens per turn
    turns_in_train: float  # L_train / lambda_i
    pi: float  # effective wavelength under position interpolation
    ntk_aware: float
    yarn: float
    dynamic_ntk: float  # at the target length
    llama3: float | None  # None when no llama3 scaling was given


@record
class RopeMethod:
    """One extension method at the target length."""

    name: RopeExtension
    label: str  # human-readable
    setting: str  # the effective base or scale, as text
    effective_base: float | None  # NTK-aware / dynamic NTK base'; the base itself for none
    position_scale: float | None  # PI: positions multiplied by this (1/alpha)
    shortest_wavelength: float  # tokens
    longest_wavelength: float  # tokens
    incomplete_at_target: int  # pairs with effective wavelength > L_target
    unseen_phase_pairs: int  # pairs that reach, at L_target, angles never reached within L_train
    mscale: float | None  # YaRN: 0.1 ln(alpha) + 1 (the paper's sqrt(1/t))
    logit_scale: float | None  # YaRN: attention logits multiplied by mscale^2


@record
class RopeResult(Result):
    """RoPE wavelengths of one base and rotated width, and their extensions from train to target length."""

    model: str | None
    display_name: str | None
    base: float
    dims: int  # rotated dims d (pairs = d / 2)
    train_length: int  # tokens
    target_length: int  # tokens
    alpha: float  # target / train
    beta_fast: float
    beta_slow: float
    llama3: Llama3Scaling | None
    incomplete_in_train: int  # pairs with lambda_i > L_train (seed 003 §03: 14)
    first_incomplete_pair: int | None  # smallest i with lambda_i > L_train
    pairs: list[RopePair]
    methods: list[RopeMethod]
    conventions: list[Note] = field(default_factory=list)


# --- validation -------------------------------------------------------------------------------


def _check_base(base: float) -> float:
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not math.isfinite(base) or base <= 1:
        raise InputError(
            f"base: {base!r} must be a finite number greater than 1 (e.g. 10000 or 500000)", fields=("base",)
        )
    return float(base)


def _check_dims(dims: int) -> int:
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 2 or dims % 2 or dims > MAX_ROPE_DIMS:
        raise InputError(
            f"dims: {dims!r} must be an even whole number from 2 to {MAX_ROPE_DIMS:,} (rotated dimensions per head, "
            "e.g. 128)",
            fields=("dims",),
        )
    return dims


def _check_lengths(train_length: int, target_length: int) -> None:
    for value, name in ((train_length, "train_length"), (target_length, "target_length")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{name}: {value!r} must be a whole number of tokens, at least 1", fields=(name,))
    if target_length < train_length:
        raise InputError(
            f"target_length: {target_length:,} must be at least train_length ({train_length:,} tokens)",
            fields=("target_length", "train_length"),
        )


def _check_betas(beta_fast: float, beta_slow: float) -> None:
    if not (math.isfinite(beta_fast) and math.isfinite(beta_slow) and beta_fast >= beta_slow > 0):
        raise InputError(f"YaRN beta_fast ({beta_fast!r}) must be at least beta_slow ({beta_slow!r}) > 0")


def _check_llama3(s: Llama3Scaling) -> None:
    if not (
        s.factor >= 1
        and s.low_freq_factor > 0
        and s.high_freq_factor >= s.low_freq_factor
        and s.original_max_position_embeddings >= 1
    ):
        raise InputError(
            f"llama3 rope_scaling: need factor >= 1, high_freq_factor >= low_freq_factor > 0 and "
            f"original_max_position_embeddings >= 1; got {s}"
        )


# --- per-pair formulas --------------------------------------------------------------------------


def frequencies(base: float, dims: int) -> list[float]:
    """theta_i = base^(-2i/d) in radians per token, i = 0 .. d/2 - 1 (d/2 values)."""
    base, dims = _check_base(base), _check_dims(dims)
    return [base ** (-2 * i / dims) for i in range(dims // 2)]


def wavelengths(base: float, dims: int) -> list[float]:
    """lambda_i = 2 pi base^(2i/d) in tokens, i = 0 .. d/2 - 1 (d/2 values, increasing; seed 003 §03)."""
    base, dims = _check_base(base), _check_dims(dims)
    return [_TWO_PI * base ** (2 * i / dims) for i in range(dims // 2)]


def ntk_aware_base(base: float, dims: int, alpha: float) -> float:
    """NTK-aware base' = base * alpha^(d/(d-2)) (bloc97; seed 001). d = 2 has no such base (d - 2 = 0):
    with a single pair the formula degenerates, and InputError is raised."""
    if dims == 2:
        raise InputError(
            "dims: NTK-aware scaling needs at least 4 rotated dimensions (d/(d-2) with d = 2)", fields=("dims",)
        )
    return base * alpha ** (dims / (dims - 2))


def pi_wavelengths(base: float, dims: int, alpha: float) -> list[float]:
    """Position interpolation (m' = m / alpha): every wavelength times alpha (Chen et al. 2023)."""
    return [alpha * w for w in wavelengths(base, dims)]


def ntk_wavelengths(base: float, dims: int, alpha: float) -> list[float]:
    """Wavelengths with the NTK-aware base' (d/2 values, tokens). With d = 2 the only pair has
    frequency 1 for every base, so its wavelength 2 pi is kept."""
    if alpha == 1 or dims == 2:
        return wavelengths(base, dims)
    return wavelengths(ntk_aware_base(base, dims, alpha), dims)


def _yarn_ramp(wavelength: float, low: float, high: float) -> float:
    if high == low:  # beta_fast = beta_slow (Kimi K2's 1 and 1): a step at the one boundary, no ramp
        return 0.0 if wavelength <= low else 1.0
    return min(1.0, max(0.0, (wavelength - low) / (high - low)))


def yarn_wavelengths(
    base: float, dims: int, train_length: int, alpha: float, beta_fast: float = 32, beta_slow: float = 1
) -> list[float]:
    """YaRN NTK-by-parts wavelengths, seed 001's form (ramp linear in the wavelength):
    low = L_train / beta_fast, high = L_train / beta_slow, ramp = clamp((lambda - low)/(high - low), 0, 1),
    theta' = theta (1 - ramp) + (theta / alpha) ramp. Pairs with lambda <= low keep their wavelength,
    pairs with lambda >= high get alpha * lambda (Peng et al. 2023)."""
    _check_betas(beta_fast, beta_slow)
    low, high = train_length / beta_fast, train_length / beta_slow
    out = []
    for theta, lam in zip(frequencies(base, dims), wavelengths(base, dims)):
        ramp = _yarn_ramp(lam, low, high)
        if ramp == 0 or alpha == 1:
            out.append(lam)
        elif ramp == 1:
            out.append(alpha * lam)
        else:
            out.append(_TWO_PI / (theta * (1 - ramp) + theta / alpha * ramp))
    return out


def yarn_mscale(alpha: float) -> float:
    """YaRN attention factor 0.1 ln(alpha) + 1 (1 for alpha <= 1): the paper's sqrt(1/t); transformers
    multiplies cos and sin by it, so attention logits grow by its square (Peng et al. 2023, eq. 22)."""
    return 0.1 * math.log(alpha) + 1 if alpha > 1 else 1.0


def llama3_wavelengths(base: float, dims: int, scaling: Llama3Scaling) -> list[float]:
    """Llama 3.1 ``llama3`` rope scaling (transformers ``_compute_llama3_parameters``):
    lambda < orig/high_freq_factor: kept; lambda > orig/low_freq_factor: theta / factor;
    in between theta' = (1 - smooth) theta / factor + smooth theta with
    smooth = (orig / lambda - low_freq_factor) / (high_freq_factor - low_freq_factor)."""
    _check_llama3(scaling)
    orig = scaling.original_max_position_embeddings
    low_freq_wavelen = orig / scaling.low_freq_factor
    high_freq_wavelen = orig / scaling.high_freq_factor
    out = []
    for theta, lam in zip(frequencies(base, dims), wavelengths(base, dims)):
        if lam < high_freq_wavelen:
            out.append(lam)
        elif lam > low_freq_wavelen:
            out.append(lam * scaling.factor)
        elif scaling.high_freq_factor == scaling.low_freq_factor:  # Llama 4's 1 and 1: no smoothing band
            out.append(lam)
        else:
            smooth = (orig / lam - scaling.low_freq_factor) / (scaling.high_freq_factor - scaling.low_freq_factor)
            out.append(_TWO_PI / ((1 - smooth) * theta / scaling.factor + smooth * theta))
    return out


# --- summaries ----------------------------------------------------------------------------------


def _unseen(original: list[float], effective: list[float], train_length: int, target_length: int) -> int:
    """Pairs that did not complete a turn within L_train and reach, at L_target, a larger angle than
    the largest seen in training: L_target * 2pi/lambda' > L_train * 2pi/lambda, i.e.
    L_target / lambda' > L_train / lambda (a pair that completed a turn has seen every angle)."""
    count = 0
    for lam, eff in zip(original, effective):
        if lam > train_length and target_length / eff > (train_length / lam) * (1 + _REL):
            count += 1
    return count


def _method(
    name: RopeExtension,
    label: str,
    setting: str,
    effective: list[float],
    original: list[float],
    train: int,
    target: int,
    effective_base: float | None = None,
    position_scale: float | None = None,
    mscale: float | None = None,
) -> RopeMethod:
    return RopeMethod(
        name=name,
        label=label,
        setting=setting,
        effective_base=effective_base,
        position_scale=position_scale,
        shortest_wavelength=min(effective),
        longest_wavelength=max(effective),
        incomplete_at_target=sum(1 for w in effective if w > target),
        unseen_phase_pairs=_unseen(original, effective, train, target),
        mscale=mscale,
        logit_scale=mscale * mscale if mscale is not None else None,
    )


def _ntk_base_or_none(base: float, dims: int, alpha: float) -> float | None:
    """base' for alpha > 1 (the base itself at alpha = 1); None for d = 2, where d/(d-2) is undefined."""
    if alpha <= 1:
        return base
    return None if dims == 2 else ntk_aware_base(base, dims, alpha)


def _fmt_base(b: float | None) -> str:
    if b is None:
        return "undefined for d = 2 (one pair, frequency 1 at any base)"
    return f"{b:,.0f}" if 1000 <= b < 1e15 else f"{b:.6g}"


def _methods(
    base: float, dims: int, T: int, S: int, curves: dict[str, list[float]], l3: list[float] | None,
    llama3: Llama3Scaling | None, beta_fast: float, beta_slow: float,
) -> list[RopeMethod]:  # fmt: skip
    """Each extension's summary at the target length ``S`` of a model trained on ``T`` tokens, from
    the pairs' wavelengths under it (``curves``: as trained, PI, NTK-aware, YaRN, dynamic NTK; ``l3``
    under Llama 3.1 scaling, given ``llama3``)."""
    alpha = S / T
    dyn_alpha = max(1.0, S / T)
    lams, pi, ntk, yarn, dyn = (curves[k] for k in ("as trained", "pi", "ntk", "yarn", "dynamic"))
    base_ntk = _ntk_base_or_none(base, dims, alpha)
    base_dyn = _ntk_base_or_none(base, dims, dyn_alpha)
    low, high = T / beta_fast, T / beta_slow
    methods = [
        _method(
            RopeExtension.NONE, "RoPE as trained", f"base {_fmt_base(base)}", lams, lams, T, S, effective_base=base
        ),
        _method(RopeExtension.PI, "PI", f"positions x 1/{alpha:.6g}", pi, lams, T, S, position_scale=1 / alpha),
        _method(
            RopeExtension.NTK_AWARE,
            "NTK-aware",
            f"base' {_fmt_base(base_ntk)}",
            ntk,
            lams,
            T,
            S,
            effective_base=base_ntk,
        ),
        _method(
            RopeExtension.YARN,
            "YaRN",
            f"ramp over λ {low:,.6g} .. {high:,.6g}",
            yarn,
            lams,
            T,
            S,
            mscale=yarn_mscale(alpha),
        ),
        _method(
            RopeExtension.DYNAMIC_NTK,
            "dynamic NTK",
            f"alpha {dyn_alpha:.6g}, base' {_fmt_base(base_dyn)}",
            dyn,
            lams,
            T,
            S,
            effective_base=base_dyn,
        ),
    ]
    if llama3 is not None and l3 is not None:
        o = llama3.original_max_position_embeddings
        methods.append(
            _method(
                RopeExtension.LLAMA3,
                "llama3 (Llama 3.1)",
                f"factor {llama3.factor:g}, ramp over λ {o / llama3.high_freq_factor:,.6g} .. "
                f"{o / llama3.low_freq_factor:,.6g}",
                l3,
                lams,
                T,
                S,
            )
        )

    return methods


def _notes(
    T: int, S: int, alpha: float, beta_fast: float, beta_slow: float, llama3: Llama3Scaling | None
) -> list[Note]:
    """The conventions of a RoPE analysis: wavelengths, unseen phases, the methods, YaRN's ramp and
    attention scale, ABF, and Llama 3.1's scaling when given."""
    conventions = [
        note("rope.wavelength"),
        note("rope.unseen_phases", train=T, target=S),
        note("rope.methods", alpha=alpha),
        note("rope.yarn_ramp", beta_fast=float(beta_fast), beta_slow=float(beta_slow)),
        note("rope.yarn_attention"),
        note("rope.abf"),
    ]
    if llama3 is not None:
        conventions.append(note("rope.llama3", factor=llama3.factor, original=llama3.original_max_position_embeddings))
    return conventions


def rope_analysis(
    base: float,
    dims: int,
    train_length: int,
    target_length: int,
    beta_fast: float = 32,
    beta_slow: float = 1,
    llama3: Llama3Scaling | None = None,
    *,
    model: str | None = None,
    display_name: str | None = None,
    notes: list[Note] | None = None,
) -> RopeResult:
    """Wavelengths of the d/2 pairs of a head with RoPE ``base`` and ``dims`` rotated dims, and their
    effective wavelengths when a model trained on ``train_length`` tokens is run at ``target_length``
    tokens under PI, NTK-aware, YaRN (``beta_fast``, ``beta_slow``), dynamic NTK and, if ``llama3``
    is given, Llama 3.1 scaling. Lengths and wavelengths in tokens.

    Raises InputError naming the argument: ``base`` > 1, ``dims`` even and >= 2, lengths >= 1 and
    ``target_length`` >= ``train_length``.
    """
    base, dims = _check_base(base), _check_dims(dims)
    _check_lengths(train_length, target_length)
    _check_betas(beta_fast, beta_slow)
    if llama3 is not None:
        _check_llama3(llama3)
    alpha = target_length / train_length

    thetas = frequencies(base, dims)
    lams = wavelengths(base, dims)
    pi = pi_wavelengths(base, dims, alpha)
    ntk = ntk_wavelengths(base, dims, alpha)
    yarn = yarn_wavelengths(base, dims, train_length, alpha, beta_fast, beta_slow)
    dyn_alpha = max(1.0, target_length / train_length)
    dyn = ntk_wavelengths(base, dims, dyn_alpha)
    l3 = llama3_wavelengths(base, dims, llama3) if llama3 is not None else None

    pairs = [
        RopePair(
            i,
            thetas[i],
            lams[i],
            train_length / lams[i],
            pi[i],
            ntk[i],
            yarn[i],
            dyn[i],
            l3[i] if l3 is not None else None,
        )
        for i in range(dims // 2)
    ]
    incomplete = [i for i, w in enumerate(lams) if w > train_length]

    T, S = train_length, target_length
    curves = {"as trained": lams, "pi": pi, "ntk": ntk, "yarn": yarn, "dynamic": dyn}
    methods = _methods(base, dims, T, S, curves, l3, llama3, beta_fast, beta_slow)
    conventions = _notes(T, S, alpha, beta_fast, beta_slow, llama3)
    conventions += list(notes or [])
    return RopeResult(
        model=model,
        display_name=display_name,
        base=base,
        dims=dims,
        train_length=T,
        target_length=S,
        alpha=alpha,
        beta_fast=float(beta_fast),
        beta_slow=float(beta_slow),
        llama3=llama3,
        incomplete_in_train=len(incomplete),
        first_incomplete_pair=incomplete[0] if incomplete else None,
        pairs=pairs,
        methods=methods,
        conventions=conventions,
    )


# --- models -------------------------------------------------------------------------------------


def rotated_dims(spec: ModelSpec) -> int:
    """Rotated dims per head: MLA qk_rope_head_dim (DeepSeek), else int(head_dim * partial_rotary_factor).
    InputError for a model without RoPE (learned position table)."""
    if spec.position_embedding != "rope":
        what = "no position encoding" if spec.position_embedding == "none" else "a position table"
        raise InputError(
            f"{spec.name}: position_embedding is {spec.position_embedding!r} ({what}), "
            "not RoPE; give a RoPE model, or base and dims",
            fields=("base", "dims"),
        )
    att = spec.attention
    if isinstance(att, MLAAttention):
        return att.qk_rope_head_dim
    return int(spec.head_dim * spec.partial_rotary_factor)


def rope_for_model(
    spec: ModelSpec,
    train_length: int | None = None,
    target_length: int | None = None,
    base: float | None = None,
    dims: int | None = None,
) -> RopeResult:
    """:func:`rope_analysis` for a model spec: base = rope_theta, dims = :func:`rotated_dims`, YaRN betas
    and llama3 scaling from ``rope_scaling``. ``base``/``dims`` override the model's values.

    Defaults: train = rope_scaling.original_max_position_embeddings, else max_position_embeddings;
    target = max_position_embeddings when it is longer than train, else 4 x train (tokens).
    """
    d_model = rotated_dims(spec)  # raises for learned positions
    if dims is None and (d_model < 2 or d_model % 2 or d_model > MAX_ROPE_DIMS):
        raise InputError(
            f"{spec.name}: the spec rotates {d_model} dimensions per head (attention.head_dim x "
            f"partial_rotary_factor, or qk_rope_head_dim); RoPE needs an even number from 2 to "
            f"{MAX_ROPE_DIMS:,}: correct the spec, or give dims",
            fields=("dims",),
        )
    rs = spec.rope_scaling
    if train_length is None:
        train_length = (
            rs.original_max_position_embeddings
            if rs and rs.original_max_position_embeddings
            else spec.max_position_embeddings
        )
    if target_length is None:
        target_length = (
            spec.max_position_embeddings if spec.max_position_embeddings > train_length else 4 * train_length
        )
    beta_fast = rs.beta_fast if rs and rs.beta_fast else 32
    beta_slow = rs.beta_slow if rs and rs.beta_slow else 1
    llama3 = None
    if rs is not None and rs.rope_type == "llama3":
        llama3 = Llama3Scaling(
            factor=rs.factor or 8.0,
            low_freq_factor=rs.low_freq_factor or 1.0,
            high_freq_factor=rs.high_freq_factor or 4.0,
            original_max_position_embeddings=rs.original_max_position_embeddings or spec.max_position_embeddings,
        )
    notes: list[Note] = []
    att = spec.attention
    if dims is not None:
        notes.append(note("rope.head_dim_override", dims=dims, model_dims=d_model))
    elif isinstance(att, MLAAttention):
        notes.append(note("rope.mla", dims=d_model, nope=att.qk_nope_head_dim))
    elif spec.partial_rotary_factor < 1:
        notes.append(note("rope.partial", factor=spec.partial_rotary_factor, head_dim=spec.head_dim, dims=d_model))
    if base is not None:
        notes.append(note("rope.base_override", base=_fmt_base(base), model_base=_fmt_base(spec.rope_theta)))
    if rs is not None:
        notes.append(note("rope.model_scaling", rope_type=rs.rope_type, factor=rs.factor))
        if rs.rope_type == "mrope":
            notes.append(note("rope.mrope"))
    assert spec.rope_theta is not None  # the schema requires it for RoPE models
    return rope_analysis(
        base if base is not None else spec.rope_theta,
        dims if dims is not None else d_model,
        train_length,
        target_length,
        beta_fast,
        beta_slow,
        llama3,
        model=spec.name,
        display_name=spec.display_name,
        notes=notes,
    )
