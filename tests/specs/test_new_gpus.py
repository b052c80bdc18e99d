"""The GPUs added for issue 23 against what their vendors print, restated here: tensor peaks as
printed (often with 2:4 sparsity, or as a rack or 8-GPU total) and divided down; peaks again
from SM or CU counts x clock x per-SM rate; bandwidth from bus width x data rate; capacity from
HBM stacks or memory chips; NVLink/xGMI per direction from the printed bidirectional total; the
ridge point (FLOP per byte where decode turns compute-bound) from the printed figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_cost.specs.load import gpu_names, load_gpu

# name: {dtype: (printed TFLOP/s, divisor)}; divisor = 2 for a figure printed with sparsity, x72 for an
# NVL72 rack total, x8 for an HGX 8-GPU total. Sources are the ones each YAML cites.
PRINTED = {
    # NVIDIA H800 datasheet, SXM: BF16 1,979*, FP8 3,958* (with sparsity); FP64 1 TF.
    "h800": {"bf16": (1979, 2), "fp8": (3958, 2), "fp64": (1, 1)},
    # NVIDIA H20 sheet: FP16/BF16 148, FP8 296, INT8 296, TF32 74, FP32 44, FP64 1 (no sparsity mark).
    "h20": {"bf16": (148, 1), "fp8": (296, 1), "int8": (296, 1), "tf32": (74, 1), "fp32": (44, 1)},
    # NVIDIA A800 datasheet, 80GB SXM: BF16 624*, INT8 1,248*, TF32 312*.
    "a800": {"bf16": (624, 2), "int8": (1248, 2), "tf32": (312, 2)},
    # NVIDIA L4 datasheet: FP16 242*, FP8 485*.
    "l4": {"fp16": (242, 2), "fp8": (485, 2)},
    # NVIDIA A10 datasheet: BF16 250*, INT8 500*, INT4 1,000*, TF32 125*.
    "a10": {"bf16": (250, 2), "int8": (500, 2), "int4": (1000, 2), "tf32": (125, 2)},
    # GA102 whitepaper, RTX 3090: FP16 (FP32 acc.) 142 sparse, FP16 (FP16 acc.) 284 sparse, INT8 568 sparse.
    "rtx-3090": {"fp16": (142, 2), "fp16_fp16acc": (284, 2), "int8": (568, 2)},
    # RTX Blackwell whitepaper, RTX 5090: FP16 (FP16 acc.) 838 sparse; FP4 3,352 AI TOPS (sparse).
    "rtx-5090": {"fp16_fp16acc": (838, 2), "fp4": (3352, 2)},
    # RTX PRO 6000 Blackwell datasheet: 4,000 AI TOPS (FP4, sparse); FP32 125.
    "rtx-pro-6000": {"fp4": (4000, 2), "fp32": (125, 1)},
    # GB200 NVL72 (72 GPUs), with sparsity: FP4 1,440 PF, FP8 720 PF, BF16 360 PF, TF32 180 PF.
    "gb200": {"fp4": (1_440_000, 144), "fp8": (720_000, 144), "bf16": (360_000, 144), "tf32": (180_000, 144)},
    # HGX B300 (8 GPUs): FP4 105 PF dense; FP8 72 PF*, FP16/BF16 36 PF*, TF32 18 PF*; FP32 600 TF; FP64 10 TF.
    "b300": {
        "fp4": (105_000, 8),
        "fp8": (72_000, 16),
        "bf16": (36_000, 16),
        "tf32": (18_000, 16),
        "fp32": (600, 8),
        "fp64": (10, 8),
    },
    # GB300 NVL72 (72 GPUs): FP4 1,080 PF dense; FP8 720 PF*, BF16 360 PF*, TF32 180 PF*.
    "gb300": {"fp4": (1_080_000, 72), "fp8": (720_000, 144), "bf16": (360_000, 144), "tf32": (180_000, 144)},
    # AMD MI325X datasheet, with structured sparsity: FP8 5,229.8, FP16 2,614.9.
    "mi325x": {"fp8": (5229.8, 2), "fp16": (2614.9, 2)},
    # AMD MI355X: FP4/FP6 20.1 PFLOPS peak (with sparsity).
    "mi355x": {"fp4": (20_100, 2)},
}

# name: (units, FLOP per clock per unit (dense), clock GHz, dtype). GA10x SM: 4 tensor cores x 128 FP16
# FMA/clock with FP16 accumulate (GA102 whitepaper); Ada and GeForce Blackwell SMs the same per clock.
# CDNA 3 CU: 4,096 dense FP8 FLOP/clock, CDNA 4 CU: 8,192 (AMD at ISSCC 2026); MI300-series and MI355X
# peak engine clocks 2.1 and 2.4 GHz; SM counts and boost clocks from the vendors' spec pages.
PER_UNIT = {
    "rtx-3090": (82, 1024, 1.695, "fp16_fp16acc"),
    "rtx-3090-ti": (84, 1024, 1.86, "fp16_fp16acc"),
    "rtx-5090": (170, 1024, 2.407, "fp16_fp16acc"),
    "a10": (72, 1024, 1.695, "fp16"),
    "mi325x": (304, 4096, 2.1, "fp8"),
    "mi355x": (256, 8192, 2.4, "fp8"),
}

# name: (bus bits, Gbps per pin) for GDDR parts, or (HBM stacks, TB/s printed) -> bandwidth TB/s.
GDDR_BUS = {
    "rtx-3090": (384, 19.5),
    "rtx-3090-ti": (384, 21),
    "rtx-5090": (512, 28),
    "rtx-pro-6000": (512, 28),
    "a10": (384, 12.5),
    "l4": (192, 12.5),
}
# Bandwidth printed as a total over several GPUs: (TB/s, GPUs).
SHARED_BANDWIDTH = {"gb200": (576, 72), "gb300": (576, 72), "b300": (64, 8)}

# name: (parts, GiB per part): HBM stacks or GDDR chips (a 16 Gb chip is 2 GiB). Memory a
# deployment sees may be less than the DRAM (B300, GB300); then the second entry is that figure.
DRAM = {
    "h800": (5, 16),
    "h20": (6, 16),
    "a800": (5, 16),
    "l4": (12, 2),
    "a10": (12, 2),
    "rtx-3090": (24, 1),
    "rtx-3090-ti": (12, 2),
    "rtx-5090": (16, 2),
    "rtx-pro-6000": (32, 3),
    "mi325x": (8, 32),
    "mi355x": (8, 36),
    "gb200": (8, 24),
    "b300": (8, 36),
    "gb300": (8, 36),
}

# name: (printed bidirectional GB/s per GPU, GPUs in the NVLink/xGMI domain); 0 for PCIe-only cards.
LINKS = {
    "h800": (400, 8),
    "h20": (900, 8),
    "a800": (400, 8),
    "l4": (0, 1),
    "a10": (0, 1),
    "rtx-3090": (112.5, 2),
    "rtx-3090-ti": (112.5, 2),
    "rtx-5090": (0, 1),
    "rtx-pro-6000": (0, 1),
    "gb200": (1800, 72),
    "b300": (1800, 8),
    "gb300": (1800, 72),
    "mi325x": (7 * 128, 8),
    "mi355x": (7 * 153.6, 8),
}

NEW = sorted(DRAM)


def test_every_gpu_is_checked_against_a_datasheet():
    """Each shipped GPU is in the datasheet table (test_hardware.py) or restated here."""
    table = json.loads((Path(__file__).resolve().parents[1] / "data" / "gpus-datasheet.json").read_text())
    in_table = {g["name"] for g in table["gpus"]}
    assert {n for n in gpu_names() if load_gpu(n).display_name not in in_table} <= set(NEW)
    assert set(NEW) <= set(gpu_names())


@pytest.mark.parametrize("name", sorted(PRINTED))
def test_peaks_are_the_printed_figures_divided_down(name):
    gpu = load_gpu(name)
    for dtype, (printed, divisor) in PRINTED[name].items():
        assert gpu.dense_tflops[dtype] == pytest.approx(printed / divisor, rel=2e-3), (name, dtype)


@pytest.mark.parametrize("name", sorted(PER_UNIT))
def test_peaks_are_units_times_clock_times_rate(name):
    units, flop_per_clock, ghz, dtype = PER_UNIT[name]
    assert load_gpu(name).peak_flops(dtype) == pytest.approx(units * flop_per_clock * ghz * 1e9, rel=5e-3)


@pytest.mark.parametrize("name", NEW)
def test_capacity_is_the_dram_or_less(name):
    """memory_gib, the capacity the card reports (nvidia-smi, rocm-smi), is at most the stacks' or
    chips' sum and more than 90% of it (what ECC, the driver and the firmware keep)."""
    parts, gib = DRAM[name]
    gpu = load_gpu(name)
    assert 0.9 * parts * gib < gpu.memory_gib <= parts * gib


