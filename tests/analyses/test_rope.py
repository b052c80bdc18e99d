"""RoPE wavelengths and extensions: the seed documents' numbers, hand-computed cases, invariants."""

from __future__ import annotations

import dataclasses
import io
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.analyses.rope import (
    Llama3Scaling,
    llama3_wavelengths,
    ntk_aware_base,
    rope_analysis,
    rope_for_model,
    wavelengths,
    yarn_mscale,
)
from llm_cost.core.errors import InputError
from llm_cost.specs.load import load_model

# --- the seed documents' numbers (seed 003 §03; shared/reference/document-numbers.md Q1, Q2) ------------


def test_base_1e4_d128_shortest_and_longest_wavelength():
    """Q1: base 10000, d_head 128: from 6.28 to "5.4万" tokens (54,410 exactly rounded)."""
    w = wavelengths(10_000, 128)
    assert len(w) == 64
    assert round(w[0], 2) == 6.28
    assert round(w[-1]) == 54_410
    assert round(w[-1] / 1e4, 1) == 5.4  # the document's 5.4万


def test_base_5e5_longest_wavelength():
    """Q1: base 500000 stretches the lowest frequency to "256万" = 2,559,196 tokens."""
    w = wavelengths(500_000, 128)
    assert round(w[-1]) == 2_559_196
    assert round(w[-1] / 1e4) == 256


def test_fourteen_pairs_do_not_turn_within_8k():
    """Q2: base 10000, d 128, trained at 8K: 14 low-frequency pairs never complete a turn."""
    r = rope_analysis(10_000, 128, 8192, 32768)
    assert r.incomplete_in_train == 14
    assert r.first_incomplete_pair == 50  # pairs 50 .. 63
    assert sum(1 for w in wavelengths(10_000, 128) if w > 8192) == 14
    none = r.methods[0]
    assert none.name == "none" and none.unseen_phase_pairs == 14  # "推到 32K 出现从未见过的相位"


# --- NTK-aware ------------------------------------------------------------------------------------------


