"""Issue 15 item 6: the respondent-side report marker. A second report of the same survey
column is refused (one line, exit 2, nothing sent) unless ``--again``, which says that the
guarantees compose; a resumed or finished upload (the journal) is the same report."""

from __future__ import annotations

import json
import os
import stat
import warnings

import httpx
import numpy as np
import pandas as pd
import pytest

from ppdp.cli import main
from ppdp.exceptions import ParameterError
from ppdp.ledger import encode_public_key, generate_key, save_private_key
from ppdp.local import AdditiveRandomizer
from ppdp.local.collector import CollectorConfig, CollectorStore, create_app
from ppdp.local.collector._service import report
from ppdp.local.collector._state import FORMAT, ReportState, default_state_path

with warnings.catch_warnings():  # this starlette asks for httpx2; httpx still works
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient


@pytest.fixture
def collector(tmp_path, monkeypatch):
    """A collector in process; the command's httpx client is its TestClient. ``fail_after``
    makes the posts fail from the n-th on (the collector 'dies')."""
    key = generate_key()
    save_private_key(key, tmp_path / "app.key")
    r = AdditiveRandomizer(noise="laplace", scale=0.5, domain=(0.0, 1.0))
    cfg = {
        "survey": "marker",
        "randomizer": r.to_dict(),
        "store": "store.sqlite",
        "clients": {"app": encode_public_key(key.public_key())},
        "client": {"id": "app", "key": "app.key"},
    }
    (tmp_path / "c.yaml").write_text(json.dumps(cfg))  # JSON is YAML too
    rng = np.random.default_rng(5)
    pd.DataFrame({"x": rng.random(200), "y": rng.random(200)}).to_csv(
        tmp_path / "v.csv", index=False
    )
    monkeypatch.setattr("time.sleep", lambda s: None)
    with TestClient(create_app(CollectorConfig.from_file(tmp_path / "c.yaml"))) as http:
        real_post = http.post
        state = {"posts": 0, "fail_after": None}

        def post(*a, **kw):
            state["posts"] += 1
            if state["fail_after"] is not None and state["posts"] > state["fail_after"]:
                raise httpx.ConnectError("the collector is gone")
            return real_post(*a, **kw)

        monkeypatch.setattr(http, "post", post)
        monkeypatch.setattr(httpx, "Client", lambda *a, **kw: http)
        monkeypatch.setattr(http, "close", lambda: None)
        yield tmp_path, state


def _argv(tmp, values="v.csv", *extra):
    return ["local", "report", str(tmp / values), "--config", str(tmp / "c.yaml"),
            "--server", "http://testserver", "--batch-size", "50", *extra]  # fmt: skip


def _count(tmp):
    with CollectorStore.open(tmp / "store.sqlite", create=False) as store:
        return store.snapshot().count


def _error_line(capsys, argv, *fragments):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ppdp"), err
    for fragment in fragments:
        assert fragment in err, err
    return err


def test_a_second_report_of_a_column_is_refused_unless_again(collector, capsys):
    tmp, _ = collector
    assert main(_argv(tmp)) == 0
    assert "delivered 200 of 200" in capsys.readouterr().out and _count(tmp) == 200
    marker = default_state_path(tmp / "app.key")
    assert marker == tmp / "app.key.reports.json"
    assert stat.S_IMODE(os.stat(marker).st_mode) == 0o600
    data = json.loads(marker.read_text())
    assert data["format"] == FORMAT and data["client"] == "app"
    (item,) = data["reports"]
    assert (item["survey"], item["column"], item["reports"], item["values"]) == (
        "marker",
        "x",
        1,
        200,
    )
    assert item["journals"] == [str((tmp / "v.csv.report-journal").resolve())]
    values = pd.read_csv(tmp / "v.csv")["x"]
    assert not any(f"{v:.6f}"[:8] in marker.read_text() for v in values)  # no values
    # The same column from another file (a new journal): refused, nothing sent.
    (tmp / "w.csv").write_text((tmp / "v.csv").read_text())
    _error_line(capsys, _argv(tmp, "w.csv"), "again (False)", "column 'x' of survey 'marker'",
                "--again", "compose", str(marker))  # fmt: skip
    assert _count(tmp) == 200 and not (tmp / "w.csv.report-journal").exists()
    # Another column of the same file is another question: allowed.
    assert main(_argv(tmp, "v.csv", "--column", "y")) == 0
    assert "--again" not in capsys.readouterr().out
    # --again: reported, and said so.
    assert main(_argv(tmp, "w.csv", "--again")) == 0
    out = capsys.readouterr().out
    assert "report 2 of column 'x' of survey 'marker'" in out and "compose" in out, out
    assert _count(tmp) == 600
    reports = {i["column"]: i["reports"] for i in json.loads(marker.read_text())["reports"]}
    assert reports == {"x": 2, "y": 1}


