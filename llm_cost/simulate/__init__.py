"""Serving under load, simulated: one engine replica's scheduler step by step, driven by a workload.

* :mod:`~llm_cost.simulate.workload`: arrivals (Poisson, gamma, constant, inference-perf's fixed
  count, stages, closed-loop users), length distributions, shared prefixes, traces.

The layer sits between ``perf`` and ``analyses``.
"""
