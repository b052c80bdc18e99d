"""The calibrated time model, its profiles and its fit (issue 12).

Each data set is fitted once per module (``fits``); a prediction is tested on measurements it was
not fitted on (the leave-one-out profile of that row). Measured times are read from the shipped
measurement files, never copied from the code's output.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

import pytest

from llm_cost.analyses.calibration import NEEDS, calibrate, load_measurements, step_of, validate
from llm_cost.analyses.roofline import decode_step, prefill_step
from llm_cost.core.errors import InputError, SpecError
from llm_cost.core.types import stored_weight_bits
from llm_cost.model.layout import Layout
from llm_cost.perf.calibrated import CalibratedModel, kv_efficiency, smooth_max, weight_format
from llm_cost.perf.profile import PARAMETERS, default_profile, load_profile, profile_names, profiles_dir
from llm_cost.perf.timemodel import RooflineBound
from llm_cost.specs.declare import to_data
from llm_cost.specs.load import gpu_names, load_gpu, load_model

DATA = Path(__file__).resolve().parents[2] / "llm_cost" / "data" / "measurements"
H200 = DATA / "local-h200-llama3-8b-measured.yaml"
A100 = DATA / "local-a100-gpt-fast-decode.yaml"
A100_TP = DATA / "gpt-fast-readme-tp-quant-mixtral.yaml"


@pytest.fixture(scope="module")
def fits():
    """The two shipped measurement sets, each fitted once with leave-one-out profiles: the H200 set as
    ``validate`` refits the shipped h200 profile, the A100 single-GPU rows alone."""
    return {"h200": validate(load_profile("h200")), "a100": calibrate([A100], "a100")}


def _measured_s(path: Path, row_id: str) -> float:
    return next(m.measured_ms for m in load_measurements([path]) if m.id == row_id) / 1e3


@pytest.mark.parametrize("name", ["h200", "a100"])
def test_leave_one_out_median_within_10_percent(fits, name):
    c = fits[name]
    errors = [abs(r.loo_error) for r in c.rows]
    assert statistics.median(errors) <= 0.10
    assert c.profile.error.loo_median == pytest.approx(statistics.median(errors), abs=1e-4)
    assert c.profile.error.rows == len(c.rows) == len(c.profile.fitted_on)


def test_no_bound_above_any_measurement():
    bound = RooflineBound()
    for m in load_measurements(sorted(DATA.glob("*.yaml"))):
        assert bound.step_time(step_of(m), load_gpu(m.gpu)).time_s <= m.measured_ms / 1e3, m.id


@pytest.mark.parametrize(
    "batch,context,row,tolerance",
    [(1, 32768, "h200-l3-8b-dec-b1-c32768", 0.15), (64, 8192, "h200-l3-8b-dec-b64-c8192", 0.10)],
)
def test_roofline_prediction_on_a_row_left_out(fits, batch, context, row, tolerance):
    """The roofline's predicted_s from the H200 profile fitted without that row."""
    d = decode_step(load_model("llama3-8b"), load_gpu("h200"), batch, context, profile=fits["h200"].loo_profile(row))
    assert d.predicted_s == pytest.approx(_measured_s(H200, row), rel=tolerance)
    assert d.bound_s < d.predicted_s


@pytest.mark.parametrize(
    "batch,context,row,tolerance",
    [("1", "32768", "h200-l3-8b-dec-b1-c32768", 0.15), ("64", "8192", "h200-l3-8b-dec-b64-c8192", 0.10)],
)
def test_roofline_json_names_the_shipped_profile(cli, batch, context, row, tolerance):
    args = ("--batch", batch, "--context", context, "--engine", "pytorch-eager", "--json")  # the rows' engine
    out = cli("roofline", "llama3-8b", "--gpu", "h200", *args).json()
    assert out["profile"] == "h200"
    assert out["predicted_s"] == pytest.approx(_measured_s(H200, row), rel=tolerance)
    assert out["bound_s"] < out["predicted_s"]


def test_prefill_prediction_uses_the_profile(fits):
    row = "h200-l3-8b-pre-b1-p8192"
    p = prefill_step(load_model("llama3-8b"), load_gpu("h200"), 8192, profile=fits["h200"].loo_profile(row))
    assert p.predicted_s == pytest.approx(_measured_s(H200, row), rel=0.10)
    assert p.profile.startswith("h200 (without")


@pytest.mark.parametrize("name", ["h200", "a100"])
def test_the_fit_evaluates_the_same_formulas_as_the_time_model(fits, name):
    """The vectorised fit and CalibratedModel.step_time agree on every row."""
    c = fits[name]
    model = CalibratedModel(c.profile)
    for m, r in zip(load_measurements([H200 if name == "h200" else A100]), c.rows):
        predicted = model.step_time(step_of(m), load_gpu(m.gpu))
        assert predicted.kind == "prediction" and name in predicted.model
        assert predicted.time_s == pytest.approx(r.predicted_s, rel=2e-3)  # profile rounded to 4 digits


