"""The serving planner's faults of issue 22 and the launch command (``serve --emit``), through the
public API and the command line, each against arithmetic written out here or a source's own list."""

from __future__ import annotations

import argparse
import json
import math
import shlex
from pathlib import Path

import pytest

from llm_cost import Layout, api
from llm_cost.core.types import ServingEngine

FIXTURES = Path(__file__).parent / "fixtures" / "hf"


# -- replicas as far as the budget allows ------------------------------------------------------


def test_a_rate_is_planned_with_as_many_replicas_as_one_replicas_rate_allows():
    """``serve llama3-70b --gpu h100 --qps 30 --input 4K --output 512 --ttft 250ms``: with no
    --gpus the budget is 4,096 GPUs, so the plan is the fewest replicas whose simulated run meets
    the target on the pessimistic side (the band's slow end, the upper end of the sampling
    interval). n TP8 replicas are separate servers behind a round-robin balancer, each sent every
    n-th request: n is right when that deployment, simulated alone (the same seed, as many
    requests per replica as the plan's run), holds the target and n - 1 replicas do not. (At 30
    requests/s the n replicas' runs stay within the 20,000 requests one simulation takes.)"""
    plan = api.serve("llama3-70b", "h100", 4096, 512, qps=30, ttft_s=0.25)
    run = plan.chosen
    n, each = run.replicas, run.simulated_requests
    assert run.layout == Layout(tp=8) and plan.ttft_s <= 0.25 and n > 1 and run.router == "round-robin"
    alone = dict(qps=30, ttft_s=0.25, layout=Layout(tp=8))
    one = api.serve("llama3-70b", "h100", 4096, 512, gpus=8 * n, requests=each * n, **alone)
    fewer = api.serve("llama3-70b", "h100", 4096, 512, gpus=8 * (n - 1), requests=each * (n - 1), **alone)
    assert one.meets and one.ttft_s == plan.ttft_s and not one.violates_pessimistic
    assert fewer.violates_pessimistic


def test_a_rate_without_a_ttft_target_is_held_to_the_stated_bound():
    """Without a TTFT target the fewest replicas that carry the rate on average may still let a
    queue grow; the plan keeps the P99 TTFT within the stated 10 s and says so."""
    plan = api.serve("llama3-8b", "h100", 2048, 256, qps=30, tpot_s=0.05)
    assert plan.percentiles["ttft_s"].p99 <= 10.0
    assert any(n.code == "serve.implicit_ttft" and n.params["bound"] == 10.0 for n in plan.conventions)


# -- tensor parallelism over PCIe --------------------------------------------------------------


def test_llama3_70b_on_l40s_runs_tensor_parallel_over_pcie():
    """L40S has no NVLink (one GPU per node in its spec); Llama-3-70B's 141 GB of BF16 weights
    need more than one 48 GB card, and TPOT 70 ms at the band's slow end (x2.06 for a plan without
    a rate) needs TP over PCIe. NVIDIA's L40S datasheet: PCIe Gen4 x16, 64 GB/s bidirectional = 32
    GB/s per direction."""
    plan = api.serve("llama3-70b", "l40s", 2048, 256, tpot_s=0.07)
    layout = plan.chosen.layout
    assert layout.tp >= 2 and layout.tp * layout.pp <= 8 and plan.tpot_s <= 0.07
    pcie = [n for n in plan.conventions if n.code == "serve.pcie_tp"]
    assert pcie and pcie[0].params["gb_s"] == 64 / 2 and pcie[0].params["gen"] == 4


def test_a_pcie_tensor_parallel_step_uses_the_pcie_link():
    """A TP4 decode step on RTX 4090s (PCIe 4.0 x16: 16 GT/s x 16 lanes = 32 GB/s each way) times
    its collectives on PCIe, bytes / 32e9 s, not on the network; on H100 the same TP stays on
    NVLink."""
    on_4090 = api.decode("llama3-8b", "rtx-4090", batch=8, context=2048, layout=Layout(tp=4))
    assert on_4090.link == "PCIe 4.0 x16" and on_4090.comm_bytes > 0
    assert on_4090.comm_time_s == pytest.approx(on_4090.comm_bytes / 32e9)
    on_h100 = api.decode("llama3-8b", "h100", batch=8, context=2048, layout=Layout(tp=4))
    assert on_h100.link.startswith("NVLink")


# -- engine caps and reservation ---------------------------------------------------------------


