"""Thread limits for the numeric libraries, applied after they load so that the limits reach them.

OpenMP (scikit-learn's gradient boosting) and BLAS read a thread limit from each loaded runtime;
``threadpoolctl`` sets it only on runtimes already loaded. A limit entered before scikit-learn is
imported therefore misses OpenMP, and the candidates' concurrent branches each start a thread per
core: on two cores five branches ran about 30 times slower, spinning against each other.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_info, threadpool_limits


def share_of_cores(branches: int, cores: int | None = None) -> int:
    """Threads for each of ``branches`` processes running at once: their share of the cores, at least one."""
    return max(1, (cores or os.cpu_count() or 1) // max(branches, 1))


def load_numeric_libraries(scikit_learn: bool = True) -> None:
    """Load the libraries that start thread pools (BLAS through numpy, OpenMP through scikit-learn): scikit-learn
    only when it will fit, as importing it costs a Metaflow task seconds."""
    import numpy  # noqa: F401  BLAS

    if scikit_learn:
        import sklearn.ensemble  # noqa: F401  OpenMP, through the gradient boosting's compiled loops
        import sklearn.linear_model  # noqa: F401


@contextmanager
def numeric_threads(limit: int, scikit_learn: bool = True) -> Iterator[None]:
    """At most ``limit`` threads in every numeric thread pool, the libraries loaded first so the limit holds;
    without ``scikit_learn``, for work that never loads it (a candidate of pandas and numpy alone)."""
    load_numeric_libraries(scikit_learn)
    with threadpool_limits(limits=limit):
        yield


def pool_sizes() -> dict[str, int]:
    """Threads each loaded numeric runtime would use now, by runtime (``openmp``, ``blas``)."""
    return {pool["user_api"]: pool["num_threads"] for pool in threadpool_info()}
