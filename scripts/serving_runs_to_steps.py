"""Write the mixed decode steps the shipped vLLM serving runs imply, as step-time rows
(llm_cost/data/measurements/inference-sim-vllm-serving-steps.yaml), so that the time model is fitted
on vLLM V1 at the batches it serves (issue 32, item 5), with the same source checked held out.

Each stage of each run of llm_cost/data/measurements/serving/vllm-serving-under-load.yaml (real vLLM
v0.15.1 runs under Poisson load, inference-sim's sim-to-real benchmark) becomes one row, in the means:

* the step time: the stage's mean ITL (the file's definition: (E2E - TTFT) / (output - 1), the mean
  time between a request's tokens, i.e. the mean step while it decodes);
* the sequences decoding in a step: Little's law, N = rate x (E2E - TTFT) (requests arrive at
  ``rate_rps`` and each decodes for E2E - TTFT seconds), rounded;
* their context: the prompt (system prompt + question) plus half the output, the mean over a
  request's decode steps;
* the prompt tokens computed beside them (chunked prefill): rate x question tokens x ITL per step
  (new prompt tokens arrive at rate x question per second; the shared system prompts are cached, as
  the runs file assumes), after the system prompt's tokens cached.

Usage: python scripts/serving_runs_to_steps.py (then python scripts/fit_profiles.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "llm_cost" / "data" / "measurements" / "serving" / "vllm-serving-under-load.yaml"
OUT = ROOT / "llm_cost" / "data" / "measurements" / "inference-sim-vllm-serving-steps.yaml"
GPUS = {"H100": "h100", "A100-80GB": "a100", "L40S": "l40s"}


def rows() -> list[dict]:
    data = yaml.safe_load(RUNS.read_text(encoding="utf-8"))
    out = []
    for e in data["experiments"]:
        w = e["workload"]
        for st in e["measured"]["stages"]:
            itl_ms, e2e_ms, ttft_ms = (st["measured_ms"][k] for k in ("itl_mean", "e2e_mean", "ttft_mean"))
            rate = st["rate_rps"]
            batch = max(1, round(rate * (e2e_ms - ttft_ms) / 1e3))
            output = st.get("output_len_mean_derived") or w["output_len"]
            prompt = w["system_prompt_len"] + w["question_len"]
            chunk = max(0, round(rate * w["question_len"] * itl_ms / 1e3))
            out.append(
                {
                    "id": f"infsim-{e['id']}-stage{st['index']}",
                    "model": e["model"],
                    "gpu": GPUS[e["hardware"]],
                    "phase": "decode",
                    "batch": batch,
                    "context": round(prompt + output / 2),
                    "prefill_tokens": chunk,
                    "prefill_cached": w["system_prompt_len"] if chunk else 0,
                    "tp": e["tp"],
                    "weights_dtype": "fp16" if e["precision"] == "FP16" else "bf16",
                    "kv_dtype": "fp16" if e["precision"] == "FP16" else "bf16",
                    "compute_dtype": "fp16" if e["precision"] == "FP16" else "bf16",
                    "measured_ms": itl_ms,
                    "engine": f"vLLM {e['vllm_version']}",
                    "quote": (
                        f"experiment {e['id']} ({e['folder']}), stage {st['index']}: rate {rate} req/s, measured_ms "
                        f"e2e_mean {e2e_ms}, ttft_mean {ttft_ms}, itl_mean {itl_ms}; workload {w['name']}: system prompt "
                        f"{w['system_prompt_len']}, question {w['question_len']}, output {output}"
                    ),
                    "derivation": (
                        f"step = mean ITL {itl_ms} ms; decoding sequences N = {rate} x ({e2e_ms} - {ttft_ms}) ms = "
                        f"{rate * (e2e_ms - ttft_ms) / 1e3:.1f} -> {batch}; context = {prompt} + {output}/2; prompt "
                        f"tokens per step = {rate} x {w['question_len']} x {itl_ms} ms = {chunk} after the "
                        f"{w['system_prompt_len']}-token system prompt cached (scripts/serving_runs_to_steps.py)"
                    ),
                }
            )
    return out


def main() -> None:
    data = yaml.safe_load(RUNS.read_text(encoding="utf-8"))
    header = {
        "models": data["models"] | {k: v.replace("../models/", "models/") for k, v in data["models"].items()},
        "source_id": "inference-sim sim-to-real accuracy benchmark (vLLM v0.15.1 under load)",
        "source": "https://github.com/inference-sim/sim-to-real-accuracy-validation (the runs of serving/vllm-serving-under-load.yaml)",
        "retrieved": "2026-12-02",
        "engine_family": "vllm",
        "engine": "vLLM 0.15.1",
        "notes": (
            "Mixed decode steps implied by the shipped vLLM v0.15.1 serving runs under Poisson load, one row per stage "
            "(written by scripts/serving_runs_to_steps.py from serving/vllm-serving-under-load.yaml; see that script "
            "for the derivation: mean ITL, Little's law for the decoding sequences, the mean context, the prompt "
            "tokens per step)."
        ),
    }
    text = yaml.safe_dump(header | {"rows": rows()}, sort_keys=False, width=110)
    OUT.write_text("# Generated by scripts/serving_runs_to_steps.py; do not edit.\n" + text, encoding="utf-8")
    print(f"wrote {OUT} ({len(rows())} rows)")


if __name__ == "__main__":
    sys.exit(main())
