"""The error band of an analytic serving plan (``llm-cost serve --batch``, disaggregated alone,
``analytic``): its chosen configuration's TTFT, TPOT, tokens/s and $/M scaled by the step-time
factors of the profile's band (:func:`llm_cost.perf.calibrated.band_for`).

The simulated plan re-simulates at the band's ends, because queueing is not linear in step time
(:func:`llm_cost.analyses.simulated_serving.with_band`); this analytic form scales linearly and
says so: its queueing formulas are not re-evaluated at the band's ends."""

from __future__ import annotations

import dataclasses

from llm_cost.analyses.serving.results import ServePlan, StepBand
from llm_cost.core.choices import ServingMode
from llm_cost.core.notes import Note, note
from llm_cost.perf.calibrated import Band, band_for, fast_end_s
from llm_cost.perf.profile import Profile

__all__ = ["with_analytic_band", "decode_shape", "prefill_shape"]


def decode_shape(plan: ServePlan) -> tuple[int, int]:
    """(batch, context) of the chosen configuration's typical decode step: its ``concurrency``
    sequences per (decode) replica at the mean context of a decoding sequence, the prompt plus
    half the output (``input_tokens + output_tokens // 2``)."""
    return plan.chosen.concurrency, plan.input_tokens + plan.output_tokens // 2


def prefill_shape(plan: ServePlan) -> tuple[int, int]:
    """(batch, context) of the step a prompt is prefilled in: disaggregated, a prefill step of
    ``prefill_batch`` prompts of ``input_tokens``; aggregated, the prompt's chunks ride in the
    decode step (:func:`decode_shape`, whose context is the longer: the convention of
    :func:`llm_cost.analyses.simulated_serving.step_shape` for a mixed step)."""
    c = plan.chosen
    if c.mode == ServingMode.DISAGGREGATED and c.prefill_batch is not None:
        return c.prefill_batch, plan.input_tokens
    return decode_shape(plan)


def with_analytic_band(plan: ServePlan, profile: Profile | None, bound: tuple[float, float] | None = None) -> ServePlan:
    """``plan`` with its chosen configuration's error band, analytic scaling: TTFT x the band
    factors (:func:`~llm_cost.perf.calibrated.band_for`: the p10/p90 of held-out residuals of
    predictions in the profile's situation and the step's regime, widened outside the fitted
    shapes) of :func:`prefill_shape`, TPOT x those of :func:`decode_shape`; output tokens/s / the decode
    factors (a slower step: fewer tokens/s) and $/M output x them (the low cost with the fast
    end). The queueing formulas' nonlinearity (a slower server waits longer) is not re-evaluated:
    a stated approximation (the note ``serve.analytic_band``). ``violates_at_slow_end``: each
    target (a bound on the mean) the slow end misses. ``bound``: (TTFT, TPOT) of the same
    configuration under the Roofline bound (:class:`~llm_cost.perf.timemodel.RooflineBound`):
    the fast end is never under it (no shipped measurement beats its bound, as
    :func:`llm_cost.analyses.roofline.banded` holds a step's band), unless the prediction itself
    is. No profile, or one without held-out residuals: the plan as it is, with the note
    ``serve.no_band``."""
    disaggregated = plan.chosen.mode == ServingMode.DISAGGREGATED and plan.chosen.prefill_batch is not None
    decode = band_for(profile, *decode_shape(plan)) if profile is not None else None
    prefill = band_for(profile, *prefill_shape(plan), prefill=disaggregated) if profile is not None else None
    if profile is None or decode is None or prefill is None:
        return dataclasses.replace(plan, conventions=[*plan.conventions, note("serve.no_band", label=plan.time_model)])
    ttft_high, tpot_high = plan.ttft_s * prefill.high, plan.tpot_s * decode.high
    missed = tuple(
        f"{name} mean"
        for name, target, value in (
            ("ttft_s", plan.ttft_target_s, ttft_high),
            ("tpot_s", plan.tpot_target_s, tpot_high),
        )
        if target is not None and value > target
    )
    usd = plan.usd_per_million_output_tokens
    batch, context = decode_shape(plan)
    ttft_low, tpot_low = (
        fast_end_s(plan.ttft_s, prefill.low, bound and bound[0]),
        fast_end_s(plan.tpot_s, decode.low, bound and bound[1]),
    )
    fast = tpot_low / plan.tpot_s  # the decode factor at the fast end, held at the bound
    return dataclasses.replace(
        plan,
        ttft_low_s=ttft_low,
        ttft_high_s=ttft_high,
        tpot_low_s=tpot_low,
        tpot_high_s=tpot_high,
        output_tokens_per_s_low=plan.output_tokens_per_s / decode.high,
        output_tokens_per_s_high=plan.output_tokens_per_s / fast,
        output_tokens_per_s_per_gpu_low=plan.output_tokens_per_s_per_gpu / decode.high,
        output_tokens_per_s_per_gpu_high=plan.output_tokens_per_s_per_gpu / fast,
        usd_per_million_output_tokens_low=usd * fast if usd is not None else None,
        usd_per_million_output_tokens_high=usd * decode.high if usd is not None else None,
        violates_at_slow_end=missed,
        band=StepBand(
            decode.profile,
            decode.engine,
            decode.situation,
            decode.rows,
            decode.widen,
            min(decode.low, prefill.low),
            max(decode.low, prefill.low),
            min(decode.high, prefill.high),
            max(decode.high, prefill.high),
            1 if prefill == decode else 2,
        ),
        conventions=[*plan.conventions, _band_note(decode, prefill, batch, context)],
    )


def _band_note(decode: Band, prefill: Band, batch: int, context: int) -> Note:
    """The note ``serve.analytic_band``: the decode and prefill factors, their profile and rows, at
    the typical decode step of ``batch`` sequences at ``context`` tokens."""
    return note(
        "serve.analytic_band",
        profile=decode.profile,
        engine=decode.engine,
        kind=decode.situation,
        rows=decode.rows,
        sources=decode.sources,
        transfer=decode.widen,
        batch=batch,
        context=context,
        low=decode.low,
        high=decode.high,
        ttft_low=prefill.low,
        ttft_high=prefill.high,
    )
