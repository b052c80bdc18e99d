"""Long-context decode on vLLM, out of source (issue 23, kept under issue 32's fit): the vLLM blog's
32K row predicted by the fit that never saw that post.

Source: the vLLM blog, "The State of FP8 KV-Cache and Attention Quantization in vLLM" (2026-04-22,
https://vllm-project.github.io/2026/04/22/fp8-kvcache.html; github.com/vllm-project/vllm-project.github.io
_posts/2026-04-22-fp8-kvcache.md). Llama-3.1-8B (Llama-3-8B's shapes), one H100, vLLM 0.19.1 with
FlashAttention-3, ``vllm bench serve`` at concurrency 1 with 128 output tokens, input lengths 256 to 125k;
the post fits the median inter-token latency as ``ITL = slope x input_len + intercept`` and prints, for the
BF16 KV cache, slope 4.37e-05 ms/token and intercept 6.44 ms. The row is shipped in
llm_cost/data/measurements/vllm-blog-fp8-kvcache-h100-long-context.yaml; the measured time is read from
that file, and worked out by hand here from the post's two printed numbers.
"""

from __future__ import annotations

import pytest

from llm_cost.analyses.calibration import validation
from llm_cost.analyses.measurements import load_measurements, measurements_dir

FILE = measurements_dir() / "vllm-blog-fp8-kvcache-h100-long-context.yaml"
ROW = "h100-vllm0191-l31-8b-b1-c32k-bf16kv"

#: The post's BF16 fit (ms/token, ms), as printed: "The fitted ITL slope drops from `4.37e-05` to
#: `2.37e-05` ms/token, while the intercept changes only from `6.44` to `6.58` ms."
SLOPE_MS_PER_TOKEN, INTERCEPT_MS = 4.37e-05, 6.44


def test_the_row_is_the_posts_fit_at_32k_worked_by_hand():
    """6.44 ms + 4.37e-05 ms/token x 32,768 tokens = 6.44 + 1.432 = 7.872 ms."""
    (m,) = [m for m in load_measurements([FILE]) if m.id == ROW]
    assert (m.gpu, m.batch, m.context, m.weights_dtype, m.kv_dtype, m.spec) == (
        "h100",
        1,
        32768,
        "bf16",
        "bf16",
        "llama3-8b",
    )
    assert m.measured_ms == pytest.approx(INTERCEPT_MS + SLOPE_MS_PER_TOKEN * 32768, abs=5e-4)


def test_vllm_h100_at_32k_without_the_post_is_within_15_percent():
    """The fit without the post (its leave-one-source-out fold) predicts the 32K step within 15%."""
    (r,) = [r for r in validation().results if r.id == ROW]
    assert abs(r.error) <= 0.15, r
    assert r.bound_s < r.measured_s