def test_undetermined_parameters_stay_at_their_prior_and_say_which_rows_would(fits):
    c = fits["a100"]  # batch 1 decode only
    for name in ("gemm_half_tokens", "overlap_p", "kv_saturation_heads", "attention_efficiency_flash"):
        assert getattr(c.profile.parameters, name) == PARAMETERS[name].prior
        assert NEEDS[name][1] in c.fixed[name]
    assert "bandwidth_efficiency_int4" in c.free and "step_overhead_s" in c.free


def test_quantised_weights_reach_less_bandwidth(fits):
    q = fits["a100"].profile.parameters
    assert q.bandwidth_efficiency_int8 < q.bandwidth_efficiency_native


def test_refuses_too_few_rows_and_mixed_gpus(tmp_path):
    few = tmp_path / "few.csv"
    few.write_text("model,gpu,phase,batch,context,measured_ms\nllama3-8b,a100,decode,1,100,10.6\n")
    with pytest.raises(InputError, match="cannot determine"):
        calibrate([few], "x")
    mixed = tmp_path / "mixed.csv"
    mixed.write_text(
        "model,gpu,phase,batch,context,measured_ms\nllama3-8b,a100,decode,1,100,10.6\nllama3-8b,h200,decode,1,128,6.5\n"
    )
    with pytest.raises(InputError, match="one GPU"):
        calibrate([mixed], "x")


def test_refuses_rows_faster_than_the_bound(tmp_path):
    fast = tmp_path / "fast.csv"
    fast.write_text("model,gpu,phase,batch,context,measured_ms\n" + "llama3-8b,a100,decode,1,100,3\n" * 3)
    with pytest.raises(InputError, match="faster than the Roofline bound of a100.*line2"):
        calibrate([fast], "x")


def test_without_scipy_the_message_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)
    with pytest.raises(InputError, match=r"pip install 'llm-cost\[fit\]'"):
        calibrate([A100], "x")


def test_every_shipped_gpu_has_a_profile_that_names_its_data_and_error():
    ids = {m.id for m in load_measurements([H200, A100, A100_TP])}
    assert set(gpu_names()) <= set(profile_names())
    for gpu in gpu_names():
        p = default_profile(gpu)
        assert p is not None and p.gpu == gpu and p.fitted_on and set(p.fitted_on) <= ids
        assert all((DATA / f).is_file() for f in p.measurements)
        if p.kind == "fitted":
            assert p.error is not None and p.error.loo_median <= 0.10
        else:
            assert p.transferred_from and "transferred" in p.note and p.expected_error
            assert default_profile(p.transferred_from).kind == "fitted"


def test_shipped_h200_profile_is_the_fit_of_its_data(fits):
    shipped = to_data(load_profile("h200").parameters)
    for k, v in to_data(fits["h200"].profile.parameters).items():
        assert shipped[k] == pytest.approx(v, rel=1e-2, abs=1e-9), k


