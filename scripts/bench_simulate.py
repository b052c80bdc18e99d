"""Time of one simulated engine replica (issue 22's target: thousands of requests well under a second).

Usage: PYTHONPATH=. python scripts/bench_simulate.py [--runs R]. For each case, prints the best of
R runs: requests, engine steps, distinct step shapes timed, and the wall time with a cold step
memo (each case builds its own) and warm (the same case again with the memo kept).
"""

from __future__ import annotations

import argparse
import time

from llm_cost.core.types import Engine
from llm_cost.perf.choose import time_model_for
from llm_cost.simulate import EngineConfig, LogNormal, SharedPrefix, StepTimer, poisson, simulate
from llm_cost.simulate.engine import run_engine
from llm_cost.simulate.workload import Fixed, OpenLoop, Stage, Workload, requests, stage_bounds
from llm_cost.specs.load import load_gpu, load_model

CASES = {
    "llama3-8b H100, Poisson 10/s, lognormal 1K/256, 2,000 requests": poisson(
        10.0, LogNormal(1024, 512), LogNormal(256, 128), requests=2000
    ),
    "llama3-8b H100, Poisson 20/s, chat 547/248 with 9 shared prompts, 5,000 requests": poisson(
        20.0, Fixed(547), Fixed(248), requests=5000, prefix=SharedPrefix(9, 100, 5)
    ),
    "llama3-8b H100, 8/s then 20/s for 600 s each (16,800 requests, validation exp 16)": Workload(
        OpenLoop((Stage(600, 8.0), Stage(600, 20.0)), "fixed_count"), Fixed(547), Fixed(248), SharedPrefix(9, 100, 5)
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    spec, gpu = load_model("llama3-8b"), load_gpu("h100")
    model = time_model_for(load_gpu("h100"), Engine.VLLM)
    engine = EngineConfig(max_num_seqs=256, max_num_batched_tokens=2048)
    for name, workload in CASES.items():
        cold = warm = float("inf")
        for _ in range(args.runs):
            start = time.perf_counter()
            result = simulate(spec, gpu, workload, engine, model, kv_capacity_tokens=400_000)
            cold = min(cold, time.perf_counter() - start)
        timer = StepTimer(spec, gpu, model)
        reqs, bounds = requests(workload), stage_bounds(workload)
        run_engine(timer, engine, 25_000, reqs, bounds=bounds)
        for _ in range(args.runs):
            start = time.perf_counter()
            run_engine(timer, engine, 25_000, reqs, bounds=bounds)
            warm = min(warm, time.perf_counter() - start)
        print(
            f"{name}\n  {result.summary.requests:,} requests, {result.steps:,} steps, "
            f"{result.step_shapes} step shapes: {cold:.3f} s cold, {warm:.3f} s with the step memo warm"
        )


if __name__ == "__main__":
    main()
