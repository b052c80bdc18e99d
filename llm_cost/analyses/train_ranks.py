"""Where a training layout's ranks sit, and which link each of its collectives crosses.

A framework numbers the GPUs of a job node by node (8 consecutive ranks per DGX node) and lays its
parallel dimensions over them in a fixed order, the first dimension varying fastest:

* Megatron-Core (``megatron/core/parallel_state.py``, ``order="tp-cp-ep-dp-pp"``): the dense grid
  is tp, cp, dp, pp; the expert grid of the MoE layers is etp, ep, edp, pp (the same pp groups:
  "MoE parallel folding", Liu et al. 2025, arXiv:2504.14960). So a TP group is consecutive ranks,
  an EP group of expert-TP 1 is consecutive ranks too and stays inside a node while ep <= 8, and
  PP, the slowest dimension, spans nodes. The distributed optimizer shards the dense parameters
  over the dp x cp ranks holding the same shard (stride tp) and the experts over edp (stride etp x ep).
* PyTorch FSDP2 / HSDP as torchtitan and NeMo AutoModel build their device mesh
  (``["pp", "dp_replicate", "dp_shard", "cp", "tp"]``, tp innermost): FSDP shards over dp_shard x
  cp (stride tp), HSDP replicates over dp_replicate (stride tp x cp x dp_shard); expert parallelism
  takes the innermost ranks of dp_shard x cp (stride etp), as Megatron's.

A group is ``size`` ranks ``stride`` apart. It runs on NVLink when all of it sits in one node, else
on the network, with ``k`` of its members in each node (:meth:`Links.span`).
"""

from __future__ import annotations

import math
from functools import lru_cache

from llm_cost.core.choices import Framework
from llm_cost.core.records import record
from llm_cost.core.types import Topology
from llm_cost.specs.schema import HardwareSpec, link_share

__all__ = ["Group", "RankGroups", "Links", "rank_groups", "links_of", "GROUP_NAMES"]

#: What each group of :class:`RankGroups` carries, for the layout's link table.
GROUP_NAMES = {
    "tp": "TP (sequence-parallel all-gathers and reduce-scatters)",
    "cp": "CP (ring attention's K/V)",
    "ep": "EP (MoE all-to-all)",
    "dp": "DP (gradient reduce-scatter, weight all-gather)",
    "expert_dp": "expert DP (the experts' gradients and weights)",
    "replicate": "HSDP replicas (gradient all-reduce)",
    "pp": "PP (activations between stages)",
}


@record
class Group:
    """``size`` ranks, consecutive members ``stride`` ranks apart (a group of 1 is no group)."""

    size: int
    stride: int


@record
class RankGroups:
    """The groups one GPU belongs to in a layout (:func:`rank_groups`)."""

    tp: Group
    cp: Group
    ep: Group
    dp: Group  # the ranks the dense parameters' gradients are reduced over (and, sharded, kept on)
    expert_dp: Group  # the same for the routed experts' parameters
    replicate: Group  # HSDP's replica group (size 1 unless HSDP)
    pp: Group

    def items(self) -> list[tuple[str, Group]]:
        """(name, group) of each group of more than one rank."""
        return [(n, getattr(self, n)) for n in GROUP_NAMES if getattr(self, n).size > 1]