@pytest.mark.parametrize("name", sorted(GDDR_BUS) + sorted(SHARED_BANDWIDTH))
def test_bandwidth_is_bus_times_rate(name):
    if name in GDDR_BUS:
        bits, gbps = GDDR_BUS[name]
        expected = bits * gbps / 8 * 1e9
    else:
        total_tb_s, gpus = SHARED_BANDWIDTH[name]
        expected = total_tb_s / gpus * 1e12
    assert load_gpu(name).bandwidth_bytes_s == pytest.approx(expected, rel=1e-3)


@pytest.mark.parametrize("name", NEW)
def test_link_is_half_the_printed_bidirectional_total(name):
    bidirectional, domain = LINKS[name]
    link = load_gpu(name).interconnect
    assert link.bandwidth_gb_s_per_direction == pytest.approx(bidirectional / 2)
    assert link.gpus_per_node == domain


@pytest.mark.parametrize("name", ["rtx-3090", "rtx-3090-ti", "rtx-4090", "rtx-5090"])
def test_geforce_fp16_accumulate_is_twice_the_fp32_accumulate_rate(name):
    """GeForce tensor cores run FP16 x FP16 with FP16 accumulate at 2x the FP32-accumulate rate."""
    peaks = load_gpu(name).dense_tflops
    assert peaks["fp16_fp16acc"] == pytest.approx(2 * peaks["fp16"], rel=2e-3)


