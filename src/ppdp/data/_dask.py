"""Running Dask graphs for ppdp (the ``dask`` extra): import, schedulers, deadlines, errors.

Shared by the Dask engine of :class:`~ppdp.data.stats.SufficientStats` (in
:mod:`ppdp.data.stats`) and by :mod:`ppdp.data.distributed`; it imports neither, so the
three form no import cycle. Dask is imported on first use only, so ``ppdp`` and
``ppdp.data`` import without it.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ppdp.exceptions import (
    OptionalDependencyError,
    ParameterError,
    PPDPError,
)

if TYPE_CHECKING:
    pass

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