@lru_cache(maxsize=4096)
def rank_groups(framework: Framework, tp: int, cp: int, pp: int, dp: int, ep: int, etp: int, shard: int) -> RankGroups:
    """The groups of a layout of tp x cp x pp x dp GPUs with ``ep`` expert ranks of expert-TP
    ``etp`` and, under FSDP2, ``shard`` data-parallel ranks per FSDP group (HSDP replicates over
    dp / shard of them), in the framework's rank order (module docstring)."""
    gpus = tp * cp * pp * dp
    expert_dp = gpus // (pp * etp * ep)
    if framework == Framework.MEGATRON:
        dense, replicate = Group(cp * dp, tp), Group(1, gpus)
    else:
        dense, replicate = Group(cp * shard, tp), Group(dp // shard, tp * cp * shard)
        expert_dp = tp * cp * shard // (etp * ep)
    return RankGroups(
        Group(tp, 1),
        Group(cp, tp),
        Group(ep, etp),
        dense,
        Group(expert_dp, etp * ep),
        replicate,
        Group(pp, tp * cp * dp),
    )


def links_of(gpu: HardwareSpec, network_gb_s: float, latency_s: float, efficiency: float) -> Links:
    """The cluster's :class:`Links` for ``gpu``: inside one node the GPU link (NVLink, xGMI) of the
    spec's interconnect, with its topology, or, for a card without one (RTX, L4, L40S, A10), PCIe
    x16 between up to :data:`~llm_cost.perf.timemodel.PCIE_TP_MAX` cards of one host
    (``pcie_bytes_s``), as serving's collectives take it (:func:`~llm_cost.perf.timemodel.link_of`);
    the network's ``network_gb_s`` between nodes; the profile's per-call latency and link
    efficiency."""
    from llm_cost.perf.timemodel import PCIE_TP_MAX

    ic = gpu.interconnect
    if ic.bandwidth_gb_s_per_direction > 0:
        node = ic.gpus_per_node
        return Links(ic.bandwidth_gb_s_per_direction, network_gb_s, node, latency_s, efficiency, ic.topology, ic.type)
    pcie = f"PCIe {gpu.pcie_gen}.0 x16"
    return Links(gpu.pcie_bytes_s / 1e9, network_gb_s, PCIE_TP_MAX, latency_s, efficiency, node_link=pcie)


@record
class Links:
    """The cluster's links: NVLink (or xGMI) inside a node of ``gpus_per_node`` GPUs, the network
    between nodes, both GB/s per direction per GPU (one NIC per GPU); the profile's per-call latency
    and the fraction of a link's bandwidth a collective reaches."""

    node_gb_s: float
    network_gb_s: float
    gpus_per_node: int
    latency_s: float
    efficiency: float
    #: How the node's links join its GPUs (:func:`~llm_cost.specs.schema.link_share`: over a mesh,
    #: k GPUs of a node exchange over k - 1 of a GPU's gpus_per_node - 1 links).
    topology: Topology = Topology.SWITCH
    #: The node link's name (the spec's interconnect type, or PCIe for a card without one).
    node_link: str = "NVLink"

    def node_rate(self, members: int) -> float:
        """Bytes/s per GPU among ``members`` GPUs of one node (the node's link, shared as its :attr:`topology` shares it)."""
        share = link_share(self.topology, members, self.gpus_per_node)
        return self.node_gb_s * share * 1e9 * self.efficiency

    def span(self, group: Group) -> tuple[int, int]:
        """(members per node, nodes) of ``group``: all of it in one node when it fits in one."""
        node = self.gpus_per_node
        if group.size * group.stride <= node:
            return group.size, 1
        per_node = max(1, min(group.size, node // group.stride)) if group.stride < node else 1
        return per_node, math.ceil(group.size / per_node)

    def rate(self, group: Group) -> float:
        """Bytes/s per GPU of a ring collective over ``group``: NVLink inside one node; across
        nodes each node's k members drive k NICs (NCCL runs one ring per NIC, so the ring's per-GPU
        rate is k x the per-GPU network rate, at most NVLink's). inf for a group of one."""
        if group.size <= 1:
            return math.inf
        per_node, nodes = self.span(group)
        if nodes == 1 and self.node_gb_s > 0:
            return self.node_rate(per_node)
        return min(self.node_gb_s or math.inf, per_node * self.network_gb_s) * 1e9 * self.efficiency

    def ring(self, payload_bytes: float, group: Group) -> float:
        """Seconds of a ring all-gather or reduce-scatter of ``payload_bytes`` (the whole tensor)
        over ``group``: (n - 1) steps of latency, (n - 1)/n of the bytes sent by each GPU."""
        n = group.size
        if n <= 1 or not payload_bytes:
            return 0.0
        return (n - 1) * self.latency_s + (n - 1) / n * payload_bytes / self.rate(group)

    def all_to_all(self, token_bytes: float, copies: int, group: Group, per_node_once: bool = False) -> float:
        """Seconds of a MoE all-to-all over ``group`` in which each GPU sends ``copies`` copies of
        tokens of ``token_bytes`` in all (balanced routing, the copies' destinations uniform over
        the group's GPUs): the copies for its own node's GPUs over NVLink, the rest over its NIC,
        both at once; one latency. ``per_node_once`` (DeepEP): a token crosses the network once
        per distinct other node its copies go to, (N - 1)(1 - (1 - 1/N)^k) nodes of N on average,
        and is forwarded over NVLink there."""
        n = group.size
        if n <= 1 or not token_bytes:
            return 0.0
        per_node, nodes = self.span(group)
        inside = token_bytes * copies * (per_node - 1) / n
        if per_node_once and nodes > 1:
            across = token_bytes * (nodes - 1) * (1 - (1 - 1 / nodes) ** copies)
            inside = token_bytes * copies * (per_node - 1) / per_node  # forwarded to the experts' GPUs
        else:
            across = token_bytes * copies * (n - per_node) / n
        nvlink = inside / self.node_rate(per_node)
        return self.latency_s + max(nvlink, across / (self.network_gb_s * 1e9 * self.efficiency))

    def describe(self, group: Group) -> str:
        """Which link a group's collectives run on, in words."""
        per_node, nodes = self.span(group)
        if nodes == 1:
            return f"{self.node_link} ({group.size} GPUs in one node)"
        return f"network ({group.size} GPUs over {nodes} nodes, {per_node} per node)"