def test_load_profile_errors(tmp_path):
    with pytest.raises(SpecError, match="^profile: 'h2000' .*Shipped profiles: .*h200"):
        load_profile("h2000")
    with pytest.raises(SpecError, match="^profile: no such file"):
        load_profile(str(tmp_path / "none.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text((profiles_dir() / "h200.yaml").read_text().replace("overlap_p:", "overlap_q:", 1))
    with pytest.raises(SpecError, match="overlap"):
        load_profile(str(bad))


def test_weight_bits_count_group_scales_and_zeros():
    assert stored_weight_bits("int4", 32) == 5
    assert stored_weight_bits("int4", None) == 4.25
    assert stored_weight_bits("int8", None) == 8
    assert stored_weight_bits("bf16", None) == 16
    assert [weight_format(b, 16) for b in (16, 8, 5, 4.25)] == ["native", "int8", "int4", "int4"]
    assert weight_format(8, 8) == "native"  # fp8 weights with fp8 compute


def test_smooth_max_between_max_and_sum():
    a, b = 3e-3, 1e-3
    assert smooth_max(a, b, 1.0) == pytest.approx(a + b)
    assert max(a, b) < smooth_max(a, b, 4.0) < a + b
    assert smooth_max(a, b, 64.0) == pytest.approx(max(a, b), rel=1e-6)
    assert smooth_max(0.0, 0.0, 4.0) == 0.0


def test_kv_efficiency_ramps_then_saturates():
    e = [kv_efficiency(x, 0.9, 80.0) for x in (1, 8, 80, 800, 8000)]
    assert e == sorted(e) and e[-1] == pytest.approx(0.9, rel=1e-3)
    assert e[1] == pytest.approx(0.9 * 8 / 80, rel=0.01)
    assert not math.isnan(e[0])


def test_calibrate_cli_writes_a_profile_that_predicts_its_rows(cli, tmp_path):
    """`calibrate` on the A100 single-GPU rows: a profile naming its data, within 10% LOO per row."""
    out = tmp_path / "a100-mine.yaml"
    run = cli("calibrate", str(A100), "-o", str(out), "--json")
    assert run.code == 0, run.err
    result = run.json()
    assert result["out"] == str(out)
    assert all(abs(r["loo_error"]) <= 0.10 for r in result["rows"])
    written = load_profile(str(out))
    assert written.kind == "fitted" and written.error.loo_max <= 0.10
    assert written.fitted_on == tuple(m.id for m in load_measurements([A100]))
    assert "gemm_half_tokens" in written.fixed
    again = cli("calibrate", str(A100), "-o", str(out))
    assert again.code == 2 and "--force" in again.err and again.out == ""
    step = cli("roofline", "llama3-8b", "--gpu", "a100", "--context", "100", "--profile", str(out), "--json").json()
    assert step["profile"] == "a100-mine"
    assert step["predicted_s"] == pytest.approx(_measured_s(A100, "a100-gptfast-llama-3-8b-bf16"), rel=0.10)


def test_calibrate_cli_reads_the_documented_csv(cli, tmp_path):
    rows = load_measurements([A100])
    csv_file = tmp_path / "mine.csv"
    csv_file.write_text(
        "model,gpu,phase,batch,context,tp,weights_dtype,group_size,kv_dtype,measured_ms\n"
        + "".join(
            f"{m.spec if m.spec.endswith('.yaml') else m.spec},a100,decode,1,100,1,{m.weights_dtype},"
            f"{m.group_size or ''},bf16,{m.measured_ms}\n"
            for m in rows
        )
    )
    run = cli("calibrate", str(csv_file), "--engine", "torch-compile", "-o", str(tmp_path / "p.yaml"), "--json")
    assert run.code == 0, run.err
    assert run.json()["profile"]["error"]["loo_median"] <= 0.10


def test_validate_cli_prints_every_row_beside_the_bound_and_estimate(cli):
    run = cli("validate", "--profile", "h200", "--json")
    assert run.code == 0, run.err
    (result,) = run.json()
    assert len(result["rows"]) == len(load_profile("h200").fitted_on)
    assert all(r["bound_error"] <= 0 for r in result["rows"])
    every = next(c for c in result["categories"] if c["category"] == "all")
    assert every["loo_median"] <= 0.10 < every["estimate_median"]
    refused = cli("validate", "--profile", "b200")  # transferred, and no shipped row measures a B200
    assert refused.code == 2 and "transferred" in refused.err


def test_a_transferred_profile_is_checked_on_its_gpus_rows_out_of_sample():
    """h100 is transferred from h200 (PyTorch eager); TensorRT-LLM's H100 first-token latencies
    were fitted by nothing: its prediction is still nearer than the MFU/MBU estimate."""
    result = validate(load_profile("h100"))
    assert result.method == "out-of-sample" and result.rows
    every = result.categories[-1]
    assert every.category == "all" and every.loo_median < every.estimate_median
    assert all(r.bound_s <= r.measured_s for r in result.rows)


def test_group_size_counts_scales_and_zeros_in_the_weight_bytes(cli):
    def matmul_bytes(*flags):
        return cli("roofline", "llama3-8b", "--context", "1K", *flags, "--json").json()["matmul_weight_bytes"]

    bf16 = matmul_bytes()
    every = "--quantize-embeddings"  # the LM head's matmul weights in the format too
    assert matmul_bytes("--weights-dtype", "int4", "--group-size", "32", every) * 16 == bf16 * 5  # 4 + 32/32 bits
    assert matmul_bytes("--weights-dtype", "int4", every) * 16 == bf16 * 4.25  # group 128 by default
    assert matmul_bytes("--weights-dtype", "int8", every) * 2 == bf16  # per channel
    refused = cli("roofline", "llama3-8b", "--group-size", "32")
    assert refused.code == 2 and "--group-size" in refused.err


def test_profile_index_is_what_the_yaml_gives():
    """The shipped index (read by commands without pydantic or a YAML parser) matches the profiles'
    YAML, and each entry rebuilt without validation is the validated profile."""
    from llm_cost.perf import profile
    from llm_cost.perf.profile_index import INDEX
    from llm_cost.specs import index
    from llm_cost.specs.declare import validated

    assert INDEX == profile.build_profile_index(), "run: python scripts/build_index.py"
    for entry in INDEX.values():
        fast, checked = index.rebuilt(profile.Profile, entry), validated(profile.Profile, entry["spec"])
        assert fast == checked and repr(fast) == repr(checked)
        assert vars(fast).keys() == vars(checked).keys()


@pytest.mark.parametrize("gpu", ["h200", "a100", "l40s", "b200"])
def test_no_prediction_under_the_bound(gpu):
    """The bound is the floor no prediction goes under (each term is at most the datasheet rate)."""
    g = load_gpu(gpu)
    for name, tp in (("llama3-8b", 1), ("mixtral-8x7b", 2)):
        spec = load_model(name)
        for batch, context in ((1, 0), (8, 4096), (256, 1024)):
            d = decode_step(spec, g, batch, context, layout=Layout(tp=tp))
            assert d.bound_s <= d.predicted_s, (name, batch, context)
        p = prefill_step(spec, g, 4096, layout=Layout(tp=tp))
        assert p.bound_s <= p.predicted_s
