"""Resumable local reporting (issue 12, item 5): an upload interrupted by a dead collector (or
a lost acknowledgement) is finished by a rerun from the client's journal; the collector
counts each report exactly once, and no value is ever perturbed twice."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import warnings

import httpx
import numpy as np
import pytest

from ppdp.cli import main
from ppdp.exceptions import ParameterError, ProtocolError
from ppdp.ledger import encode_public_key, generate_key, save_private_key
from ppdp.local import AdditiveRandomizer, CharacteristicVectorRandomizer
from ppdp.local.collector import (
    CollectorConfig,
    CollectorStore,
    ReportInterruptedError,
    ReportJournal,
    report,
)
from ppdp.local.collector._aggregate import Aggregator
from ppdp.local.collector._app import create_app

with warnings.catch_warnings():  # this starlette asks for httpx2; httpx still works
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

ADD = AdditiveRandomizer(noise="laplace", scale=0.5, domain=(0.0, 1.0))
CV = CharacteristicVectorRandomizer(regions=4, noise="discrete-normal", gamma=0.5, sigma=1.0)


def _config(tmp_path, randomizer=ADD, **extra):
    key = generate_key()
    save_private_key(key, tmp_path / "app.key")
    cfg = {
        "survey": "resume",
        "randomizer": randomizer.to_dict(),
        "store": "store.sqlite",
        "clients": {"app": encode_public_key(key.public_key())},
        "client": {"id": "app", "key": "app.key"},
        **extra,
    }
    (tmp_path / "collector.json").write_text(json.dumps(cfg))
    return CollectorConfig.from_file(tmp_path / "collector.json")


def _count(tmp_path):
    with CollectorStore.open(tmp_path / "store.sqlite", create=False) as store:
        return store.snapshot()


class Dying:
    """An HTTP client in front of the collector that dies after ``ok`` batch posts.

    ``lose_reply``: the batch that kills it reaches the collector (and is counted), but its
    answer is lost, as when the collector is killed between its commit and its reply.
    """

    def __init__(self, http, ok, *, lose_reply=False):
        self.http, self.ok, self.lose_reply, self.posts = http, ok, lose_reply, 0

    def get(self, *a, **kw):
        return self.http.get(*a, **kw)

    def post(self, *a, **kw):
        self.posts += 1
        if self.posts > self.ok:
            if self.lose_reply and self.posts == self.ok + 1:
                self.http.post(*a, **kw)  # committed by the collector, answer never arrives
            raise httpx.ConnectError("the collector is gone")
        return self.http.post(*a, **kw)


@pytest.fixture
def calls(monkeypatch):
    """How many times a randomizer perturbed values (one call per run that perturbs)."""
    seen = []
    for cls in (AdditiveRandomizer, CharacteristicVectorRandomizer):
        real = cls.randomise

        def spy(self, values, random_state=None, _real=real):
            seen.append(len(values))
            return _real(self, values, random_state=random_state)

        monkeypatch.setattr(cls, "randomise", spy)
    monkeypatch.setattr("time.sleep", lambda s: None)  # the client's retry back-off
    return seen


@pytest.mark.parametrize("lose_reply", [False, True])
@pytest.mark.parametrize("randomizer", [ADD, CV], ids=["additive", "characteristic"])
def test_an_interrupted_upload_is_finished_by_a_rerun_exactly_once(
    tmp_path, calls, lose_reply, randomizer
):
    config = _config(tmp_path, randomizer)
    rng = np.random.default_rng(0)
    values = rng.random(2_345) if randomizer is ADD else rng.integers(0, 4, 2_345)
    journal = tmp_path / "values.report-journal"
    with TestClient(create_app(config)) as http, pytest.raises(ReportInterruptedError) as info:
        report(config=config, server="http://testserver", values=values, batch_size=100,
               http=Dying(http, 7, lose_reply=lose_reply), journal=journal)  # fmt: skip
    err = info.value
    counted = 800 if lose_reply else 700
    assert (err.delivered, err.remaining, err.total) == (700, 1_645, 2_345)
    message = str(err)
    assert "\n" not in message and "after 700 of 2,345 reports were delivered" in message
    assert f"1,645 perturbed reports wait in the journal {journal}" in message
    assert _count(tmp_path).count == counted  # the collector counted what it committed
    # the collector restarts (a new process on the same store); the rerun finishes the job
    with TestClient(create_app(config)) as http:
        result = report(config=config, server="http://testserver", values=values,
                        batch_size=100, http=http, journal=journal)  # fmt: skip
        assert (result.delivered, result.total, result.already) == (2_345, 2_345, 700)
        assert result.sent == 1_645 and result.duplicates == (1 if lose_reply else 0)
        assert result.count == 2_345
        again = report(config=config, server="http://testserver", values=values,
                       http=http, journal=journal)  # fmt: skip
        assert (again.sent, again.batches, again.delivered) == (0, 0, 2_345)
    # a finished journal needs no collector at all: nothing is left to send
    gone = report(config=config, server="http://127.0.0.1:9", values=values, journal=journal)
    assert (gone.sent, gone.batches, gone.delivered, gone.count) == (0, 0, 2_345, None)
    snap = _count(tmp_path)
    assert snap.count == 2_345 and snap.batches == 24
    assert calls == [2_345]  # perturbed once, in the first run only
    with ReportJournal.open(journal) as jr:
        reports = jr.reports()
    assert len(reports) == 2_345
    expected = Aggregator.from_config(config).aggregate(reports)
    for name, total in snap.totals.items():  # the collector holds exactly the journaled reports
        assert np.array_equal(total, expected[name]), name


def test_a_rerun_with_other_values_or_a_busy_journal_is_refused(tmp_path, calls):
    config = _config(tmp_path)
    journal = tmp_path / "j"
    with TestClient(create_app(config)) as http:
        with pytest.raises(ReportInterruptedError):
            report(config=config, server="http://testserver", values=np.full(50, 0.5),
                   batch_size=10, http=Dying(http, 1), journal=journal)  # fmt: skip
        with pytest.raises(ParameterError, match=r"^journal \(.*\) was made for other values"):
            report(config=config, server="http://testserver", values=np.full(50, 0.25),
                   http=http, journal=journal)  # fmt: skip
        with ReportJournal.open(journal), pytest.raises(ParameterError, match="in use"):
            report(config=config, server="http://testserver", values=np.full(50, 0.5),
                   http=http, journal=journal)  # another sender holds it  # fmt: skip
    assert calls == [50]


def test_without_a_journal_the_error_still_counts_and_says_nothing_can_be_resent(tmp_path, calls):
    config = _config(tmp_path)
    with TestClient(create_app(config)) as http, pytest.raises(ReportInterruptedError) as info:
        report(config=config, server="http://testserver", values=np.full(30, 0.5),
               batch_size=10, http=Dying(http, 2))  # fmt: skip
    assert info.value.delivered == 20 and info.value.journal is None
    assert "no journal was kept" in str(info.value)


def test_the_collector_counts_each_batch_id_once(tmp_path):
    """Any earlier batch re-sent (not only the last) is acknowledged, never added again; the
    same batch id with another body is refused."""
    with CollectorStore.open(tmp_path / "s.sqlite", survey="s", spec={"k": 2},
                             layout={"sum": (2, "int")}) as store:  # fmt: skip
        one = np.array([1, 0])
        for seq in (1, 2, 3):
            assert store.add_batch(client="a", seq=seq, digest=f"d{seq}", count=5,
                                   aggregates={"sum": one}).accepted == 5  # fmt: skip
        again = store.add_batch(client="a", seq=2, digest="d2", count=5, aggregates={"sum": one})
        assert (again.accepted, again.duplicate, again.count) == (0, True, 15)
        with pytest.raises(ProtocolError, match="another body"):
            store.add_batch(client="a", seq=1, digest="other", count=5, aggregates={"sum": one})
        assert store.snapshot().totals["sum"].tolist() == [3, 0]


# --- a real collector process, killed mid-upload, restarted ------------------------------------


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(tmp_path, port):
    proc = subprocess.Popen(
        [sys.executable, "-m", "ppdp", "local", "serve", "--config",
         str(tmp_path / "collector.json"), "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/info", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the collector did not start"
        time.sleep(0.05)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_collector_killed_mid_upload_then_restarted_rerun_counts_exactly_n(tmp_path, calls, capsys):
    config = _config(tmp_path)
    n = 6_000
    (tmp_path / "values.csv").write_text(
        "x\n" + "\n".join(map(str, np.random.default_rng(1).random(n))) + "\n"
    )
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = _serve(tmp_path, port)
    posted = []

    def kill_at_the_fifth(response):
        # the fifth batch is committed; the collector dies before its reply's body is sent
        if response.request.method == "POST":
            posted.append(response.status_code)
            if len(posted) == 5:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                proc.stderr.close()

    from ppdp.local.collector import read_values

    values = read_values(tmp_path / "values.csv")
    journal = tmp_path / "values.csv.report-journal"  # the CLI's default beside the input
    argv = ["local", "report", str(tmp_path / "values.csv"), "--config",
            str(tmp_path / "collector.json"), "--server", url, "--batch-size", "500"]  # fmt: skip
    try:
        hooks = {"response": [kill_at_the_fifth]}
        with (
            httpx.Client(base_url=url, event_hooks=hooks) as h,
            pytest.raises(ReportInterruptedError) as info,
        ):
            report(config=config, server=url, values=values, batch_size=500, http=h,
                   journal=journal)  # fmt: skip
        # five counted by the collector; the fifth's answer was acknowledged or lost
        # (whether its few bytes left the socket before the SIGKILL is up to the kernel)
        done = info.value.delivered
        assert done in (2_000, 2_500) and info.value.remaining == 6_000 - done
        assert _count(tmp_path).count == 2_500
        # while the collector is down, the command says where it stands (exit 2, one line)
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"{done:,} of 6,000 reports were delivered" in err[0]
        assert f"{6_000 - done:,} perturbed reports wait in the journal" in err[0]
        proc = _serve(tmp_path, port)
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert f"{done} of 6000 reports had been delivered before" in out
        again = " (1 already counted by the collector)" if done == 2_000 else ";"
        assert f"sent {6_000 - done} perturbed reports in {(6_000 - done) // 500} batch(es)" in out
        assert again in out
        assert "delivered 6000 of 6000; the collector now holds 6000" in out
        assert main(argv) == 0
        assert "nothing sent" in capsys.readouterr().out
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.communicate(timeout=10)
    assert _count(tmp_path).count == n
    assert calls == [n]
