"""The collector store keeps running totals and counts only, transactionally."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from ppdp.exceptions import DataValidationError, ParameterError, ProtocolError
from ppdp.local.collector._store import CollectorStore, StoreTotals

LAYOUT = {"sum": (3, "int"), "positive": (3, "int")}


def _open(path, **kw):
    return CollectorStore.open(path, survey="s", spec={"k": 3}, layout=LAYOUT, **kw)


def _agg(*v):
    return {"sum": np.array(v, dtype=np.int64), "positive": (np.array(v) > 0).astype(np.int64)}


def test_totals_accumulate_and_persist(tmp_path):
    path = tmp_path / "c.sqlite"
    with _open(path) as s:
        s.add_batch(client="a", seq=1, digest="d1", count=2, aggregates=_agg(1, 0, 3))
        r = s.add_batch(client="b", seq=1, digest="d2", count=5, aggregates=_agg(-2, 4, 0))
        assert (r.accepted, r.count) == (5, 7)
    with CollectorStore.open(path, create=False) as s:
        snap = s.snapshot()
        assert (snap.count, snap.batches) == (7, 2)
        assert snap.totals["sum"].tolist() == [-1, 4, 3]
        assert snap.totals["positive"].tolist() == [1, 1, 1]
        assert s.last_seq("a") == 1 and s.last_seq("nobody") == 0
        assert s.survey == "s" and s.spec == {"k": 3}
        mode = s._conn.execute("PRAGMA journal_mode").fetchone()[0]
        sync = s._conn.execute("PRAGMA synchronous").fetchone()[0]
    assert mode == "wal" and sync == 2  # FULL


def test_replay_and_identical_retry(tmp_path):
    with _open(tmp_path / "c.sqlite") as s:
        s.add_batch(client="a", seq=5, digest="x", count=1, aggregates=_agg(1, 0, 0))
        dup = s.add_batch(client="a", seq=5, digest="x", count=1, aggregates=_agg(1, 0, 0))
        assert dup.duplicate and dup.accepted == 0 and dup.count == 1
        for seq, digest in ((5, "other"), (4, "y")):
            with pytest.raises(ProtocolError, match="replayed or stale"):
                s.add_batch(client="a", seq=seq, digest=digest, count=1, aggregates=_agg(1, 0, 0))
        assert s.snapshot().totals["sum"].tolist() == [1, 0, 0]


def test_failed_batch_leaves_totals_unchanged(tmp_path):
    """A failure in the middle of the transaction (a total overflowing SQLite's 64-bit
    integers on the last coordinate) rolls the whole batch back, counts included."""
    with _open(tmp_path / "c.sqlite") as s:
        s.add_batch(client="a", seq=1, digest="x", count=3, aggregates=_agg(2, 2, 2))
        before = s.snapshot()
        big = {"sum": np.array([1, 1, 2**62], dtype=np.int64), "positive": np.ones(3, np.int64)}
        s.add_batch(client="b", seq=1, digest="y", count=1, aggregates=big)
        with pytest.raises(DataValidationError, match="overflow"):
            s.add_batch(client="c", seq=1, digest="z", count=1, aggregates=big)
        after = s.snapshot()
        assert after.count == before.count + 1 and s.last_seq("c") == 0
        assert after.totals["sum"].tolist() == [3, 3, 2 + 2**62]
        # Python ints beyond 64 bits are refused by sqlite3 before anything is written
        with pytest.raises(OverflowError):
            s._conn.execute("SELECT ?", (2**70,))


@pytest.mark.parametrize(
    ("aggregates", "match"),
    [
        ({"sum": np.zeros(3, np.int64)}, "name exactly"),
        ({"sum": np.zeros(4, np.int64), "positive": np.zeros(3, np.int64)}, "shape"),
        ({"sum": np.zeros(3), "positive": np.zeros(3, np.int64)}, "integers"),
    ],
)
def test_bad_aggregates_refused(tmp_path, aggregates, match):
    with _open(tmp_path / "c.sqlite") as s:
        with pytest.raises(DataValidationError, match=match):
            s.add_batch(client="a", seq=1, digest="x", count=1, aggregates=aggregates)
        with pytest.raises(DataValidationError, match="count"):
            s.add_batch(client="a", seq=1, digest="x", count=0, aggregates=_agg(0, 0, 0))
        assert s.snapshot().count == 0 and s.last_seq("a") == 0


def test_float_totals_and_round_trip(tmp_path):
    layout = {"h": (2, "float")}
    with CollectorStore.open(tmp_path / "f.sqlite", survey="s", spec={}, layout=layout) as s:
        s.add_batch(client="a", seq=1, digest="x", count=1, aggregates={"h": np.array([0.5, 0])})
        with pytest.raises(DataValidationError, match="finite"):
            s.add_batch(client="a", seq=2, digest="y", count=1, aggregates={"h": [np.nan, 0]})
        snap = s.snapshot()
    again = StoreTotals.from_dict(snap.to_dict(), {"h": (2, "float")})
    assert again.totals["h"].tolist() == [0.5, 0.0] and again.count == 1
    with pytest.raises(DataValidationError):
        StoreTotals.from_dict(snap.to_dict(), {"g": (2, "float")})


def test_spec_is_fixed_at_creation(tmp_path):
    path = tmp_path / "c.sqlite"
    _open(path).close()
    with pytest.raises(ParameterError, match="another randomizer"):
        CollectorStore.open(path, survey="s", spec={"k": 4}, layout=LAYOUT)
    with pytest.raises(ParameterError, match="survey"):
        CollectorStore.open(path, survey="t", spec={"k": 3}, layout=LAYOUT)
    with pytest.raises(FileNotFoundError):
        CollectorStore.open(tmp_path / "missing.sqlite", create=False)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE meta (key TEXT, value TEXT)").connection.commit()
    with pytest.raises(ParameterError):
        CollectorStore.open(other)
    with pytest.raises(ParameterError, match="length"):
        CollectorStore.open(tmp_path / "n.sqlite", survey="s", spec={}, layout={"x": (0, "int")})


def test_no_table_has_a_row_per_report(tmp_path):
    """After 1,000 reports in 10 batches, the store holds one small row per batch (its id and
    body digest, so that a re-sent batch counts once) and none per report."""
    path = tmp_path / "c.sqlite"
    with _open(path) as s:
        for seq in range(1, 11):
            s.add_batch(client="a", seq=seq, digest=str(seq), count=100, aggregates=_agg(7, 1, 9))
    conn = sqlite3.connect(path)
    rows = {
        t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    conn.close()
    assert rows == {"meta": 4, "totals": 6, "state": 1, "clients": 1, "batches": 10}
