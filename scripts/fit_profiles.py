"""Regenerate the shipped calibration profiles (llm_cost/data/profiles/*.yaml).

Also writes the profiles' index, llm_cost/perf/profile_index.py (their validated content, read without
pydantic or a YAML parser).

Fitted: h200 on the project's H200 measurements (PyTorch eager kernels in CUDA graphs), a100 on the
gpt-fast (torch.compile) A100 rows, single-GPU and TP 2/4/8. Every other shipped GPU: transferred
from the nearest fitted one (Hopper/Blackwell/CDNA3 HBM parts from h200; Ampere and Ada from a100).

    python scripts/fit_profiles.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's llm_cost, not an installed copy
from llm_cost.analyses.calibration import calibrate, profile_yaml, transfer
from llm_cost.perf.profile import build_profile_index, profile_index_source, profiles_dir
from llm_cost.specs.load import gpu_names, load_gpu

DATA = Path(__file__).resolve().parent.parent / "llm_cost" / "data" / "measurements"
INDEX = Path(__file__).resolve().parent.parent / "llm_cost" / "perf" / "profile_index.py"

FITTED = {
    "h200": (
        ["local-h200-llama3-8b-measured.yaml"],
        "fitted on the project's H200 measurements of a Llama-3-8B shape: PyTorch eager kernels, each decode "
        "step in one CUDA graph, SDPA attention without split-KV; decode batch 1-256, prefill 1K-32K",
    ),
    "a100": (
        ["local-a100-gpt-fast-decode.yaml", "gpt-fast-readme-tp-quant-mixtral.yaml"],
        "fitted on gpt-fast (torch.compile) decode at batch 1 on A100-80GB SXM capped at 330 W: Llama-2/3 "
        "7B-405B and Mixtral, bf16, int8 and int4 (G=32) weights, TP 1-8; batch 1 only, so the GEMM ramp, "
        "attention and overlap terms are at their priors",
    ),
}
NEAREST = {
    "h100": "h200",
    "h100-pcie": "h200",
    "b200": "h200",
    "mi300x": "h200",
    "a100-40gb": "a100",
    "l40s": "a100",
    "rtx-4090": "a100",
    "h800": "h200",
    "h20": "h200",
    "gb200": "h200",
    "b300": "h200",
    "gb300": "h200",
    "mi325x": "h200",
    "mi355x": "h200",
    "a800": "a100",
    "l4": "a100",
    "a10": "a100",
    "rtx-3090": "a100",
    "rtx-3090-ti": "a100",
    "rtx-5090": "a100",
    "rtx-pro-6000": "a100",
}


def main() -> None:
    out = profiles_dir()
    fitted = {}
    for gpu, (files, note) in FITTED.items():
        fitted[gpu] = calibrate([DATA / f for f in files], gpu, note).profile
        (out / f"{gpu}.yaml").write_text(profile_yaml(fitted[gpu]))
    for gpu in gpu_names():
        if gpu not in fitted:
            source = NEAREST[gpu]
            (out / f"{gpu}.yaml").write_text(profile_yaml(transfer(fitted[source], load_gpu(gpu), load_gpu(source))))
    INDEX.write_text(profile_index_source(build_profile_index()), encoding="utf-8")


if __name__ == "__main__":
    main()