def test_ntk_aware_base_hand_computed():
    """base' = base * alpha^(d/(d-2)). By hand, base 10000, d 4, alpha 4: 10000 * 4^(4/2) = 160,000.
    Pairs: i = 0 keeps 2 pi; i = 1 goes from 2 pi * sqrt(10000) = 200 pi to 2 pi * sqrt(160000) = 800 pi,
    i.e. exactly alpha times longer."""
    assert ntk_aware_base(10_000, 4, 4) == pytest.approx(160_000, rel=1e-12)
    r = rope_analysis(10_000, 4, 1000, 4000)
    assert [p.ntk_aware for p in r.pairs] == pytest.approx([2 * math.pi, 800 * math.pi], rel=1e-12)
    ntk = next(m for m in r.methods if m.name == "ntk_aware")
    assert ntk.effective_base == pytest.approx(160_000, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(base=st.floats(1.5, 1e7), half=st.integers(2, 128), alpha=st.floats(1.0, 64.0))
def test_ntk_keeps_the_highest_and_stretches_the_lowest_by_alpha(base, half, alpha):
    d = 2 * half
    train = 4096
    r = rope_analysis(base, d, train, max(train, round(train * alpha)))
    a = r.alpha
    assert r.pairs[0].ntk_aware == pytest.approx(r.pairs[0].wavelength, rel=1e-9)
    assert r.pairs[-1].ntk_aware == pytest.approx(a * r.pairs[-1].wavelength, rel=1e-9)
    assert all(p.wavelength * (1 - 1e-12) <= p.ntk_aware <= a * p.wavelength * (1 + 1e-9) for p in r.pairs)


# --- PI and YaRN ----------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(base=st.floats(1.5, 1e7), half=st.integers(1, 128), train=st.integers(16, 65536), alpha=st.floats(1.0, 64.0))
def test_pi_and_yarn_by_parts(base, half, train, alpha):
    """PI multiplies every wavelength by alpha. YaRN (beta_fast 32, beta_slow 1): pairs with
    lambda <= train/32 unchanged, pairs with lambda >= train divided in frequency by alpha, the rest in between."""
    d = 2 * half
    target = max(train, round(train * alpha))
    r = rope_analysis(base, d, train, target)
    a = target / train
    assert r.alpha == a
    for p in r.pairs:
        assert p.pi == pytest.approx(a * p.wavelength, rel=1e-12)
        if p.wavelength <= train / 32:
            assert p.yarn == p.wavelength
        elif p.wavelength >= train:
            assert p.yarn == pytest.approx(a * p.wavelength, rel=1e-12)
        else:
            assert p.wavelength * (1 - 1e-12) <= p.yarn <= a * p.wavelength * (1 + 1e-12)
    pi = next(m for m in r.methods if m.name == "pi")
    yarn = next(m for m in r.methods if m.name == "yarn")
    # PI and YaRN map the target range back onto angles seen in training
    assert pi.unseen_phase_pairs == 0 and yarn.unseen_phase_pairs == 0
    assert pi.incomplete_at_target == r.incomplete_in_train


def test_yarn_mid_pair_hand_computed():
    """One pair inside the ramp. base (1024/2pi)^2 and d 4: lambda_1 = 2 pi sqrt(base) = 1024 tokens.
    train 2048: low = 2048/32 = 64, high = 2048; ramp = (1024 - 64)/(2048 - 64) = 960/1984 = 0.483871.
    alpha 4: theta' = theta (1 - ramp + ramp/4) = theta (1 - 0.75 * 0.483871) = 0.637097 theta, so
    lambda' = 1024 / 0.637097 = 1607.29."""
    base = (1024 / (2 * math.pi)) ** 2
    r = rope_analysis(base, 4, 2048, 8192)
    assert r.pairs[1].wavelength == pytest.approx(1024, rel=1e-12)
    assert r.pairs[1].yarn == pytest.approx(1607.29, rel=1e-5)


def test_yarn_temperature():
    """0.1 ln(alpha) + 1: alpha 4 -> 1 + 0.1 * 1.386294 = 1.138629; logits x its square 1.296477."""
    assert yarn_mscale(4) == pytest.approx(1.138629, rel=1e-6)
    assert yarn_mscale(1) == 1.0
    yarn = next(m for m in rope_analysis(10_000, 128, 8192, 32768).methods if m.name == "yarn")
    assert yarn.mscale == pytest.approx(1.138629, rel=1e-6)
    assert yarn.logit_scale == pytest.approx(1.296477, rel=1e-6)


def test_dynamic_ntk_at_target_equals_ntk_and_no_extension_changes_nothing():
    r = rope_analysis(10_000, 128, 8192, 32768)
    assert [p.dynamic_ntk for p in r.pairs] == [p.ntk_aware for p in r.pairs]
    same = rope_analysis(10_000, 128, 8192, 8192)
    for p in same.pairs:
        assert [p.pi, p.ntk_aware, p.yarn, p.dynamic_ntk] == pytest.approx([p.wavelength] * 4, rel=1e-12)


# --- Llama 3.1 ------------------------------------------------------------------------------------------


def test_llama3_synthetic_pair_hand_computed():
    """orig 8192, low_freq_factor 1, high_freq_factor 4, factor 8: band 2048 .. 8192 tokens.
    base (4096/2pi)^2, d 4: lambda_1 = 4096; smooth = (8192/4096 - 1)/(4 - 1) = 1/3;
    theta' = (2/3) theta/8 + (1/3) theta = (5/12) theta, so lambda' = 4096 * 12/5 = 9830.4."""
    base = (4096 / (2 * math.pi)) ** 2
    w = llama3_wavelengths(base, 4, Llama3Scaling())
    assert w[0] == pytest.approx(2 * math.pi, rel=1e-12)
    assert w[1] == pytest.approx(9830.4, rel=1e-12)


def test_llama31_pair_32_hand_computed():
    """Llama 3.1 (base 500000, d 128): pair 32 has lambda = 2 pi * 500000^(1/2) = 4442.88 (inside 2048 .. 8192);
    smooth = (8192/4442.88 - 1)/3 = 0.281283; lambda' = 4442.88 / (0.718717/8 + 0.281283) = 11,971.5.
    Shorter than 2048: unchanged; longer than 8192: x 8."""
    r = rope_for_model(load_model("llama3.1-405b"))
    assert r.llama3 == Llama3Scaling(8.0, 1.0, 4.0, 8192)
    p = r.pairs[32]
    assert p.wavelength == pytest.approx(4442.88, rel=1e-6)
    assert p.llama3 == pytest.approx(11_971.5, rel=1e-5)
    for q in r.pairs:
        if q.wavelength < 2048:
            assert q.llama3 == q.wavelength
        elif q.wavelength > 8192:
            assert q.llama3 == pytest.approx(8 * q.wavelength, rel=1e-12)
        else:
            assert q.wavelength <= q.llama3 <= 8 * q.wavelength


# --- models ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, base, dims, train, target",
    [
        ("llama3-8b", 500_000, 128, 8192, 32768),  # max_position_embeddings = train: target 4 x train
        ("llama3.1-405b", 500_000, 128, 8192, 131072),
        ("deepseek-v3", 10_000, 64, 4096, 163840),  # MLA: qk_rope_head_dim; yarn original 4096
        ("qwen3-next-80b-a3b", 10_000_000, 64, 262144, 1048576),  # partial rotary 0.25 x 256
    ],
)
def test_model_defaults(name, base, dims, train, target):
    r = rope_for_model(load_model(name))
    assert (r.model, r.base, r.dims, r.train_length, r.target_length) == (name, base, dims, train, target)


