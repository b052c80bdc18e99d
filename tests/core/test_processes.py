"""Jobs on the machine's cores (llm_cost.core.processes): the same answers, in the same order, with
the same first error, as one after the other; and a GPU comparison identical either way."""

from __future__ import annotations

import pytest

from llm_cost import api
from llm_cost.core import processes
from llm_cost.core.processes import map_in_processes


def _inverse(x: int) -> float:
    return 1 / x


def _pid_and_square(x: int) -> tuple[int, int]:
    import os

    return os.getpid(), x * x


def test_results_come_back_in_order_from_other_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setattr(processes, "cores", lambda: 2)
    out = map_in_processes(_pid_and_square, list(range(7)))
    assert [square for _, square in out] == [x * x for x in range(7)]
    assert os.getpid() not in {pid for pid, _ in out}  # forked: the work left this process


def test_the_first_items_error_is_raised_as_a_loop_would(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "cores", lambda: 2)
    with pytest.raises(ZeroDivisionError):
        map_in_processes(_inverse, [1, 0, "x"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        map_in_processes(_inverse, [1, "x", 0])  # type: ignore[list-item]


def test_one_core_or_one_item_stays_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setattr(processes, "cores", lambda: 1)
    assert {pid for pid, _ in map_in_processes(_pid_and_square, [1, 2, 3])} == {os.getpid()}
    monkeypatch.setattr(processes, "cores", lambda: 2)
    assert map_in_processes(_pid_and_square, [4]) == [(os.getpid(), 16)]


def test_a_comparison_is_the_same_planned_in_processes_or_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    def compare() -> dict:
        return api.serve_compare(
            "llama3-8b", gpu=["h100", "a100", "rtx-4090"], input_tokens=512, output_tokens=128, qps=4,
            usd_per_gpu_hour=[2.5, 1.5, 0.5], ttft_s=1.0,
        ).to_dict()  # fmt: skip

    monkeypatch.setattr(processes, "cores", lambda: 2)
    parallel = compare()
    monkeypatch.setattr(processes, "cores", lambda: 1)
    assert compare() == parallel
