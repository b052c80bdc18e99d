"""The engine is part of the time model, and every prediction carries its error band (issue 23).

Each (GPU, engine) profile is checked leave-one-out through the public API against the shipped
published measurements (their sources are in the files: llm_cost/data/measurements/*.yaml, each with
its URL and engine version); measured times are read from those files, never from the code's output.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

import llm_cost
from llm_cost import api
from llm_cost.analyses.calibration import load_measurements
from llm_cost.core.types import Engine
from llm_cost.perf.profile import TRANSFER_WIDEN, load_profile, profile_names

DATA = Path(__file__).resolve().parents[2] / "llm_cost" / "data" / "measurements"

#: Each fitted (GPU, engine) profile, the file(s) of its rows (source: the file's ``source``) and the
#: leave-one-out median |error| it must stay within.
FITTED = {
    # the project's H200 measurements (PyTorch eager + CUDA graphs)
    "h200": (Engine.PYTORCH_EAGER, ["local-h200-llama3-8b-measured.yaml"], 0.05),
    # gpt-fast README tables (github.com/pytorch-labs/gpt-fast), torch.compile on A100
    "a100": (
        Engine.TORCH_COMPILE,
        ["local-a100-gpt-fast-decode.yaml", "gpt-fast-readme-tp-quant-mixtral.yaml"],
        0.06,
    ),
    # ROCm/vllm docs/dev-docker/README.md latency tables, vLLM 0.6.6 / 0.9.1 on 8x MI300X
    "mi300x-vllm": (Engine.VLLM, ["rocm-vllm-dev-docker-mi300x-latency.yaml"], 0.15),
    # yobitel InferenceBench (vLLM 0.21.0, H100) and lmdeploy issue 1608 (vLLM 0.4.2, H800)
    "h100-vllm": (Engine.VLLM, ["yobitel-inferencebench-h100-vllm.yaml", "lmdeploy-issue-1608-h800-vllm.yaml"], 0.20),
    # NVIDIA's TensorRT-LLM 0.9.0 H100 table and TensorRT-LLM v0.6.1 docs/source/performance.md
    "h100-trtllm": (
        Engine.TRTLLM,
        ["nvidia-inference-performance-trtllm090-h100.yaml", "tensorrt-llm-v0.6.1-performance-md.yaml"],
        0.10,
    ),
    "a100-trtllm": (Engine.TRTLLM, ["tensorrt-llm-v0.6.1-performance-md.yaml"], 0.10),
    # XiongjieDai/GPU-Benchmarks-on-LLM-Inference README tables and llama.cpp PR tables
    "rtx-4090-llamacpp": (
        Engine.LLAMACPP,
        ["xiongjiedai-gpu-benchmarks-llamacpp-rtx4090.yaml", "llamacpp-pr-tables-rtx4090.yaml"],
        0.12,
    ),
    "rtx-3090-llamacpp": (Engine.LLAMACPP, ["xiongjiedai-gpu-benchmarks-llamacpp-rtx3090.yaml"], 0.10),
    "a100-llamacpp": (Engine.LLAMACPP, ["xiongjiedai-gpu-benchmarks-llamacpp-a100.yaml"], 0.15),
    "h100-pcie-llamacpp": (Engine.LLAMACPP, ["xiongjiedai-gpu-benchmarks-llamacpp-h100-pcie.yaml"], 0.15),
}


@pytest.fixture(scope="module")
def table():
    return api.validate_profiles()


@pytest.mark.parametrize("name", sorted(FITTED))
def test_leave_one_out_per_profile_against_its_published_rows(name):
    engine, files, bound = FITTED[name]
    profile = load_profile(name)
    assert profile.kind == "fitted" and profile.engine == engine
    measured = {m.id: m.measured_ms / 1e3 for m in load_measurements([DATA / f for f in files])}
    (c,) = api.validate(profile=name)
    assert len(c.rows) == profile.error.rows >= 3
    errors = []
    for r in c.rows:
        assert r.measured_s == pytest.approx(measured[r.id])  # the row is the file's, with its source
        errors.append(abs(r.loo_s / measured[r.id] - 1))  # held out: the profile fitted without it
    assert statistics.median(errors) <= bound
    assert statistics.median(errors) == pytest.approx(profile.error.loo_median, abs=1e-3)


def test_every_fitted_profile_is_in_the_validate_table(table):
    assert {c.profile for c in table.profiles} == set(FITTED)
    for c in table.profiles:
        assert c.engine == FITTED[c.profile][0] and c.rows >= 3


def test_the_band_holds_most_held_out_rows(table):
    """Leave-one-out rows inside their profile's band, and rows of the same engine on other GPUs
    inside the transferred profile's (wider) band: most of them, pooled over the profiles."""
    loo_in = sum(c.loo_in_band for c in table.profiles) / sum(c.rows for c in table.profiles)
    moved = [c for c in table.profiles if c.same_engine_rows]
    moved_in = sum(c.same_engine_in_band for c in moved) / sum(c.same_engine_rows for c in moved)
    assert loo_in >= 0.7 and moved_in >= 0.7


