"""Mean waits of the queues a serving plan meets (Poisson arrivals, fixed service times)."""

from __future__ import annotations

import math


def md1_wait_s(rho: float, service_s: float) -> float:
    """Mean wait of an M/D/1 queue (Pollaczek-Khinchine): rho S / (2 (1 - rho)); inf at rho >= 1."""
    return math.inf if rho >= 1 else rho * service_s / (2 * (1 - rho))


def mdc_wait_s(rho: float, servers: int, service_s: float) -> float:
    """Mean wait of an M/D/c queue: Sakasegawa's M/M/c approximation rho^(sqrt(2(c+1)) - 1) S /
    (c (1 - rho)), times Allen-Cunneen's (C_a^2 + C_s^2) / 2 = 1/2; inf at rho >= 1."""
    if rho >= 1:
        return math.inf
    if rho <= 0:
        return 0.0
    return rho ** (math.sqrt(2 * (servers + 1)) - 1) * service_s / (servers * (1 - rho)) / 2
