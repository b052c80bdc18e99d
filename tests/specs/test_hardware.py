"""The shipped GPU specs against the verified datasheet table (tests/data/gpus-datasheet.json,
dense peaks from NVIDIA/AMD datasheets and whitepapers, with their URLs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_cost.specs.load import gpu_names, load_gpu

TABLE = {
    g["name"]: g
    for g in json.loads((Path(__file__).resolve().parents[1] / "data" / "gpus-datasheet.json").read_text())["gpus"]
}


@pytest.mark.parametrize("name", [n for n in gpu_names() if load_gpu(n).display_name in TABLE])
def test_gpu_matches_datasheet(name):
    gpu = load_gpu(name)
    row = TABLE[gpu.display_name]
    dense = row["dense_tflops"]
    for dtype, tflops in gpu.dense_tflops.items():
        expected = (
            dense.get("fp64_tensor") or dense.get("fp64_matrix") or dense["fp64"] if dtype == "fp64" else dense[dtype]
        )
        assert tflops == expected, (name, dtype)
    assert {d for d, v in dense.items() if v and d in ("bf16", "fp16", "fp8", "int8", "fp4")} <= set(gpu.dense_tflops)
    assert gpu.memory_gb == row["memory_gb"]
    assert gpu.memory_bandwidth_tb_s == row["memory_bw_tbps"]
    assert gpu.tdp_w == row["tdp_w"]
    assert gpu.interconnect.bandwidth_gb_s_per_direction == row["interconnect"]["bw_gbps"] / 2


def test_no_fp8_on_ampere():
    """The A100 has no FP8 tensor cores (GenZ's known mistake runs FP8 on it)."""
    assert "fp8" not in load_gpu("a100").dense_tflops and "fp8" not in load_gpu("a100-40gb").dense_tflops


@pytest.mark.parametrize("value", ['"132"', "true", "132.0"])
def test_an_sm_count_that_is_not_a_whole_number_is_refused(tmp_path, value):
    """An attack: ``sm_count: "989"`` and ``sm_count: true`` were read as 989 and 1 where every
    other numeric field of a GPU refuses text and booleans."""
    from llm_cost import LlmCostError

    text = (Path(__file__).resolve().parents[2] / "hardware" / "h100.yaml").read_text()
    path = tmp_path / "h100.yaml"
    path.write_text(
        "\n".join(f"sm_count: {value}" if line.startswith("sm_count:") else line for line in text.splitlines())
    )
    with pytest.raises(LlmCostError, match="field sm_count: Input should be a valid integer"):
        load_gpu(str(path))