def test_concurrency_is_searched_only_up_to_the_engines_cap():
    """vLLM's default max_num_seqs is 256 on a GPU under 70 GiB (vllm/engine/arg_utils.py,
    _set_default_args: 1,024 only at >= 70 GiB and not an A100); an L40S holds 48 GiB, so no
    configuration screened or simulated runs more than 256 sequences; --max-num-seqs 32 caps at 32."""
    default = api.serve("llama3-8b", "l40s", 2048, 256, gpus=1)
    assert all(c.concurrency <= 256 for c in default.screen.frontier)
    assert all(r.max_num_seqs <= 256 for r in default.simulated)
    capped = api.serve("llama3-8b", "l40s", 2048, 256, gpus=1, max_num_seqs=32)
    assert all(c.concurrency <= 32 for c in capped.screen.frontier)
    assert all(r.max_num_seqs <= 32 for r in capped.simulated)


def test_trtllm_reserves_each_request_whole_and_so_holds_fewer_sequences():
    """TensorRT-LLM's GUARANTEED_NO_EVICT scheduler admits a request only when the blocks of its
    prompt and every output token can be reserved (capacityScheduler.cpp). Llama-3-70B on TP4:
    KV per token per GPU = 80 layers x (8 / 4) KV heads x 128 x 2 (K, V) x 2 B = 81,920 B. At
    2,048 + 2,048 tokens a reserved sequence holds 4,096 tokens = 256 blocks of 16; vLLM's running
    sequences hold their current context, the screen's mean over four shares of the output:
    contexts 2,049 + (2i + 1) x 2,047 // 8 = 2,304, 2,816, 3,328, 3,840 -> 144, 176, 208, 240
    blocks, mean 192 blocks = 3,072 tokens. The same KV budget R holds floor(R / bytes) of each."""
    kw = dict(layout=Layout(tp=4), concurrency=64)
    vllm = api.serve("llama3-70b", "h100", 2048, 2048, **kw).max_concurrency
    trt = api.serve("llama3-70b", "h100", 2048, 2048, engine="trtllm", **kw).max_concurrency
    per_token = 80 * (8 // 4) * 128 * 2 * 2
    mean, full = 3072 * per_token, 4096 * per_token
    low, high = vllm * mean, (vllm + 1) * mean  # the budget R: vllm = floor(R / mean)
    assert math.floor(low / full) <= trt <= math.floor((high - 1) / full)
    assert trt < vllm


def test_trtllm_concurrency_cap_is_its_max_batch_size():
    """trtllm-serve's --max_batch_size defaults to BuildConfig.max_batch_size = 2,048
    (tensorrt_llm/builder.py); the simulated engine runs at most that many."""
    run = api.serve("llama3-8b", "h100", 512, 64, qps=1, layout=Layout(tp=1), engine="trtllm", requests=50)
    assert run.max_num_seqs == 2048 and run.max_num_batched_tokens == 8192


# -- float32 checkpoints -----------------------------------------------------------------------


def test_a_float32_checkpoint_is_served_in_bf16_and_says_so(tmp_path):
    """google/gemma-2-9b's config.json says ``torch_dtype: float32``; servers load it in 16 bits
    (vLLM's dtype auto). The plan holds 16-bit weights and a note says so; a bf16 checkpoint has no
    such note."""
    config = json.loads((FIXTURES / "gemma-2-9b-it" / "config.json").read_text())
    config["torch_dtype"] = "float32"
    path = tmp_path / "gemma-2-9b" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config))
    fp32 = api.serve(str(path), "h100", 2048, 256, gpus=1, analytic=True)
    assert fp32.weight_bits == 16
    assert any(n.code == "serve.fp32_checkpoint" for n in fp32.conventions)
    bf16 = api.serve(str(FIXTURES / "gemma-2-9b-it" / "config.json"), "h100", 2048, 256, gpus=1, analytic=True)
    assert bf16.weight_bits == 16 and not any(n.code == "serve.fp32_checkpoint" for n in bf16.conventions)


# -- warnings ----------------------------------------------------------------------------------


def test_csv_keeps_the_does_not_fit_warning(cli):
    """One configuration evaluated past its KV cache (Llama-3-70B, TP2 on H100, 256 sequences)
    warns that it does not fit; --csv keeps the warning in its warnings column."""
    table = cli("serve", "llama3-70b", "--gpu", "h100", "--tp", "2", "--batch", "256")
    assert table.code == 0 and "does not fit" in table.out
    csv = cli("serve", "llama3-70b", "--gpu", "h100", "--tp", "2", "--batch", "256", "--csv")
    header, first = csv.out.splitlines()[:2]
    assert "warnings" in header.split(",") and "does not fit" in first


