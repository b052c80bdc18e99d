"""How often the measured vLLM serving runs fall inside ``serve``'s error band (issue 23).

Usage: python scripts/check_serving_band.py [--leave-one-out]. Each experiment of
``llm_cost/data/measurements/serving/vllm-serving-under-load.yaml`` (real vLLM v0.15.1 runs,
inference-perf; see that file's ``about``) is replayed through ``llm_cost.serve`` as one
configuration (its layout, engine settings and a workload file of its stages, as
``scripts/check_serving_runs.py --commands`` writes them), with its band: the run re-simulated
with every step's time at the fast and the slow end of the band
(``llm_cost.analyses.simulated_serving.with_band``). Prints, per experiment, each measured figure
against [low, high] and the prediction, then per figure how many of the experiments' measured
values lie inside and the median band as multiples of the prediction.

On this path (vLLM, no profile) the band is the serving prediction's own spread on these same 18
runs: every step x the p10 and the p90 of the runs' mean ITL measured / predicted
(``llm_cost/data/serving-band.json``, ``scripts/check_serving_runs.py --write-band``). The
default pass is therefore IN-SAMPLE: each run helped draw the band it is checked against (the
simulator and its time model are fitted on none of them). ``--leave-one-out`` adds the honest
pass: each run re-simulated with the band drawn from the other 17 runs' ratios
(``llm_cost.analyses.serving_runs.vllm_serving_band(gpu, ratios)``, substituted for the shipped
ratios while that run's ``serve`` call runs).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from unittest import mock

import llm_cost
from llm_cost import Layout
from llm_cost.analyses import serving_runs
from llm_cost.analyses.serving_runs import Experiment, band_ratios, load_experiments, workload_file_text

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


def replay(e: Experiment, folder: Path):
    """The experiment through ``llm_cost.serve``, one configuration with its band."""
    path = folder / f"experiment-{e.id}.yaml"
    path.write_text(workload_file_text(e))
    return llm_cost.serve(
        e.spec,
        e.gpu,
        layout=Layout(tp=e.layout.tp),
        workload=str(path),
        max_num_seqs=e.entry["max_num_seqs"],
        chunk_tokens=e.entry["max_num_batched_tokens"],
        max_model_len=e.entry["max_model_len"],
        gpu_memory_utilization=e.entry["gpu_mem_util"],
    )


def check(leave_one_out: bool) -> None:
    """One pass over the experiments: in-sample (the shipped band) or each with its band from the
    other runs."""
    folder = Path(tempfile.mkdtemp(prefix="llm-cost-band-"))
    inside = {k: 0 for k in FIGURES}
    widths: dict[str, list[tuple[float, float]]] = {k: [] for k in FIGURES}
    shipped = band_ratios()
    ids = [r["id"] for r in _rows()]
    kind = "leave-one-out" if leave_one_out else "in-sample"
    print(f"-- {kind}: " + ("each run's band from the other runs' ratios" if leave_one_out else "the shipped band"))
    for e in load_experiments():
        if leave_one_out:
            others = tuple(x for i, x in zip(ids, shipped) if i != e.id)
            with mock.patch.object(serving_runs, "band_ratios", lambda others=others: others):
                r = replay(e, folder)
        else:
            r = replay(e, folder)
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
        b = r.band
        src = "no band" if b is None else f"{b.source}: x{b.fast_low:.3f}..x{b.slow_high:.3f}, {b.profile}"
        print(f"{e.label} ({src}): " + "; ".join(cells))
    for key in FIGURES:
        if widths[key]:
            low = statistics.median(w[0] for w in widths[key])
            high = statistics.median(w[1] for w in widths[key])
            print(
                f"{kind} {key}: {inside[key]} of {len(widths[key])} measured inside the band; median band "
                f"x{low:.2f} to x{high:.2f} of the prediction"
            )


def _rows() -> list[dict]:
    import json

    return json.loads(serving_runs.BAND_FILE.read_text(encoding="utf-8"))["runs"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leave-one-out", action="store_true", help="also each run with its band from the others")
    args = parser.parse_args()
    check(False)
    if args.leave_one_out:
        check(True)


if __name__ == "__main__":
    main()
