"""The simulator at saturation against the shipped published serving runs (issue 32, item 5):
each run replayed (llm_cost.analyses.saturation_runs) with its formats and time model resolved as
``serve`` resolves them (llm_cost.api.choices), and compared on output tokens/s and ITL P50.
Nothing is fitted on these runs. About ten seconds of CPU.

    python scripts/check_saturation_runs.py [--markdown] [--fit-frontend] [--write-band]

``--write-band`` (re)writes ``llm_cost/data/saturation-band.json``, the calibration of ``serve``'s band
for a plan without a rate (the vLLM runs' ITL P50 measured / replayed).

``--fit-frontend`` fits, per engine, the API server's serial time per request (``EngineConfig``
``frontend_request_s``, 0 by default) on these runs, leaving each source out (twelve replays of
every run: a few minutes).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's llm_cost, not an installed copy
from llm_cost.analyses.saturation_runs import (
    FRONTEND_GRID_S,
    band_file_data,
    check_run,
    fit_frontend,
    load_runs,
    skipped_runs,
    summarise,
)
from llm_cost.analyses.serving_runs import SATURATION_BAND_FILE
from llm_cost.api.choices import saturation_formats


def main() -> None:
    runs = load_runs()
    check = summarise(runs, [check_run(r, saturation_formats(r)) for r in runs], skipped_runs())
    if "--write-band" in sys.argv:
        data = band_file_data(runs, check.runs, "scripts/check_saturation_runs.py --write-band")
        SATURATION_BAND_FILE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        lo, hi = data["percentiles"]
        held = data["held_out"]
        print(
            f"wrote {SATURATION_BAND_FILE} ({len(data['runs'])} runs: p{lo} {data[f'p{lo}']:.3f}, p{hi} "
            f"{data[f'p{hi}']:.3f}; held out by source {held['inside']} of {held['runs']})"
        )
    if "--markdown" in sys.argv:
        print(
            "| run | engine | model | GPU | layout | in/out | prompts | tok/s measured | predicted | ITL P50 measured | predicted |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r, c in zip(runs, check.runs):
            tok, itl = c.measured.get("output_tokens_per_s"), c.measured.get("itl_p50_ms")
            cells = [
                c.id, c.engine, c.model, c.gpu, c.layout, f"{r.input_tokens}/{r.output_tokens}",
                f"{r.num_prompts}" + (f" (concurrency {r.concurrency})" if r.concurrency else " (all at once)"),
                f"{tok:,.0f}", f"{c.predicted['output_tokens_per_s']:,.0f} ({c.error['output_tokens_per_s']:+.0%})",
                f"{itl:.1f} ms" if itl else "-",
                f"{c.predicted['itl_p50_ms']:.1f} ms ({c.error['itl_p50_ms']:+.0%})" if itl else "-",
            ]  # fmt: skip
            print("| " + " | ".join(cells) + " |")
    for name, medians in (
        ("all", check.median),
        ("MoE", check.median_moe),
        ("dense", check.median_dense),
        ("fixed-length", check.median_fixed_lengths),
        ("ShareGPT", check.median_sharegpt),
        *((f"{engine}-only", m) for engine, m in sorted(check.median_engine.items())),
    ):
        print(f"median |error| over {name} runs: " + ", ".join(f"{k} {v:.1%}" for k, v in medians.items()))
    print(f"{len(check.runs)} runs replayed; {check.skipped} not (data or expert parallel)")
    if "--fit-frontend" in sys.argv:
        frontend(runs)


def frontend(runs: list) -> None:
    """Print each engine's fitted API-server time per request and its out-of-source errors."""
    for engine in sorted({r.engine.value for r in runs}):
        mine = [r for r in runs if r.engine.value == engine]
        formats = [saturation_formats(r) for r in mine]
        checks = [[check_run(r, f, frontend_request_s=c) for r, f in zip(mine, formats)] for c in FRONTEND_GRID_S]
        fit = fit_frontend(mine, checks)
        folds = sorted(set(fit.folds_s.values()))
        print(
            f"{engine}: API server {fit.fitted_s * 1e3:.0f} ms a request on its {fit.runs} runs "
            f"(folds {', '.join(f'{v * 1e3:.0f}' for v in folds)} ms); median |error| with none: "
            + ", ".join(f"{k} {v:.1%}" for k, v in fit.median_none.items())
            + "; out of source: "
            + ", ".join(f"{k} {v:.1%}" for k, v in fit.median_out_of_source.items())
        )


if __name__ == "__main__":
    main()