@pytest.mark.xfail(
    strict=True,
    reason="issue #32 round-2 data (llama.cpp rows at 8K-32K contexts, RTX 3090/4090) moves the measured widening "
    "from 2.9 to 3.56, outside 25% of TRANSFER_WIDEN = 2.5 (llm_cost/perf/profile.py); the constant is left to the "
    "time-model rewrite, which must re-derive it (strict: this marker fails once they agree again)",
)
def test_the_transfer_widening_is_the_measured_one(table):
    """The band of a transferred profile is TRANSFER_WIDEN times its source's: the out-of-sample
    median over the leave-one-out median of profiles carried to their engine's other GPUs."""
    assert TRANSFER_WIDEN == pytest.approx(table.measured_transfer_widen, rel=0.25)
    assert table.transfer_widen == TRANSFER_WIDEN


@pytest.mark.parametrize(
    "gpu,engine,batch,context",
    [
        ("h100", None, 1, 0),
        ("h100", "trtllm", 64, 2048),
        ("h200", None, 8, 8192),
        ("rtx-4090", "llamacpp", 1, 4096),
        ("mi300x", "sglang", 32, 1024),
        ("b200", "torch-compile", 256, 128000),
    ],
)
def test_every_prediction_has_an_ordered_band_and_tokens_per_s(gpu, engine, batch, context):
    d = api.decode("llama3-8b", gpu, batch, context, engine=engine)
    assert 0 < d.predicted_low_s <= d.predicted_s <= d.predicted_high_s
    assert d.predicted_tokens_per_s == pytest.approx(batch / d.predicted_s)
    p = api.prefill("llama3-8b", gpu, 2048, engine=engine)
    assert 0 < p.predicted_low_s <= p.predicted_s <= p.predicted_high_s
    assert p.predicted_tokens_per_s == pytest.approx(2048 / p.predicted_s)


def _width(step):
    return (step.predicted_high_s - step.predicted_low_s) / step.predicted_s


def test_the_band_is_wider_transferred_and_far_from_the_fitted_rows():
    fitted = api.decode("llama3-8b", "h100", 2, 512, engine="vllm")
    moved = api.decode("llama3-8b", "h200", 2, 512, engine="vllm")  # h100-vllm carried to the H200
    assert fitted.profile_kind == "fitted" and moved.profile_kind == "transferred"
    assert _width(moved) > _width(fitted)
    far = api.decode("llama3-8b", "h100", 256, 512, engine="vllm")  # batches 1-4 were fitted
    assert _width(far) > _width(fitted)


def test_the_default_engine_is_vllm_and_the_output_says_so(cli):
    run = cli("roofline", "llama3-8b", "--gpu", "h100", "--batch", "1", "--context", "1K")
    assert run.code == 0
    assert "profile h100-vllm (fitted, 3 rows), engine vllm (default" in run.out
    data = cli("roofline", "llama3-8b", "--gpu", "h100", "--batch", "1", "--context", "1K", "--json").json()
    assert data["engine"] == "vllm" and data["profile"] == "h100-vllm"
    (n,) = [c for c in data["conventions"] if c["code"] == "prediction.engine"]
    assert n["params"]["default"] is True
    given = cli("roofline", "llama3-8b", "--gpu", "h100", "--engine", "vllm")
    assert "engine vllm (given)" in given.out


