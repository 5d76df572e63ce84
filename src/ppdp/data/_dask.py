"""The Dask engine of :class:`~ppdp.data.stats.SufficientStats` (the ``dask`` extra).

Each partition runs the in-memory kernel; partial statistics (and, for Parquet, partial
encoding reports) are merged in a tree with fan-in ``split_every``. Only the small partial
results travel between workers: ``O(K p²)`` floats per partition. Dask is imported here
only, so ``ppdp`` and ``ppdp.data`` import without it.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ppdp.data.encoding import EncodeReport, encode, log_report
from ppdp.data.stats import (
    SufficientStats,
    check_finite_stats,
    compute_block_stats,
    label_codes,
)
from ppdp.exceptions import (
    DataValidationError,
    OptionalDependencyError,
    ParameterError,
    PPDPError,
)

if TYPE_CHECKING:
    from ppdp.data.schema import Category, Schema

_INSTALL_HINT = "pip install 'ppdp[dask]'"
_LOCAL_SCHEDULERS = ("threads", "threading", "sync", "synchronous", "single-threaded", "processes")


def import_dask() -> Any:
    """Import dask (and its DataFrame and delayed parts) or say how to install it."""
    try:
        import dask
        import dask.array
        import dask.dataframe
        import dask.delayed
    except ImportError as exc:
        raise OptionalDependencyError(
            f"this needs the dask extra, which is not installed: {_INSTALL_HINT}"
        ) from exc
    return dask


#: Seconds a computation on a distributed cluster may go with no worker executing a task and
#: nothing changing on the cluster (every worker dead and not restarted, say) before it is
#: stopped; ``ppdp ... --dask-timeout`` and :func:`dask_deadline` change it.
DEFAULT_STALL_SECONDS = 120.0
_STALL: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "ppdp_dask_stall", default=DEFAULT_STALL_SECONDS
)
#: How often a waiting computation looks at the cluster (a tenth of the deadline, within
#: these bounds: a large cluster's scheduler is not asked every half second).
_POLL_SECONDS = (0.25, 5.0)


class DaskRunError(PPDPError, RuntimeError):
    """A computation on a Dask cluster could not finish (workers lost, no progress, start-up).

    One line; :func:`ppdp.data.distributed.guarded_release` adds whether ε was charged.
    """


@contextlib.contextmanager
def dask_deadline(seconds: float | None) -> Iterator[None]:
    """Within: a distributed computation stalled for ``seconds`` is stopped (None: never).

    Stalled means no task executing or handed to a connected worker, and nothing changing
    on the cluster (tasks finishing, workers joining or leaving). The default is
    :data:`DEFAULT_STALL_SECONDS`.

    Raises
    ------
    ParameterError
        ``seconds`` not a number > 0 (or None).
    """
    ok = seconds is None or (
        isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds > 0
    )
    if not ok or (seconds is not None and seconds != seconds):
        raise ParameterError(
            f"dask_timeout ({seconds!r}) must be a number of seconds > 0 (or no limit: 0 on the "
            "command line, None in Python)"
        )
    token = _STALL.set(None if seconds is None else float(seconds))
    try:
        yield
    finally:
        _STALL.reset(token)


def is_client(scheduler: Any) -> bool:
    """Whether ``scheduler`` is a ``distributed.Client``."""
    return hasattr(scheduler, "get") and hasattr(scheduler, "submit")


def _cluster_state(client: Any) -> tuple[bool, Any]:
    """(a worker is executing a task, a snapshot that changes when anything happens)."""
    try:
        workers = client.scheduler_info(n_workers=-1).get("workers", {})
    except TypeError:  # older distributed: no n_workers
        workers = client.scheduler_info().get("workers", {})
    except Exception:  # the scheduler is unreachable: that is no progress
        return False, None
    counts = {
        addr: tuple(sorted((w.get("metrics", {}).get("task_counts") or {}).items()))
        for addr, w in workers.items()
    }
    busy = any(dict(c).get("executing", 0) for c in counts.values())
    if not busy:
        # A worker's metrics come with its heartbeat, which stops while the worker's event
        # loop is held (unpickling a task's arguments, a first import of a heavy package):
        # the scheduler's own list of tasks handed to a connected worker says it is busy.
        try:
            busy = any(client.processing().values())
        except Exception:  # the scheduler is unreachable: that is no progress
            return False, None
    return busy, tuple(sorted(counts.items()))


def _failure(exc: BaseException) -> str | None:
    """One line for a failure of the cluster itself; None for an error of the task."""
    name = type(exc).__name__
    if name == "KilledWorker":
        return (
            "a task of the Dask computation lost its worker again and again (KilledWorker): "
            "the workers died (out of memory, killed); give them more memory or fewer threads"
        )
    if name in ("CommClosedError", "FutureCancelledError", "CancelledError") or isinstance(
        exc, ConnectionError
    ):
        return f"the Dask cluster went away during the computation ({name})"
    return None


def _compute_on(client: Any, graphs: tuple[Any, ...], stall: float | None) -> tuple[Any, ...]:
    from distributed import wait

    futures = client.compute(list(graphs))
    try:
        if stall is not None:
            _, seen = _cluster_state(client)
            since = time.monotonic()
            poll = min(max(stall / 10, _POLL_SECONDS[0]), _POLL_SECONDS[1])
            while True:
                try:
                    wait(futures, timeout=poll)
                    break
                except TimeoutError:
                    busy, now = _cluster_state(client)
                    if busy or now != seen:
                        seen, since = now, time.monotonic()
                    elif time.monotonic() - since >= stall:
                        workers = 0 if now is None else len(now)
                        raise DaskRunError(
                            f"the Dask computation made no progress for {stall:g} s ({workers} "
                            "worker(s) connected, none working) and was stopped; check the "
                            "cluster, or allow more time with --dask-timeout"
                        ) from None
        return tuple(client.gather(futures))
    except DaskRunError:
        raise
    except Exception as exc:
        line = _failure(exc)
        if line is None:
            raise
        raise DaskRunError(line) from None
    finally:
        with contextlib.suppress(Exception):
            client.cancel(futures)


def compute(*graphs: Any, scheduler: Any) -> tuple[Any, ...]:
    """``dask.compute(*graphs)`` on ``scheduler``, stopped when a cluster stalls.

    On a ``distributed.Client`` the computation is watched: stalled for the
    :func:`dask_deadline` (no worker working, nothing changing), or its workers lost for
    good, it ends in a :class:`DaskRunError` (one line) instead of waiting for ever.
    """
    dask = import_dask()
    if is_client(scheduler):
        return _compute_on(scheduler, graphs, _STALL.get())
    kwargs = {} if scheduler is None else {"scheduler": scheduler}
    return tuple(dask.compute(*graphs, **kwargs))


@contextlib.contextmanager
def local_cluster(kwargs: dict[str, Any]) -> Iterator[Any]:
    """A ``LocalCluster`` and its ``Client``; a start-up that fails is one line.

    Raises
    ------
    DaskRunError
        The cluster or its workers did not start (a worker killed while starting, no
        memory, no free port); nothing has been read or spent then.
    """
    from distributed import Client, LocalCluster

    stack = contextlib.ExitStack()
    with stack:
        try:
            cluster = stack.enter_context(LocalCluster(**kwargs))
            client = stack.enter_context(Client(cluster))
        except (RuntimeError, OSError, TimeoutError) as exc:
            reason = str(exc).split("\n")[0] or type(exc).__name__
            raise DaskRunError(
                f"the local Dask cluster failed to start ({type(exc).__name__}: {reason}); "
                "nothing was read or charged: run again, or give --scheduler threads"
            ) from None
        yield client


@contextlib.contextmanager
def scheduler_for(
    scheduler: Any, *, default_local_cluster: bool, cluster_kwargs: dict[str, Any] | None = None
) -> Iterator[Any]:
    """Yield the value to pass as ``scheduler=`` to ``dask.compute``.

    Starts (and afterwards stops) a ``LocalCluster`` for ``"local"``, or for ``None`` when
    ``default_local_cluster``; connects a ``Client`` to an address; passes a ``Client`` and
    Dask's local scheduler names through; ``None`` otherwise means Dask's default.
    """
    if scheduler is None and not default_local_cluster:
        yield None
        return
    if isinstance(scheduler, str) and scheduler in _LOCAL_SCHEDULERS:
        yield scheduler
        return
    if (
        scheduler is None
        or scheduler == "local"
        or (isinstance(scheduler, str) and "://" in scheduler)
    ):
        try:
            from distributed import Client
        except ImportError as exc:
            raise OptionalDependencyError(
                f"a distributed scheduler needs the dask extra: {_INSTALL_HINT}"
            ) from exc
        if isinstance(scheduler, str) and "://" in scheduler:
            with Client(scheduler) as client:
                yield client
            return
        kwargs = {
            "dashboard_address": ":0",  # None still binds 8787; a free port never clashes
            "scheduler_kwargs": {"dashboard": False},
            "silence_logs": logging.CRITICAL,  # the workers' own logs: ppdp says what failed
            **(cluster_kwargs or {}),
        }
        with local_cluster(kwargs) as client:
            yield client
        return
    if hasattr(scheduler, "get") and hasattr(scheduler, "submit"):  # a distributed.Client
        yield scheduler
        return
    raise ParameterError(
        f"scheduler ({scheduler!r}) must be None, 'local', one of "
        f"{', '.join(repr(s) for s in _LOCAL_SCHEDULERS)}, an address such as "
        "'tcp://host:8786', or a distributed.Client"
    )


def _tree_reduce(parts: list[Any], merge: Callable[..., Any], split_every: int) -> Any:
    from dask import delayed

    if not parts:
        return None
    while len(parts) > 1:
        parts = [
            delayed(merge, pure=True)(*parts[i : i + split_every])
            for i in range(0, len(parts), split_every)
        ]
    return parts[0]


def _merge_stats(*parts: SufficientStats) -> SufficientStats:
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


def _merge_pairs(
    *parts: tuple[SufficientStats, EncodeReport],
) -> tuple[SufficientStats, EncodeReport]:
    stats, report = parts[0]
    for s, r in parts[1:]:
        stats, report = stats + s, report + r
    return stats, report


def _partition_stats(
    xpart: Any,
    ypart: Any,
    classes: tuple[Category, ...] | None,
    labels_are_codes: bool,
    block_rows: int | None,
) -> SufficientStats:
    if isinstance(xpart, pd.DataFrame):
        arr = xpart.to_numpy(dtype=np.float64, na_value=np.nan)
        names = tuple(str(c) for c in xpart.columns)
    else:
        arr, names = np.asarray(xpart), None
    if arr.ndim != 2 or arr.dtype.kind not in "biuf":
        raise DataValidationError(f"X partitions must be 2-D numeric; got {arr.shape}, {arr.dtype}")
    codes = None
    if classes is not None:
        codes = label_codes(ypart, classes, labels_are_codes=labels_are_codes, n=arr.shape[0])
    return compute_block_stats(arr, codes, classes, block_rows=block_rows, names=names)


def compute_dask(
    X: Any,
    y: Any,
    *,
    classes: tuple[Category, ...] | None,
    labels_are_codes: bool,
    scheduler: Any,
    split_every: int,
    block_rows: int | None,
) -> SufficientStats:
    """:meth:`SufficientStats.compute` for a Dask Array or DataFrame (and aligned labels)."""
    import_dask()
    import dask.array as da
    import dask.dataframe as dd
    from dask import delayed

    if (y is None) != (classes is None):
        raise ParameterError("y and the declared classes go together")
    if isinstance(X, np.ndarray):  # in-memory X with Dask labels
        X = da.from_array(X, chunks=(y.chunks[0] if isinstance(y, da.Array) else -1, -1))
    if isinstance(X, dd.DataFrame):
        if isinstance(y, str):
            if y not in X.columns:
                raise DataValidationError(f"y ({y!r}) is not a column of X")
            X, y = X.drop(columns=[y]), X[y]
        for c, dt in X.dtypes.items():
            if not (pd.api.types.is_numeric_dtype(dt) or pd.api.types.is_bool_dtype(dt)):
                raise DataValidationError(
                    f"X column {c!r} is not numeric (dtype {dt}); encode the table with a Schema"
                )
        xparts = list(X.to_delayed())
        p = len(X.columns)
        names: tuple[str, ...] | None = tuple(str(c) for c in X.columns)
        if y is None:
            yparts: list[Any] = [None] * len(xparts)
        elif isinstance(y, dd.Series | dd.DataFrame):
            if y.npartitions != X.npartitions:
                raise DataValidationError(
                    f"y has {y.npartitions} partitions but X has {X.npartitions}; align them"
                )
            yparts = list(y.to_delayed())
        else:
            raise DataValidationError(
                "y for a Dask DataFrame must be a Dask Series or a column name"
            )
    elif isinstance(X, da.Array):
        if X.ndim != 2:
            raise DataValidationError(f"X must be 2-D (n, p); got {X.ndim} dimension(s)")
        if X.dtype.kind not in "biuf":
            raise DataValidationError(f"X must be numeric; got dtype {X.dtype}")
        X = X.rechunk({1: -1})
        xparts = list(X.to_delayed().ravel())
        p = int(X.shape[1])
        names = None
        if y is None:
            yparts = [None] * len(xparts)
        else:
            if isinstance(y, str):
                raise DataValidationError("y given as a column name needs X to be a DataFrame")
            yarr = y if isinstance(y, da.Array) else da.from_array(np.asarray(y), chunks=-1)
            if yarr.ndim != 1 or yarr.shape[0] != X.shape[0]:
                raise DataValidationError(
                    f"y must have shape ({X.shape[0]},); got {tuple(yarr.shape)}"
                )
            yparts = list(yarr.rechunk((X.chunks[0],)).to_delayed().ravel())
    else:
        raise DataValidationError(
            f"X ({type(X).__name__}) must be a numpy array, a DataFrame, "
            "or a Dask Array or DataFrame"
        )
    partials = [
        delayed(_partition_stats, pure=True)(xp, yp, classes, labels_are_codes, block_rows)
        for xp, yp in zip(xparts, yparts, strict=True)
    ]
    root = _tree_reduce(partials, _merge_stats, split_every)
    if root is None:
        return SufficientStats.zeros(p, classes=classes, feature_names=names)
    with scheduler_for(scheduler, default_local_cluster=False) as sched:
        (stats,) = compute(root, scheduler=sched)
    check_finite_stats(stats)
    return stats


def _encode_partition(
    part: pd.DataFrame, schema: Schema, include_label: bool, block_rows: int | None
) -> tuple[SufficientStats, EncodeReport]:
    X, y, report = encode(schema, part, include_label=include_label, log=False, order="F")
    classes = schema.label.classes if schema.label is not None else None
    names = schema.layout(include_label=include_label).feature_names
    stats = compute_block_stats(X, y, classes, block_rows=block_rows, names=names)
    return stats, report


def stats_from_parquet(
    path: str | os.PathLike[str],
    *,
    schema: Schema,
    include_label: bool,
    scheduler: Any,
    split_every: int,
    cluster_kwargs: dict[str, Any] | None,
    block_rows: int | None = None,
) -> tuple[SufficientStats, EncodeReport]:
    """:meth:`SufficientStats.from_parquet`: read, encode per partition, reduce, log counts."""
    import_dask()
    from dask import delayed

    from ppdp.data.schema import Schema as _Schema

    if not isinstance(schema, _Schema):
        raise ParameterError(f"schema ({type(schema).__name__}) must be a ppdp.data.Schema")
    if include_label and schema.label is None:
        raise ParameterError("include_label=True needs a schema with a label")
    src = os.fspath(path)
    if "://" not in src and not os.path.exists(src):
        raise FileNotFoundError(f"path ({src!r}) does not exist")
    from ppdp.data.distributed import open_table

    # Footer checks (a column missing in one file, mixed types) and pyarrow reads with a
    # fresh index per partition, whatever the writer stored.
    ddf = open_table(src, schema, param="path")
    layout = schema.layout(include_label=include_label)
    partials = [
        delayed(_encode_partition, pure=True)(part, schema, include_label, block_rows)
        for part in ddf.to_delayed()
    ]
    root = _tree_reduce(partials, _merge_pairs, split_every)
    if root is None:
        classes = schema.label.classes if schema.label is not None else None
        stats = SufficientStats.zeros(
            layout.n_features, classes=classes, feature_names=layout.feature_names
        )
        return stats, EncodeReport(n_rows=0)
    with scheduler_for(
        scheduler, default_local_cluster=True, cluster_kwargs=cluster_kwargs
    ) as sched:
        ((stats, report),) = compute(root, scheduler=sched)
    log_report(report)
    check_finite_stats(stats)
    return stats, report
