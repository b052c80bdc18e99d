"""Pipeline hops that leave a node go over the network (a new user's trial: PP16 of H100s, 8 to a
node, timed every stage's send over NVLink, 2.4 ms where the network takes about 21 ms)."""

from __future__ import annotations

import pytest

from llm_cost import api
from llm_cost.model.layout import Layout
from llm_cost.perf.timemodel import pp_hop_leaves_node
from llm_cost.specs.load import load_gpu

#: Llama-3.1-405B's hand-off of a 32,768-token prompt: 32,768 x 16,384 (hidden_size) x 2 B (BF16)
HANDOFF_BYTES = 32768 * 16384 * 2


def test_the_one_hop_between_two_nodes_goes_over_the_network():
    """PP16 on 8-GPU H100 nodes: 15 hops, 14 on NVLink 4 (450 GB/s per direction, the datasheet's),
    the one into stage 8 over the network (the default 50 GB/s: 400 Gb/s InfiniBand NDR)."""
    p = api.prefill("llama3.1-405b", "h100", seq=32768, layout=api.Layout(pp=16))
    assert p.comm_time_s == pytest.approx(14 * HANDOFF_BYTES / 450e9 + HANDOFF_BYTES / 50e9, rel=1e-12)
    assert any(n.code == "layout.pp_network" and n.params["hops"] == [8] for n in p.conventions)


@pytest.mark.parametrize(
    "tp, pp, crossing",
    [(1, 8, []), (1, 16, [7]), (4, 4, [1]), (8, 4, [0, 1, 2]), (2, 8, [3])],
)
def test_which_hops_leave_a_node(tp, pp, crossing):
    gpu = load_gpu("h100")
    assert [s for s in range(pp - 1) if pp_hop_leaves_node(Layout(tp=tp, pp=pp), gpu, s)] == crossing


def test_within_one_node_nothing_changes():
    p = api.prefill("llama3-70b", "h100", seq=8192, layout=api.Layout(tp=2, pp=4))
    assert not any(n.code == "layout.pp_network" for n in p.conventions)
