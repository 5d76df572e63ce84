"""A Dask cluster that loses its workers ends the run in one line, never a hang.

The workers of a small LocalCluster (processes=True) are killed mid-computation and not
restarted (their nanny's restart fails, as when they are killed while restarting). Before
the deadline, ``dask.compute`` waited for ever (a run hung >= 200 s, 431 lines of Dask logs
on stderr); now the computation stops after the stall deadline with a DaskRunError, and
the CLI says one line (with "ε was charged" after the spend) and exits 2.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from ppdp.data.distributed import DaskRunError, compute, dask_deadline, dask_session

distributed = pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

#: The stall deadline the tests use (the default is 120 s).
DEADLINE = 1.5


def _kill_workers_for_good(client) -> None:
    """SIGKILL every worker process; its nanny's restart fails (killed while restarting)."""

    async def refuse() -> None:
        raise RuntimeError("restart refused by the test")

    for nanny in list(client.cluster.workers.values()):
        nanny.instantiate = refuse
        os.kill(nanny.pid, signal.SIGKILL)


def _slow(i: int) -> int:
    time.sleep(0.5)
    return i


class _SlowToLoad:
    """An argument whose unpickling holds the worker for 4 s, as a first task's import of a
    heavy package does on a loaded machine (the worker sends no heartbeat meanwhile)."""

    def __reduce__(self):
        return (time.sleep, (4.0,))


def _first(_slow_argument: object, i: int) -> int:
    return i


@pytest.fixture
def cluster_client():
    kwargs = {"n_workers": 1, "threads_per_worker": 1, "processes": True}
    with dask_session("local", cluster_kwargs=kwargs) as client:
        yield client


def test_a_cluster_whose_workers_die_stops_at_the_deadline(cluster_client):
    from dask import delayed

    tasks = [delayed(_slow, pure=False)(i) for i in range(8)]
    assert compute(*tasks[:2], scheduler=cluster_client) == (0, 1)  # it works first
    threading.Timer(0.7, _kill_workers_for_good, [cluster_client]).start()
    start = time.monotonic()
    with dask_deadline(DEADLINE), pytest.raises(DaskRunError, match=r"no progress for 1\.5 s"):
        compute(*tasks, scheduler=cluster_client)
    took = time.monotonic() - start
    assert DEADLINE < took < DEADLINE + 10, took


def test_a_worker_busy_loading_a_task_is_not_a_stall(cluster_client):
    """Before, the worker's stale metrics read "none working" and the run stopped after the
    1.5 s deadline (CI stopped a CLI run this way before its spend); the scheduler's list of
    tasks handed to a connected worker now counts as work."""
    from dask import delayed

    tasks = [delayed(_first, pure=False)(_SlowToLoad(), i) for i in range(2)]
    with dask_deadline(DEADLINE):
        assert compute(*tasks, scheduler=cluster_client) == (0, 1)


def test_a_killed_worker_that_is_restarted_does_not_stop_the_run(cluster_client):
    from dask import delayed

    def kill_once() -> None:
        for nanny in list(cluster_client.cluster.workers.values()):
            os.kill(nanny.pid, signal.SIGKILL)

    tasks = [delayed(_slow, pure=False)(i) for i in range(6)]
    threading.Timer(0.7, kill_once).start()
    with dask_deadline(30):
        assert compute(*tasks, scheduler=cluster_client) == tuple(range(6))


@pytest.mark.parametrize("bad", [0, -1, float("nan"), "5", True])
def test_the_deadline_is_a_positive_number(bad):
    with pytest.raises(ValueError, match="dask_timeout"), dask_deadline(bad):
        pass


_RUN = textwrap.dedent(
    """
    import os, signal, sys
    import distributed
    import ppdp.release as base
    from ppdp.cli import main

    real = base.charge

    def charge_then_kill(*args, **kwargs):
        records = real(*args, **kwargs)
        client = distributed.get_client()

        async def refuse():
            raise RuntimeError("restart refused by the test")

        for nanny in list(client.cluster.workers.values()):
            nanny.instantiate = refuse
            os.kill(nanny.pid, signal.SIGKILL)
        return records

    base.charge = charge_then_kill
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.mark.slow
def test_the_cli_says_one_line_with_the_charge_and_no_dask_logs(tmp_path):
    """Workers killed after the spend: exit 2, one error line saying ε was charged, no
    Dask log line or traceback on stderr (the note counts them), nothing written."""
    from ppdp.accounting import budget_report
    from ppdp.cli import main
    from ppdp.datasets import load_adult

    df, schema = load_adult()
    ds = tmp_path / "ds"
    ds.mkdir()
    for i in range(2):
        df.iloc[600 * i : 600 * (i + 1)].to_parquet(ds / f"part-{i}.parquet", index=False)
    schema.to_file(tmp_path / "s.json")
    ledger = tmp_path / "l.db"
    init = ["budget", "init", str(ledger), "--dataset-id", "a", "--epsilon", "10"]
    assert main([*init, "--delta", "1e-6"]) == 0
    argv = ["publish", "pca", str(ds), "--schema", str(tmp_path / "s.json"), "--epsilon", "1"]
    argv += ["--components", "2", "-o", str(tmp_path / "out"), "--ledger", str(ledger)]
    argv += ["--scheduler", "local", "--dask-timeout", str(DEADLINE), "-q"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _RUN, *argv], env=env, capture_output=True, text=True, timeout=120
    )
    took = time.monotonic() - start
    lines = [line for line in done.stderr.splitlines() if "LowUtilityWarning" not in line]
    assert done.returncode == 2, done.stderr
    errors = [line for line in lines if line.startswith("ppdp: error:")]
    assert len(errors) == 1, lines
    assert "no progress for 1.5 s" in errors[0] and "ε was charged (ε=1" in errors[0]
    assert "nothing was released" in errors[0]
    assert all(line.startswith(("ppdp: error:", "ppdp: note: Dask logged")) for line in lines), (
        lines
    )
    assert budget_report(ledger).spent.epsilon == 1.0
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.guarantee.json").exists()
    assert took < 60, took


def test_a_cluster_that_fails_to_start_is_one_line(monkeypatch):
    """A worker killed while the cluster starts: distributed raises RuntimeError (the CLI
    printed its traceback, exit 1); now one line, and nothing was read or charged."""

    def failing(**_kwargs):
        raise RuntimeError("Nanny failed to start.\nmore lines of Dask's")

    monkeypatch.setattr(distributed, "LocalCluster", failing)
    with pytest.raises(DaskRunError) as caught, dask_session("local"):
        pass
    text = str(caught.value)
    assert "\n" not in text and "Nanny failed to start." in text
    assert "nothing was read or charged" in text
