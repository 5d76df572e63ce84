"""An unexpected error in a step is the app's page with one line (its traceback on the
server's stderr), the form kept, nothing spent or written; and each release of a run has its
own quality report, linked from the ledger's screen."""

from __future__ import annotations

import re

import pytest
from ui_helpers import BASE, TestClient, csrf, plan, publish, ready

from ppdp.accounting import budget_report

#: A value of the data, as a library's message might quote it: never on a page.
PRIVATE = "987654"


def _raise(exc):
    def call(*_args, **_kwargs):
        raise exc

    return call


def test_an_unexpected_error_in_the_release_is_one_line_nothing_spent_or_written(
    app, client, table, tmp_path, monkeypatch, capsys
):
    ledger = ready(client, table, tmp_path / "adult.ledger.db")
    assert plan(client, ledger, epsilon="0.7").url.path == "/budget"
    # pandas' own words, quoting a value of the table
    bug = ValueError(f"could not convert string to float: '{PRIVATE}'")
    monkeypatch.setattr("ppdp.data.draft.read_table", _raise(bug))
    response = publish(client)
    assert response.status_code == 500
    page = response.text
    line = re.search(r'id="form-error" role="alert">([^<]*)<', page).group(1)
    assert line.startswith("unexpected error in the release (ValueError): a fault of ppdp")
    assert "terminal where &#39;ppdp ui&#39; runs" in line
    assert PRIVATE not in page and "Traceback" not in page
    assert "<h1>3. What to release</h1>" in page  # the app's page, the form as typed
    assert 'id="epsilon" name="epsilon" value="0.7"' in page
    err = capsys.readouterr().err
    assert "unexpected error in the release" in err and "Traceback" in err and PRIVATE in err
    assert budget_report(ledger).spent.epsilon == 0.0
    run = app.state.session.run
    assert not list(run.folder.glob("synthetic*"))


def test_an_unexpected_error_in_the_draft_keeps_the_form_and_leaves_no_run_folder(
    app, client, table, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr("ppdp.data.schema_files.draft_schema_file", _raise(KeyError("age")))
    page = client.get("/").text
    response = client.post("/draft", data={"csrf": csrf(page), "table": str(table),
                                           "label": "income", "exclude": "fnlwgt"})  # fmt: skip
    assert response.status_code == 500
    assert "unexpected error in the draft of the schema (KeyError)" in response.text
    assert f'value="{table}"' in response.text and 'value="fnlwgt"' in response.text
    assert app.state.session.run is None
    assert not any((tmp_path / "runs").iterdir())
    assert "Traceback" in capsys.readouterr().err


def test_an_unexpected_error_saving_the_schema_keeps_the_edits_and_writes_nothing(
    app, client, table, monkeypatch
):
    page = client.get("/").text
    client.post("/draft", data={"csrf": csrf(page), "table": str(table), "label": "income"})
    fields = dict(re.findall(r'name="(c\d+-[a-z]+)" value="([^"]*)"', client.get("/schema").text))
    monkeypatch.setattr("ppdp.data.schema.Schema.from_dict", _raise(RuntimeError(PRIVATE)))
    response = client.post("/schema", data={"csrf": csrf(page), **fields, "c0-upper": "120"})
    assert response.status_code == 500
    assert "Nothing was saved: unexpected error in the check of the schema (RuntimeError)" in (
        response.text
    )
    assert 'name="c0-upper" value="120"' in response.text and PRIVATE not in response.text
    assert not (app.state.session.run.folder / "schema.json").exists()


def test_an_error_outside_a_step_is_the_apps_page_not_a_bare_500(app, secrets_, table, monkeypatch):
    client = TestClient(app, base_url=BASE, raise_server_exceptions=False)
    client.get(f"/?token={secrets_.token}")
    page = client.get("/").text
    client.post("/draft", data={"csrf": csrf(page), "table": str(table)})
    monkeypatch.setattr("ppdp.ui._app.column_rows", _raise(IndexError(PRIVATE)))
    response = client.get("/schema")
    assert response.status_code == 500
    assert "unexpected error in the page /schema (IndexError)" in response.text
    assert "<h1>Something went wrong</h1>" in response.text and PRIVATE not in response.text
    assert response.headers["content-security-policy"].startswith("default-src 'none'")


def test_each_release_has_its_own_report_linked_from_the_ledger(app, client, table, tmp_path):
    ledger = ready(client, table, tmp_path / "adult.ledger.db")
    for seed in ("1", "2"):
        plan(client, ledger, epsilon="0.5", seed=seed)
        publish(client)
        report = client.post("/report", data={"csrf": csrf(client.get("/report").text)})
        assert "verdict:" in report.text
    run = app.state.session.run
    first, second = (
        run.folder / "synthetic.csv.report.html",
        run.folder / "synthetic-2.csv.report.html",
    )
    assert first.is_file() and second.is_file()
    assert first.read_bytes() != second.read_bytes()  # two releases (seeds 1, 2), two reports
    assert 'src="/files/synthetic-2.csv.report.html"' in report.text  # the latest on screen 5
    history = client.get("/ledger").text
    for name in ("synthetic.csv", "synthetic-2.csv"):
        for page in (f"{name}.report.html", f"{name}.note.html"):
            assert f'href="/files/{page}"' in history
            served = client.get(f"/files/{page}")
            assert served.status_code == 200
            assert served.headers["content-security-policy"].endswith("sandbox")
    script = (run.folder / "commands.sh").read_text()
    assert script.count("ppdp report ") == 2
    assert f"-o {second}" in script and f"-o {first}" in script
    assert budget_report(ledger).spent.epsilon == pytest.approx(1.0)
