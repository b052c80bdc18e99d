"""Workloads: the operators of a step (FLOPs and bytes by category), expert routing, forward FLOPs."""