def test_a_saturated_plan_waiting_for_slots_is_warned_about():
    """Without a rate or a TTFT target a configuration saturated at 256 sequences makes each
    request wait for a slot: tens of seconds of TTFT, which the result warns about."""
    plan = api.serve("llama3-70b", "h100", 2048, 256, layout=Layout(tp=2), concurrency=256)
    assert plan.ttft_s > 10
    assert any(n.code == "warning.serve_ttft" and n.params["saturated"] for n in plan.conventions)


# -- the launch command ------------------------------------------------------------------------

#: Every flag of ``vllm serve``'s engine arguments, copied from vllm/engine/arg_utils.py at commit
#: 99d7eb5d (vLLM 0.11: its deprecations say "will be removed in v0.12.0"), EngineArgs.add_cli_args,
#: the model, parallel, cache and scheduler groups; booleans are BooleanOptionalAction (--x, --no-x).
VLLM_FLAGS = {
    "model": str, "runner": str, "convert": str, "tokenizer": str, "tokenizer-mode": str,
    "trust-remote-code": bool, "dtype": str, "seed": int, "hf-config-path": str, "revision": str,
    "max-model-len": int, "quantization": str, "enforce-eager": bool, "max-logprobs": int,
    "served-model-name": str, "generation-config": str, "load-format": str, "download-dir": str,
    "distributed-executor-backend": str, "pipeline-parallel-size": int, "tensor-parallel-size": int,
    "decode-context-parallel-size": int, "data-parallel-size": int, "data-parallel-size-local": int,
    "data-parallel-start-rank": int, "data-parallel-address": str, "enable-expert-parallel": bool,
    "enable-eplb": bool, "eplb-config": str, "max-parallel-loading-workers": int, "disable-custom-all-reduce": bool,
    "block-size": int, "gpu-memory-utilization": float, "kv-cache-memory-bytes": int, "swap-space": float,
    "kv-cache-dtype": str, "num-gpu-blocks-override": int, "enable-prefix-caching": bool,
    "prefix-caching-hash-algo": str, "cpu-offload-gb": float, "calculate-kv-scales": bool,
    "max-num-batched-tokens": int, "max-num-seqs": int, "max-num-partial-prefills": int,
    "max-long-partial-prefills": int, "long-prefill-token-threshold": int, "scheduling-policy": str,
    "enable-chunked-prefill": bool, "async-scheduling": bool, "cudagraph-capture-sizes": int,
}  # fmt: skip
#: kv-cache-dtype's choices at that commit (CacheDType in vllm/config/cache.py, as the parser takes them).
VLLM_KV_DTYPES = {"auto", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc"}
#: SGLang's flags the command uses: ServerArgs fields of python/sglang/srt/server_args.py @ 001067ff,
#: each field's flag its name with dashes (tp_size -> --tp-size).
SGLANG_FLAGS = {
    "model-path", "tp-size", "pp-size", "ep-size", "max-running-requests", "chunked-prefill-size",
    "mem-fraction-static", "kv-cache-dtype", "quantization", "context-length", "disable-radix-cache",
    "dp-size", "enable-dp-attention", "enable-eplb", "ep-num-redundant-experts", "nnodes", "node-rank",
}  # fmt: skip
#: trtllm-serve's click options, tensorrt_llm/commands/serve.py @ 4c05a748.
TRTLLM_FLAGS = {
    "tokenizer", "host", "port", "backend", "log_level", "max_beam_width", "max_batch_size",
    "max_num_tokens", "max_seq_len", "tp_size", "pp_size", "ep_size", "cluster_size", "gpus_per_node",
    "kv_cache_free_gpu_memory_fraction", "num_postprocess_workers", "trust_remote_code",
    "extra_llm_api_options", "reasoning_parser", "enable_chunked_prefill",
}  # fmt: skip


def _vllm_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vllm serve", allow_abbrev=False, exit_on_error=False)
    parser.add_argument("model_tag")
    for name, kind in VLLM_FLAGS.items():
        if kind is bool:
            parser.add_argument("-" * 2 + name, action=argparse.BooleanOptionalAction)
        else:
            parser.add_argument("-" * 2 + name, type=kind)
    return parser


def _names(argv: tuple[str, ...]) -> set[str]:
    return {a[2:] for a in argv if a.startswith("-" * 2)}


def test_the_emitted_vllm_command_parses_with_vllms_flags():
    """The plan of the issue's command, emitted for vLLM: ``vllm serve`` and the HF repo id the
    spec's source names, then flags that vLLM's parser (its flags copied above) accepts with
    the plan's own values: TP, max_num_seqs and max_num_batched_tokens of the simulated run."""
    plan = api.serve(
        "llama3-70b", "h100", 2048, 256, gpus=8, ttft_s="p99:2s", tpot_s="p90:50ms", usd_per_gpu_hour=2.5, emit="vllm"
    )
    launch = plan.launch
    assert launch.engine == ServingEngine.VLLM and "vLLM 0.15" in launch.version
    assert "vllm/engine/arg_utils.py" in launch.checked_against
    assert launch.argv[:3] == ("vllm", "serve", "meta-llama/Meta-Llama-3-70B")
    assert shlex.split(launch.command) == list(launch.argv)
    args = _vllm_parser().parse_args(list(launch.argv[2:]))
    run = plan.chosen
    assert args.tensor_parallel_size == run.layout.tp and args.pipeline_parallel_size == run.layout.pp
    assert args.max_num_seqs == run.max_num_seqs and args.max_num_batched_tokens == run.max_num_batched_tokens
    assert args.enable_chunked_prefill is run.chunked_prefill and args.kv_cache_dtype in VLLM_KV_DTYPES
    assert args.gpu_memory_utilization == 0.9 and launch.replicas == run.replicas


def test_sglang_and_trtllm_commands_use_only_their_flags():
    """The same plan emitted for SGLang and TensorRT-LLM names only flags of their parsers."""
    kw = dict(gpus=8, ttft_s="p99:2s", tpot_s="p90:50ms")
    sglang = api.serve("llama3-70b", "h100", 2048, 256, emit="sglang", **kw).launch
    assert sglang.argv[:3] == ("python", "-m", "sglang.launch_server") and _names(sglang.argv) <= SGLANG_FLAGS
    trt = api.serve("llama3-70b", "h100", 2048, 256, emit="trtllm", **kw).launch
    assert trt.argv[0] == "trtllm-serve" and _names(trt.argv) <= TRTLLM_FLAGS


def test_an_uneven_pipeline_is_launched_with_the_split_the_plan_weighed():
    """A helper's finding: DeepSeek-V3's 61 layers over 5 stages; the plan weighs 13, 12, 12, 12,
    12 (its first stage, with the 3 dense layers, takes the remainder), where vLLM's default
    (vllm/distributed/utils.py get_pp_indices) gives it to the last stage but one, 12, 12, 12, 13,
    12, a stage of MoE layers: a GPU fuller than any the plan weighed. The commands set the split
    through each engine's variable (VLLM_PP_LAYER_PARTITION, SGLANG_PP_LAYER_PARTITION), which sums
    to the config's num_hidden_layers; trtllm-serve, which takes none, gets a warning."""
    layout = api.Layout(tp=2, pp=5)
    for engine, variable in (("vllm", "VLLM_PP_LAYER_PARTITION"), ("sglang", "SGLANG_PP_LAYER_PARTITION")):
        argv = api.serve("deepseek-v3", "h100", 2048, 256, layout=layout, concurrency=8, emit=engine).launch.argv
        assert argv[0] == "env" and argv[1].startswith(variable + "=")
        split = [int(n) for n in argv[1].split("=")[1].split(",")]
        assert len(split) == 5 and sum(split) == 61 and split[0] == 13
    trt = api.serve("deepseek-v3", "h100", 2048, 256, layout=layout, concurrency=8, emit="trtllm").launch
    assert trt.argv[0] == "trtllm-serve" and any(n.code == "launch.layer_partition" for n in trt.conventions)
    even = api.serve("llama3-70b", "h100", 2048, 256, layout=api.Layout(tp=4, pp=2), concurrency=8, emit="vllm")
    assert even.launch.argv[0] == "vllm"  # 80 layers over 2 stages: the engines' own even split


def test_an_analytic_plan_emits_its_concurrency_and_chunk():
    """The analytic plan's chosen concurrency and chunk become max_num_seqs and
    max_num_batched_tokens."""
    plan = api.serve("llama3-70b", "h100", 2048, 256, gpus=8, analytic=True, emit="vllm")
    args = _vllm_parser().parse_args(list(plan.launch.argv[2:]))
    c = plan.chosen
    assert args.max_num_seqs == c.concurrency and args.tensor_parallel_size == c.layout.tp
    assert args.max_num_batched_tokens == (c.chunk_tokens or 8192)


def test_emit_prints_the_command_and_json_carries_it(cli):
    args = ["serve", "llama3-70b", "--gpu", "h100", "--gpus", "8", "--ttft", "p99:2s", "--tpot", "p90:50ms"]
    text = cli(*args, "--emit", "vllm")
    assert text.code == 0
    lines = text.out.strip().splitlines()
    assert lines[0].startswith("# vLLM 0.15") and lines[-1].startswith("vllm serve meta-llama/Meta-Llama-3-70B ")
    data = cli(*args, "--emit", "vllm", "--json").json()
    assert data["launch"]["command"] == lines[-1] and data["launch"]["argv"][:2] == ["vllm", "serve"]
    # the text points to the JSON for the plan's figures (a new user ran the plan twice to see both)
    assert "# the plan's figures and band: the same command with --json" in text.out
    assert data["chosen"]["layout"]["tp"] and data["output_tokens_per_s_per_gpu"] > 0


@pytest.mark.parametrize(
    ("model", "gpu", "weights", "repo"),
    [
        ("qwen3-235b-a22b", "h100", "fp8_block", "Qwen/Qwen3-235B-A22B-FP8"),  # Qwen's own FP8-block checkpoint
        ("qwen3-235b-a22b", "b200", "nvfp4", "nvidia/Qwen3-235B-A22B-NVFP4"),  # NVIDIA ModelOpt's NVFP4 one
        ("llama3-70b", "h100", "fp8_block", "meta-llama/Meta-Llama-3-70B"),  # none in the catalog: the note says so
    ],
)
def test_a_plan_priced_in_a_quantized_format_launches_that_checkpoint(cli, model, gpu, weights, repo):
    """A MoE user's FP8 plan emitted `vllm serve Qwen/Qwen3-235B-A22B` (the BF16 repo) with a note to
    find a quantized checkpoint: run as printed it would not realise the plan. Where the catalog
    holds the model's checkpoint in the planned format (its own quantization that format, the same
    shapes), the command serves that repo; where it does not, the BF16 repo and the note, as before."""
    argv = ["serve", model, "--gpu", gpu, "--tp", "8", "--batch", "64", "--input", "2K", "--output", "256",
            "--weights-dtype", weights, "--emit", "vllm"]  # fmt: skip
    run = cli(*argv)
    assert run.code == 0, run.err
    assert run.out.strip().splitlines()[-1].startswith(f"vllm serve {repo} ")
    noted = "the catalog's checkpoint of" in run.out
    assert noted == (repo != "meta-llama/Meta-Llama-3-70B")
    assert noted != ("which is not the plan's weights; serve a checkpoint stored in" in run.out)


@pytest.mark.parametrize(
    ("model", "gpu", "weights", "flag", "says"),
    [
        # openai/gpt-oss-120b is stored in MXFP4 (its quantization_config, quant_method mxfp4): an engine
        # refuses a --quantization that disagrees with it, so FP8 needs another checkpoint
        ("gpt-oss-120b", "b200", "fp8", None, "as stored (mxfp4), which is not the plan's weights"),
        # deepseek-ai/DeepSeek-V3 is stored in FP8 blocks of 128 x 128 (weight_block_size): as asked
        ("deepseek-v3", "h200", "fp8_block", None, None),
        # gpt-oss keeps attention in BF16 (modules_to_not_convert): the plan's MXFP4 everywhere is not it
        ("gpt-oss-120b", "b200", "mxfp4", None, "the checkpoint keeps its attention in bf16"),
        # a BF16 checkpoint: the engines' online FP8 (vLLM's --quantization fp8)
        ("llama3-70b", "h100", "fp8", "fp8", None),
    ],
)
def test_a_launch_names_a_format_only_where_the_engine_can_apply_it(cli, model, gpu, weights, flag, says):
    """An attacker: gpt-oss-120b planned at FP8 printed ``--quantization fp8`` over its MXFP4
    checkpoint (vLLM and SGLang refuse a method that disagrees with the checkpoint's config), and
    DeepSeek-V3 at its own FP8 blocks was told to find a checkpoint quantized so."""
    argv = ["serve", model, "--gpu", gpu, "--tp", "8", "--batch", "16", "--input", "2K", "--output", "256",
            "--weights-dtype", weights, "--emit", "vllm"]  # fmt: skip
    run = cli(*argv)
    assert run.code == 0, run.err
    command, comments = run.out.strip().splitlines()[-1].split(), run.out
    assert (command[command.index("--quantization") + 1] if "--quantization" in command else None) == flag
    assert (says in comments) if says else ("not the plan's weights" not in comments and "keeps its" not in comments)


def test_emit_without_a_plan_is_one_line_and_exit_2(cli):
    run = cli("serve", "llama3-70b", "--gpu", "h100", "--gpus", "8", "--ttft", "1ms", "--emit", "vllm")
    assert run.code == 2 and run.out == "" and len(run.err.strip().splitlines()) == 1


def test_a_refusal_says_it_was_judged_at_the_bands_slow_end_and_gives_the_nominal_figure():
    """``serve llama3-70b --gpu mi300x --gpus 8 --input 2K --output 256 --ttft p99:2s --tpot
    p90:50ms`` is refused: no candidate holds a 50 ms P90 TPOT at the band's slow end. A new user
    read "reaches 55.5 ms" as what the GPU reaches, where roofline predicts 14.0 ms at batch 1: the
    refusal says it is the slow end, with its step factor (the plan's band on a GPU the runs never
    measured, the same as that of a plan that passes on the GPU) and the figure at nominal step times:
    one sequence's decode steps, each the time model's decode step of batch 1 (``api.decode``) at a
    context from 2,048 to 2,303 tokens, about that at their middle, 2,176."""
    question = dict(gpus=8, ttft_s="p99:2s")
    with pytest.raises(api.LlmCostError) as refused:
        api.serve("llama3-70b", "mi300x", 2048, 256, tpot_s="p90:50ms", **question)
    message = str(refused.value)
    passing = api.serve("llama3-70b", "mi300x", 2048, 256, tpot_s="p90:200ms", **question)
    band = next(n for n in passing.conventions if n.code == "serve.band").params
    assert f"at the band's slow end, where plans are chosen, every step's time x{band['slow']:.2f}" in message
    assert "(widened: the measured runs used no mi300x)" in message
    step = api.decode("llama3-70b", "mi300x", batch=1, context=2176, layout=Layout(tp=8))
    nominal_ms = float(message.split("; ")[-1].split(" ms at nominal step times")[0])
    assert nominal_ms == pytest.approx(step.predicted_s * 1e3, rel=0.03)


def test_a_percentile_target_read_as_a_mean_says_what_would_judge_it():
    """The analytic forms read a percentile target as a bound on the mean and warn so. Of a single
    configuration the remedy is the simulated plan (leave out analytic); a disaggregated-only plan
    has no simulated form (the simulator runs aggregated replicas), so a new user told to "leave out
    analytic" could not: its warning says the percentiles are never judged and what would simulate."""
    from llm_cost.report.notes import sentence

    question = dict(gpus=16, ttft_s="p99:2s", tpot_s="p90:40ms")
    alone = api.serve("llama3-70b", "h100", 4096, 512, modes=["disaggregated"], **question)
    text = sentence(next(n for n in alone.conventions if n.code == "serve.percentile_screen"))
    assert "percentiles are never judged" in text and "search aggregated serving too (modes)" in text
    assert "leave out analytic" not in text
    one = api.serve("llama3-70b", "h100", 4096, 512, layout=Layout(tp=8), concurrency=8, analytic=True, **question)
    text = sentence(next(n for n in one.conventions if n.code == "serve.percentile_screen"))
    assert "leave out analytic to judge the percentiles themselves" in text


def test_the_heading_of_a_plan_that_reads_percentiles_as_means_says_so(cli):
    """A new user's trial: a disaggregated plan for a P90 TTFT and a P90 TPOT headed "targets: mean
    TTFT <= 2.00 s, mean TPOT <= 40.0 ms", the percentiles asked named only in a note 40 lines
    down. The heading names each percentile beside the mean it was read as; a mean target asked
    as a mean says nothing more."""
    argv = ["serve", "llama3.1-70b", "--gpus", "16", "--input", "8K", "--output", "512", "--mode", "disaggregated"]
    heading = " ".join(cli(*argv, "--ttft", "p90:2s", "--tpot", "40ms").out.split("\n  ")[0].split())
    assert "mean TTFT <= 2.00 s (a P90 target read as the mean), mean TPOT <= 40.0 ms;" in heading
    plain = " ".join(cli(*argv, "--ttft", "2s", "--tpot", "40ms").out.split("\n  ")[0].split())
    assert "mean TTFT <= 2.00 s, mean TPOT <= 40.0 ms;" in plain and "read as the mean" not in plain
