"""A node whose GPUs are joined by one direct link per peer (a mesh: AMD Instinct MI300X, 7 Infinity
Fabric links of 64 GB/s per direction each, 896 GB/s aggregate counting both directions, AMD's
MI300X data sheet) gives a collective among k of its GPUs k - 1 links, not all seven; a switch
(NVSwitch: H100's NVLink 4, 450 GB/s per direction to any GPU) gives any pair the whole bandwidth.
A new user's trial found MI300X's TP2 all-reduce timed at 448 GB/s, seven times the one link."""

from __future__ import annotations

import pytest

from llm_cost import api
from llm_cost.analyses.train_ranks import Group, links_of
from llm_cost.core.types import Topology
from llm_cost.specs.load import load_gpu

#: One xGMI link of the MI300X, bytes/s per direction (896 GB/s bidirectional over 7 links).
XGMI_LINK = 896e9 / 2 / 7


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_a_tensor_parallel_group_on_a_mesh_uses_its_links_to_the_group(tp):
    step = api.decode("llama3-70b", "mi300x", batch=8, context=2048, layout=api.Layout(tp=tp))
    assert step.comm_bytes > 0
    assert step.comm_time_s == pytest.approx(step.comm_bytes / ((tp - 1) * XGMI_LINK), rel=1e-12)
    assert step.link == f"Infinity Fabric (xGMI), {tp - 1} of 7 peer links"


def test_a_switch_gives_a_pair_the_whole_bandwidth():
    step = api.decode("llama3-70b", "h100", batch=8, context=2048, layout=api.Layout(tp=2))
    assert step.comm_time_s == pytest.approx(step.comm_bytes / 450e9, rel=1e-12)


def test_a_pipeline_hop_on_a_mesh_takes_the_one_link_between_its_gpus():
    """Llama-3-70B's hand-off of an 8,192-token prompt: 8,192 x 8,192 (hidden_size) x 2 B."""
    p = api.prefill("llama3-70b", "mi300x", seq=8192, layout=api.Layout(pp=2))
    assert p.comm_time_s == pytest.approx(8192 * 8192 * 2 / XGMI_LINK, rel=1e-12)


def test_training_collectives_on_a_mesh_share_the_links_as_serving_does():
    gpu = load_gpu("mi300x")
    assert gpu.interconnect.topology == Topology.MESH
    links = links_of(gpu, 50.0, 0.0, 1.0)
    assert links.rate(Group(2, 1)) == pytest.approx(XGMI_LINK, rel=1e-12)
    assert links.rate(Group(8, 1)) == pytest.approx(7 * XGMI_LINK, rel=1e-12)
    nvswitch = links_of(load_gpu("h100"), 50.0, 0.0, 1.0)
    assert nvswitch.rate(Group(2, 1)) == nvswitch.rate(Group(8, 1)) == pytest.approx(450e9, rel=1e-12)