def test_the_text_shows_the_band_profile_and_tokens_per_s(cli):
    run = cli("roofline", "llama3-8b", "--gpu", "h100", "--engine", "trtllm", "--batch", "8", "--context", "1K")
    line = next(x for x in run.out.splitlines() if x.strip().startswith("prediction "))
    assert "profile h100-trtllm/trtllm, 8 rows)" in line and "tokens/s" in line and "% / +" in line


def test_llamacpp_on_an_rtx_4090_picks_its_llamacpp_profile(cli):
    data = cli(
        "roofline", "llama3-8b", "--gpu", "rtx-4090", "--engine", "llamacpp", "--weights-dtype", "int4", "--json"
    ).json()
    assert data["profile"] == "rtx-4090-llamacpp" and data["profile_kind"] == "fitted"
    assert data["engine"] == "llamacpp"


def test_a_missing_gpu_engine_pair_is_transferred_by_the_stated_rule():
    """The nearest fitted profile of the same engine (same vendor first), else the profile the first
    engine with a fit gets; marked transferred, with its source."""
    h200 = api.decode("llama3-8b", "h200", 1, 1024, engine="vllm")
    assert h200.profile == "h200-vllm" and h200.profile_kind == "transferred"
    assert any("transferred from h100-vllm" in str(c.params) or c.params.get("source") == "h100-vllm"
               for c in h200.conventions if c.code == "prediction.transferred")  # fmt: skip
    sglang = api.decode("llama3-8b", "h100", 1, 1024, engine="sglang")
    assert sglang.profile == "h100-sglang" and sglang.profile_kind == "transferred" and sglang.engine == "sglang"
    explicit = api.decode("llama3-8b", "h100", 1, 1024, engine="sglang", profile="h200")
    assert explicit.profile == "h200"  # an explicit profile wins over the engine


def test_an_unknown_engine_exits_2_naming_the_valid_ones(cli):
    run = cli("roofline", "llama3-8b", "--gpu", "h100", "--engine", "tgi")
    assert run.code == 2
    assert "--engine" in run.err and all(e.value in run.err for e in Engine)
    with pytest.raises(llm_cost.LlmCostError, match="engine"):
        api.decode("llama3-8b", "h100", engine="tgi")


def test_every_shipped_profile_declares_an_engine_and_names_gpu_engine():
    for name in profile_names():
        p = load_profile(name)
        assert isinstance(p.engine, Engine)
        assert name in (p.gpu, f"{p.gpu}-{p.engine.value}")


def test_serves_schedulers_are_engines():
    from llm_cost.cli.serve import EngineChoice
    from llm_cost.simulate.engine import ENGINES

    assert {e.value for e in EngineChoice} <= {e.value for e in Engine}
    assert set(ENGINES) <= {e.value for e in Engine}


def test_a_band_widens_in_log_ratio_without_a_clamp():
    """widened(f, w) = f ** w: w = 1 is the fitted band; a -25% residual (measured up to 1 / 0.75 =
    1.333x the prediction) widened 4x gives 1.333^4 = 3.16x, finite, where widening the residual
    itself (-25% x 4 = -100%) would put the measured time infinitely above the prediction; and an
    over- and an under-prediction of the same log size widen alike."""
    from llm_cost.perf.calibrated import widened

    assert widened(0.8, 1.0) == 0.8 and widened(1 / 0.75, 4.0) == pytest.approx((4 / 3) ** 4)
    assert widened(1 / 0.75, 4.0) == pytest.approx(3.1605, abs=1e-4)
    assert widened(0.5, 2.0) * widened(2.0, 2.0) == pytest.approx(1.0)
