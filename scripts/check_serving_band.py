"""How often the measured vLLM serving runs fall inside ``serve``'s error band (issue 23).

Usage: python scripts/check_serving_band.py. Each experiment of
``llm_cost/data/measurements/serving/vllm-serving-under-load.yaml`` (real vLLM v0.15.1 runs,
inference-perf; see that file's ``about``) is replayed through ``llm_cost.serve`` as one
configuration (its layout, engine settings and a workload file of its stages, as
``scripts/check_serving_runs.py --commands`` writes them), with its band: the run re-simulated
at the fast and the slow end of the profile's step-time band
(``llm_cost.analyses.simulated_serving.with_band``). Prints, per experiment, each measured figure
against [low, high] and the prediction, then per figure how many of the experiments' measured
values lie inside and the median band as multiples of the prediction. Nothing is fitted on these
runs: the band comes from the profiles' own leave-one-out residuals.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import llm_cost
from llm_cost import Layout
from llm_cost.analyses.serving_runs import load_experiments, workload_file_text

#: Measured key (milliseconds) -> the run's (low, predicted, high) seconds.
FIGURES = {
    "itl_mean": lambda r: (r.tpot_low_s, r.tpot_s, r.tpot_high_s),
    "e2e_mean": lambda r: (r.e2e_low_s, r.e2e_s, r.e2e_high_s),
    "ttft_mean": lambda r: (r.ttft_low_s, r.ttft_s, r.ttft_high_s),
    "ttft_p99": lambda r: (
        r.percentiles["ttft_s"].p99_low_s,
        r.percentiles["ttft_s"].p99,
        r.percentiles["ttft_s"].p99_high_s,
    ),
    "e2e_p99": lambda r: (
        r.percentiles["e2e_s"].p99_low_s,
        r.percentiles["e2e_s"].p99,
        r.percentiles["e2e_s"].p99_high_s,
    ),
}


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="llm-cost-band-"))
    inside = {k: 0 for k in FIGURES}
    widths: dict[str, list[tuple[float, float]]] = {k: [] for k in FIGURES}
    for e in load_experiments():
        path = folder / f"experiment-{e.id}.yaml"
        path.write_text(workload_file_text(e))
        r = llm_cost.serve(
            e.spec,
            e.gpu,
            layout=Layout(tp=e.layout.tp),
            workload=str(path),
            max_num_seqs=e.entry["max_num_seqs"],
            chunk_tokens=e.entry["max_num_batched_tokens"],
            max_model_len=e.entry["max_model_len"],
            gpu_memory_utilization=e.entry["gpu_mem_util"],
        )
        measured = e.entry["measured"]["summary"]["measured_ms"]
        cells = []
        for key, of in FIGURES.items():
            if key not in measured:
                continue
            low, value, high = of(r)
            m = measured[key] / 1e3
            ok = low <= m <= high
            inside[key] += ok
            widths[key].append((low / value, high / value))
            cells.append(
                f"{key} {m * 1e3:.1f} ms in [{low * 1e3:.1f}, {high * 1e3:.1f}] (predicted {value * 1e3:.1f})"
                + ("" if ok else " OUTSIDE")
            )
        print(f"{e.label} ({r.band.profile if r.band else 'no band'}): " + "; ".join(cells))
    for key in FIGURES:
        if widths[key]:
            low = statistics.median(w[0] for w in widths[key])
            high = statistics.median(w[1] for w in widths[key])
            print(
                f"{key}: {inside[key]} of {len(widths[key])} measured inside the band; median band "
                f"x{low:.2f} to x{high:.2f} of the prediction"
            )


if __name__ == "__main__":
    main()
