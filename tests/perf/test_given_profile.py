"""A profile the user names (``--profile``) on a GPU of another kernel family is a transfer, and is
labelled and banded as one (a new user's trial: a Hopper profile predicting an MI300X printed
'fitted' with its own -13%/+32% band)."""

from __future__ import annotations

import pytest

from llm_cost import api
from llm_cost.perf.calibrated import band_for
from llm_cost.perf.choose import load_profile


def test_a_profile_on_its_own_family_stays_fitted():
    d = api.decode("llama3-8b", "h200", batch=8, context=1024, profile="hopper-vllm")
    assert d.profile_kind == "fitted"


def test_a_profile_on_another_family_is_transferred_with_a_wider_band():
    """The shipped fit's held-out errors are wider for transferred predictions than for fitted
    ones; a Hopper profile on an MI300X (CDNA3) takes the transferred band."""
    d = api.decode("llama3-8b", "mi300x", batch=8, context=1024, profile="hopper-vllm")
    assert d.profile_kind == "transferred"
    fitted = band_for(load_profile("hopper-vllm"), 8, 1024)
    assert fitted is not None and d.predicted_high_s is not None and d.predicted_s is not None
    assert d.predicted_high_s / d.predicted_s > fitted.high


def test_a_profile_held_out_row_by_row_says_so(cli, tmp_path):
    """A profile calibrated on rows of one file without a source column was held out row by row; its
    note had called that '4 rows of 4 sources, leave-one-source-out' (a new user's trial)."""
    rows = tmp_path / "rows.csv"
    rows.write_text(
        "model,gpu,phase,batch,context,tp,weights_dtype,group_size,kv_dtype,measured_ms\n"
        "llama3-8b,h100,decode,1,128,1,bf16,,bf16,6.9\nllama3-8b,h100,decode,8,1024,1,bf16,,bf16,7.5\n"
        "llama3-8b,h100,decode,64,2048,1,bf16,,bf16,12\nllama3-8b,h100,prefill,1,2048,1,bf16,,bf16,60\n",
        encoding="utf-8",
    )
    profile = tmp_path / "mine.yaml"
    assert cli("calibrate", str(rows), "-o", str(profile), "--engine", "vllm").code == 0
    out = cli("roofline", "llama3-8b", "--gpu", "h100", "--batch", "8", "--context", "1K", "--profile", str(profile))
    assert out.code == 0 and "leave-one-row-out" in out.out and "of 4 sources" not in out.out


def test_an_engine_and_a_profile_of_another_engine_are_refused_together(cli):
    """roofline takes its time model from --profile; an --engine of another engine beside it was
    dropped without a word (a new user's trial). Given alone, or agreeing, each is taken."""
    out = cli("roofline", "llama3-8b", "--gpu", "h100", "--engine", "trtllm", "--profile", "hopper-vllm")
    assert out.code == 2 and "--engine: trtllm contradicts --profile hopper-vllm" in out.err
    spec = cli("spec", "llama3-8b", "--gpu", "h100", "--alpha", "0.7", "--gamma", "4", "--engine", "trtllm",
               "--profile", "hopper-vllm")  # fmt: skip
    assert spec.code == 2 and "--engine: trtllm contradicts --profile hopper-vllm" in spec.err  # it had been dropped
    agreeing = cli("roofline", "llama3-8b", "--gpu", "h100", "--engine", "vllm", "--profile", "hopper-vllm")
    alone = cli("roofline", "llama3-8b", "--gpu", "h100", "--profile", "hopper-trtllm")
    assert agreeing.code == 0 and alone.code == 0 and "profile hopper-trtllm" in alone.out


def test_serve_refuses_an_engine_that_contradicts_its_profile_and_takes_the_profiles_by_default(cli):
    """serve's engine is its scheduler, its time model and its launch command: beside a profile of
    another engine it would schedule as one engine and time steps as another, so it is refused as
    roofline refuses it; with a profile alone the plan runs that profile's engine (before: vLLM's
    scheduler under an SGLang profile, without a word); with neither, vLLM."""
    out = cli("serve", "llama3-8b", "--gpu", "h100", "--tp", "1", "--qps", "2", "--engine", "sglang",
              "--profile", "hopper-vllm")  # fmt: skip
    assert out.code == 2 and "--engine: sglang contradicts --profile hopper-vllm" in out.err
    with pytest.raises(api.LlmCostError, match="engine: trtllm contradicts profile hopper-vllm"):
        api.simulate_serving("llama3-8b", "h100", qps=2, requests=20, engine="trtllm", profile="hopper-vllm")
    alone = api.serve("llama3-8b", "h100", 1024, 128, layout=api.Layout(tp=1), qps=2, requests=60,
                      profile="hopper-sglang")  # fmt: skip
    neither = api.serve("llama3-8b", "h100", 1024, 128, layout=api.Layout(tp=1), qps=2, requests=60)
    assert str(alone.engine) == "sglang" and str(neither.engine) == "vllm"
    # a profile of an engine that is not a serving engine leaves the scheduler at vLLM's, and says so
    # (an attacker's --profile ampere-llamacpp planned max_num_seqs 1 without a word)
    torch = api.serve("llama3-8b", "a100", 1024, 128, layout=api.Layout(tp=1), qps=2, requests=60,
                      profile="ampere-torch-compile")  # fmt: skip
    assert str(torch.engine) == "vllm"
    foreign = [n.params for n in torch.conventions if n.code == "serve.foreign_kernels"]
    assert foreign == [{"profile": "ampere-torch-compile", "kernels": "torch-compile", "engine": "vllm"}]
    assert not any(n.code == "serve.foreign_kernels" for run in (alone, neither) for n in run.conventions)


def test_the_profile_help_names_only_profiles_that_load():
    """``--profile``'s help had offered h200, a100, h100-vllm and rtx-4090-llamacpp, each refused as
    not a <family>-<engine> name (a hostile-input trial); every name it gives now loads."""
    import re

    from llm_cost.cli.step_options import ProfileOpt

    text = ProfileOpt.__metadata__[0].help
    names = re.findall(r"\b[a-z0-9]+-[a-z0-9-]+\b", text.split("(", 1)[1].split(")", 1)[0])
    assert len(names) >= 3
    for name in names:
        assert load_profile(name).name == name


def test_validating_a_users_profile_says_which_rows_it_was_fitted_on(tmp_path):
    """A new user calibrated a profile on the shipped H200 measurements and validated it: the rows
    were labelled "out of sample" at 3.0% median under the title "each predicted by the fit without
    its source", though the profile was fitted on exactly them. A row whose source the profile lists
    as fitted on is "in sample", and the method says so."""
    from pathlib import Path

    import llm_cost

    data = Path(llm_cost.__file__).parent / "data" / "measurements" / "local-h200-llama3-8b-measured.yaml"
    out = tmp_path / "mine.yaml"
    llm_cost.calibrate([data], out)
    v = llm_cost.validate(str(out))
    assert v.method == "in sample" and v.results and {r.situation for r in v.results} == {"in sample"}
    shipped = llm_cost.validate("hopper-pytorch-eager")
    assert shipped.method == "leave-one-source-out"
