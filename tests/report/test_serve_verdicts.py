"""A rejected candidate says why where it is rejected: its verdict names the upper end of the
sampling interval that missed the target (a new user read "26.0 ms ... no: tpot_s p90" against a
30 ms target as a contradiction: the row shows the point value, the verdict uses the interval)."""

from __future__ import annotations

import re

from llm_cost import api
from llm_cost.core.units import parse_duration

ARGV = ["serve", "llama3-8b", "--gpu", "h100", "--qps", "20", "--input", "2K", "--output", "256"]


def test_each_missed_target_shows_the_interval_end_beyond_it(cli):
    r = cli(*ARGV, "--ttft", "p99:1s", "--tpot", "p90:30ms")
    assert r.code == 0
    missed = re.findall(r"no: tpot_s p90 to ([\d.]+ m?s)", r.out)
    assert missed, "the plan's candidates include one that misses TPOT P90 on the pessimistic side"
    assert all(parse_duration(m.replace(" ", ""), "verdict") > 0.030 for m in missed)
    plan = api.serve("llama3-8b", "h100", "2K", 256, qps=20, ttft_s="p99:1s", tpot_s="p90:30ms")
    ends = sorted(c.percentiles["tpot_s"].ci["p90"][1] for c in plan.simulated if c.violates_upper)
    assert len(ends) == len(missed) and all(e > 0.030 for e in ends)
