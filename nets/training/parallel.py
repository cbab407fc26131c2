"""Run independent shard tasks on local processes, or on a Ray cluster when given its address.

Each task writes its own shard file and returns a small summary, so the same task runs unchanged in a local
process pool and as a Ray remote function (``ray.init(address=...)``; ``"local"`` starts a single-node Ray on
this machine, for tests). Results come back as tasks finish, with a progress bar.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

from tqdm import tqdm


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def run_tasks(fn: Callable[..., Any], tasks: Sequence[tuple], *, workers: int = 0, ray_address: Optional[str] = None,
              desc: str = "") -> Iterator[Any]:
    """Yield ``fn(*task)`` for every task, in completion order.

    ``workers``: local processes (0 = one per core). ``ray_address``: a Ray cluster address (``auto``,
    ``ray://host:10001``, ...) or ``local`` for a single-node Ray on this machine; the workers then need this repository on
    their ``PYTHONPATH`` (Ray's ``runtime_env`` ships it: ``working_dir`` is set to the repository root).
    """
    bar = tqdm(total=len(tasks), desc=desc, unit="shard", smoothing=0.05)
    try:
        if not tasks:
            return
        if ray_address:
            yield from _run_ray(fn, tasks, ray_address, bar)
        elif (workers or default_workers()) == 1:
            for task in tasks:
                yield fn(*task)
                bar.update()
        else:
            with cf.ProcessPoolExecutor(workers or default_workers()) as pool:
                futures = [pool.submit(fn, *task) for task in tasks]
                for fut in cf.as_completed(futures):
                    yield fut.result()
                    bar.update()
    finally:
        bar.close()


def _run_ray(fn: Callable[..., Any], tasks: Sequence[tuple], address: str, bar: tqdm) -> Iterator[Any]:
    import ray

    root = str(Path(__file__).resolve().parents[2])
    if not ray.is_initialized():
        if address == "local":
            # A single-node Ray on this machine (Ray 2.60 removed ``local_mode``): the same remote tasks,
            # scheduler and object store as on a cluster, for tests and for trying a cluster setup.
            ray.init(num_cpus=default_workers(), include_dashboard=False, log_to_driver=False,
                     runtime_env={"env_vars": {"PYTHONPATH": root}})
        else:
            ray.init(address=address, runtime_env={"working_dir": root,
                                                   "excludes": ["data/", "runs/", "*.onnx", ".git/"]})
    remote = ray.remote(num_cpus=1)(fn)
    pending = [remote.remote(*task) for task in tasks]
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            yield ray.get(ref)
            bar.update()