def test_professional_and_datacenter_cards_list_no_separate_fp16_accumulate_rate():
    """A data-center or workstation card accumulates in FP32 at the full rate: no faster FP16 path."""
    for name in NEW:
        if not name.startswith("rtx-3090") and name != "rtx-5090":
            assert "fp16_fp16acc" not in load_gpu(name).dense_tflops, name


@pytest.mark.parametrize(
    "name,ridge",
    [
        ("h20", 148 / 4.0),  # 148 TFLOP/s over 4.0 TB/s: 37 FLOP/B, the H100's (989.4/3.35) is 295
        ("l4", 242 / 2 / 0.3),  # 403 FLOP/B: decode is memory-bound far past batch 1
        ("rtx-3090", 142 / 2 / 0.936),
        ("rtx-5090", 838 / 4 / 1.792),  # BF16 with FP32 accumulate: half the FP16-accumulate 419
        ("mi355x", 20_100 / 8 / 8.0),  # BF16 = FP4 / 4; sparse / 2
        ("gb300", 360_000 / 144 / 8.0),
    ],
)
def test_ridge_point_from_the_printed_figures(name, ridge):
    gpu = load_gpu(name)
    assert gpu.peak_flops("bf16") / gpu.bandwidth_bytes_s == pytest.approx(ridge, rel=5e-3)


def test_blackwell_fp4_peaks_and_no_int8_or_tf32_where_cut():
    """Blackwell FP4 (NVFP4/MXFP4) is 2x FP8 on B200-class parts and 3x (2.9x on HGX B300) on Blackwell
    Ultra, whose INT8 is cut; CDNA 4 has no TF32 matrix path."""
    for name, ratio in (("gb200", 2), ("rtx-pro-6000", 2), ("gb300", 3), ("b300", 105 / 36)):
        peaks = load_gpu(name).dense_tflops
        assert peaks["fp4"] == pytest.approx(ratio * peaks["fp8"], rel=2e-3), name
    assert "int8" not in load_gpu("b300").dense_tflops and "int8" not in load_gpu("gb300").dense_tflops
    assert "tf32" not in load_gpu("mi355x").dense_tflops