def test_model_overrides():
    r = rope_for_model(load_model("llama3-8b"), 4096, 16384, base=10_000, dims=64)
    assert (r.base, r.dims, r.train_length, r.target_length) == (10_000, 64, 4096, 16384)
    assert any(c.code == "rope.base_override" for c in r.conventions)


def test_learned_positions_have_no_rope():
    spec = dataclasses.replace(load_model("llama3-8b"), position_embedding="learned")
    with pytest.raises(InputError, match="not RoPE"):
        rope_for_model(spec)


# --- invalid input --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, name, flag",
    [
        ((1, 128, 8192, 32768), "base", "--base"),
        ((0.5, 128, 8192, 32768), "base", "--base"),
        ((float("nan"), 128, 8192, 32768), "base", "--base"),
        ((float("inf"), 128, 8192, 32768), "base", "--base"),
        ((1e4, 127, 8192, 32768), "dims", "--head-dim"),
        ((1e4, 0, 8192, 32768), "dims", "--head-dim"),
        ((1e4, 128.0, 8192, 32768), "dims", "--head-dim"),
        ((1e4, 128, 0, 32768), "train_length", "--train-length"),
        ((1e4, 128, 8192, 0), "target_length", "--target-length"),
        ((1e4, 128, 8192, 4096), "target_length", "--target-length"),
    ],
)
def test_invalid_inputs_name_the_argument(args, name, flag):
    """The engine names its argument; the command line writes it as its flag."""
    from llm_cost.cli.flags import as_flags

    calls = [lambda: rope_analysis(*args)] + ([lambda: wavelengths(*args[:2])] if name in ("base", "dims") else [])
    for call in calls:
        with pytest.raises(InputError, match=f"^{name}:") as info:
            call()
        assert "--" not in str(info.value) and as_flags(info.value).startswith(f"{flag}:")


def test_model_lengths_are_validated():
    with pytest.raises(InputError, match="^target_length:"):
        rope_for_model(load_model("llama3-8b"), 8192, 4096)


# --- rendering ------------------------------------------------------------------------------------------


def _render(result) -> str:
    from rich.console import Console

    from llm_cost.report import rope as view

    buf = io.StringIO()
    view.render(Console(file=buf, width=160, highlight=False), result)
    return buf.getvalue()


def test_render_samples_wide_heads_and_lists_narrow_ones():
    wide = _render(rope_analysis(10_000, 128, 8192, 32768))
    assert "a sample of the 64 pairs" in wide and "i = 50" in wide and "54,410" in wide
    narrow = _render(rope_analysis(10_000, 16, 8192, 32768))
    assert "all 8 pairs" in narrow
    assert "llama3" in _render(rope_for_model(load_model("llama3.1-405b")))


def test_json_has_every_pair():
    from llm_cost.report.base import to_json

    data = json.loads(to_json(rope_analysis(10_000, 128, 8192, 32768)))
    assert len(data["pairs"]) == 64 and data["incomplete_in_train"] == 14
    assert [m["name"] for m in data["methods"]] == ["none", "pi", "ntk_aware", "yarn", "dynamic_ntk"]


def _rope_command_registered() -> bool:
    from llm_cost.cli import app

    return any((c.name or c.callback.__name__) == "rope" for c in app.registered_commands)


@pytest.mark.skipif(not _rope_command_registered(), reason="`llm-cost rope` not yet in llm_cost/cli.py")
def test_cli(cli):
    r = cli("rope", "--base", "1e4", "--head-dim", "128", "--train-length", "8K", "--json")
    assert r.code == 0 and r.json()["incomplete_in_train"] == 14 and r.json()["target_length"] == 32768
    bad = cli("rope", "--base", "1e4", "--head-dim", "127")
    assert bad.code == 2 and "--head-dim" in bad.err and bad.out == ""
    missing = cli("rope", "--base", "1e4")
    assert missing.code == 2 and "--head-dim" in missing.err