def test_a_resumed_upload_is_not_a_second_report(collector, capsys):
    tmp, state = collector
    state["fail_after"] = 2
    assert main(_argv(tmp)) == 2
    assert "after 100 of 200 reports were delivered" in capsys.readouterr().err
    # The journal exists before the first batch is sent: the report is recorded.
    (item,) = json.loads(default_state_path(tmp / "app.key").read_text())["reports"]
    assert item["reports"] == 1
    state["fail_after"] = None
    assert main(_argv(tmp)) == 0  # resumes: not refused, not counted again
    out = capsys.readouterr().out
    assert "resumed the journal" in out and "delivered 200 of 200" in out
    assert _count(tmp) == 200
    assert main(_argv(tmp)) == 0  # a finished journal: nothing sent, not refused
    assert "nothing sent" in capsys.readouterr().out
    (item,) = json.loads(default_state_path(tmp / "app.key").read_text())["reports"]
    assert item["reports"] == 1
    # --again on the finished journal cannot make a new report: one line.
    _error_line(capsys, _argv(tmp, "v.csv", "--again"), "again (True)", "--journal")
    # An interrupted --again report resumes without --again.
    state["posts"], state["fail_after"] = 0, 1
    again = _argv(tmp, "v.csv", "--again", "--journal", str(tmp / "second.journal"))
    assert main(again) == 2
    capsys.readouterr()
    state["fail_after"] = None
    assert main(again[:-3] + again[-2:]) == 0  # the same journal, without --again
    assert _count(tmp) == 400
    (item,) = json.loads(default_state_path(tmp / "app.key").read_text())["reports"]
    assert item["reports"] == 2 and len(item["journals"]) == 2


def test_the_library_keeps_a_marker_only_when_asked(collector):
    tmp, _ = collector
    values = pd.read_csv(tmp / "v.csv")["x"].to_numpy()
    kw = {"config": tmp / "c.yaml", "server": "http://testserver", "values": values}
    assert report(**kw).reports_of_column == 0  # no state: no marker
    first = report(**kw, state=tmp / "s.json", column="x")
    assert (first.reports_of_column, first.again) == (1, False)
    with pytest.raises(ParameterError, match=r"again \(False\).*column 'x'"):
        report(**kw, state=tmp / "s.json", column="x")
    second = report(**kw, state=tmp / "s.json", column="x", again=True)
    assert (second.reports_of_column, second.again) == (2, True)
    assert ReportState(tmp / "s.json", "app").entry("marker", "x")["reports"] == 2


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("not json", "is not a ppdp report state file"),
        (json.dumps({"format": FORMAT, "client": "other", "reports": []}), "belongs to client"),
    ],
)
def test_a_bad_state_file_is_one_line(collector, capsys, content, fragment):
    tmp, _ = collector
    (tmp / "s.json").write_text(content)
    _error_line(capsys, _argv(tmp, "v.csv", "--state", str(tmp / "s.json")), fragment)
    assert _count(tmp) == 0
