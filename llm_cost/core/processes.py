"""Independent jobs on the machine's cores: a serving comparison plans each GPU apart, and each plan
is a second of single-threaded Python (the simulator), so on two cores three GPUs take about one
and a half plans' time instead of three.

Processes are forked (``multiprocessing``'s ``fork`` start method): a child starts with the
parent's modules imported and its memos filled, so a job costs its own work and not an import.
Where fork is unavailable (Windows, and macOS's default), inside a daemonic process (which may not
have children), or on one core, the jobs run one after the other in this process: the same results
in the same order, only slower.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["cores", "map_in_processes"]

#: Processes per core :func:`map_in_processes` runs at once: enough to keep the cores busy to the
#: end when jobs are few and alike, few enough that their memory (each a copy of a planning process,
#: a few hundred MB at most) stays a small share of a machine's.
PER_CORE = 4

T = TypeVar("T")
R = TypeVar("R")


def cores() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one, else the count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _can_fork() -> bool:
    """Whether jobs may run in forked children here (module docstring)."""
    return "fork" in multiprocessing.get_all_start_methods() and not multiprocessing.current_process().daemon


def map_in_processes(job: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[job(item) for item in items]``, each item in a forked process of its own when there are
    several items and :func:`cores` (module docstring): all at once, the OS sharing the cores among
    them, so that n jobs of about equal length end together after n / cores of one job's time
    (three plans on two cores: 1.5 plans' time, where two processes taking turns need 2). ``job``
    is a module-level function and its items and results pickle. An exception raised by ``job`` is
    raised here, the first item's first, as the serial loop would raise it. At most
    :data:`PER_CORE` processes per core run at once (the others wait for one to end)."""
    workers = min(len(items), PER_CORE * cores())
    if workers < 2 or cores() < 2 or not _can_fork():
        return [job(item) for item in items]
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [pool.submit(job, item) for item in items]
        return [f.result() for f in futures]
