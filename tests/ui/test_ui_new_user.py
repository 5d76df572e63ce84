"""``ppdp ui`` on a table as a new user brings it: ';'-separated with decimal commas, correlated
amounts and a long-tail code column drafted as open. What trying it found is checked here:
an open column survives the form, a refused form keeps the edits, a second release in a run
gets its own files, and the release form's group keys and kept pairs reach the command."""

from __future__ import annotations

import re
import shlex

import numpy as np
import pandas as pd
import pytest
from ui_helpers import csrf, errors

from ppdp.accounting import budget_report


@pytest.fixture
def kunden(tmp_path):
    """2,000 seeded rows: age, income (log-normal, grows with age), spending (a share of
    income), visits, a Zipf-tailed diagnosis code (over 50 distinct: drafted open) and a
    region; written as a European spreadsheet writes CSV."""
    rng = np.random.default_rng(20261207)
    n = 2000
    age = rng.integers(18, 90, n)
    income = np.round(np.exp(rng.normal(10 + 0.01 * (age - 40), 0.6)), 2)
    codes = np.minimum(rng.zipf(1.6, n), 999)
    df = pd.DataFrame({
        "Alter": age, "Einkommen": income,
        "Ausgaben": np.round(income * rng.uniform(0.2, 0.6, n) / 12, 2),
        "Besuche": rng.poisson(1 + age / 30), "Diagnose": [f"K{c:03d}" for c in codes],
        "Region": rng.choice(["Nord", "Süd", "Ost", "West"], n, p=[0.4, 0.3, 0.2, 0.1]),
    })  # fmt: skip
    path = tmp_path / "kunden.csv"
    df.to_csv(path, sep=";", decimal=",", index=False)
    return path


def _fields(client, **changes):
    page = client.get("/schema").text
    fields = dict(re.findall(r'name="(c\d+-[a-z]+)" value="([^"]*)"', page))
    fields.update({name: "on" for name in re.findall(r'name="(c\d+-public)"', page)})
    for name, kind in re.findall(r'name="(c\d+-type)".*?<option selected>(\w+)', page, re.S):
        fields[name] = kind
    for name in re.findall(r'name="(c\d+-(?:integer|open))" checked', page):
        fields[name] = "on"
    public = {"c0-lower": "18", "c0-upper": "100", "c1-lower": "0", "c1-upper": "200000",
              "c2-lower": "0", "c2-upper": "10000",
              "c3-categories": ", ".join(str(i) for i in range(16)), "next": "1"}  # fmt: skip
    return {"csrf": csrf(page), **fields, **public, **changes}


def _drafted(client, kunden):
    page = client.get("/").text
    response = client.post("/draft", data={"csrf": csrf(page), "table": str(kunden)})
    assert response.url.path == "/schema"
    return response


def _ledger(client, path):
    page = client.get("/release").text
    client.post("/ledger/init", data={
        "csrf": csrf(page), "ledger": str(path), "dataset_id": "kunden", "total_epsilon": "3",
        "total_delta": "1e-6", "relation": "replace-one"})  # fmt: skip
    return path


def _plan(client, ledger, **values):
    page = client.get("/release").text
    return client.post("/plan", data={"csrf": csrf(page), "ledger": str(ledger), **values})


def _publish(client):
    page = client.get("/budget").text
    nonce = re.search(r'name="nonce" value="([^"]*)"', page).group(1)
    return client.post("/publish", data={"csrf": csrf(page), "nonce": nonce})


def test_the_decimal_comma_is_said_and_an_open_code_column_stays_open(app, client, kunden):
    page = _drafted(client, kunden).text
    assert "with &#39;,&#39; as the decimal mark" in page  # in the draft's notes, not a console
    assert "Open column" in page
    done = client.post("/schema", data=_fields(client))
    assert done.url.path == "/release", errors(done.text)
    schema = app.state.session.run.schema
    diagnose = next(c for c in schema["columns"] if c["name"] == "Diagnose")
    assert diagnose.get("open") is True and "draft" not in schema


def test_a_refused_schema_form_keeps_every_edit(client, kunden):
    _drafted(client, kunden)
    refused = client.post("/schema", data=_fields(client, **{"c2-lower": "9", "c2-upper": "1"}))
    assert errors(refused.text) == {"c2": "column 'Ausgaben': lower (9.0) must be < upper (1.0)"}
    assert 'name="c1-upper" value="200000"' in refused.text  # not the draft's maximum
    assert 'name="c0-upper" value="100"' in refused.text
    assert "no longer a draft" not in refused.text


def test_two_releases_in_one_run_each_have_their_files_and_commands(app, client, kunden, tmp_path):
    _drafted(client, kunden)
    client.post("/schema", data=_fields(client))
    ledger = _ledger(client, tmp_path / "kunden.ledger.db")
    _plan(client, ledger, kind="groupby", by="Region", means="Einkommen", epsilon="0.5")
    assert _publish(client).url.path == "/report"
    # a synthetic table cannot use the open column: the refusal says how, in the app's words
    refused = _plan(client, ledger, kind="synth", epsilon="1", delta="1e-9")
    assert "tick “Leave out” on the schema screen" in errors(refused.text)["form"]
    client.post("/schema", data=_fields(client, **{"c5-drop": "on"}))  # Diagnose
    for _ in range(2):  # the same kind twice: a second file, never an overwrite
        _plan(client, ledger, kind="synth", epsilon="0.5", delta="1e-9", seed="5")
        assert _publish(client).url.path == "/report"
    run = app.state.session.run
    names = {p.name for p in run.folder.iterdir()}
    assert {"groups.csv", "synthetic.csv", "synthetic-2.csv", "groups.csv.note.html",
            "synthetic.csv.note.html", "synthetic-2.csv.note.html"} <= names  # fmt: skip
    script = (run.folder / "commands.sh").read_text()
    releases = [s for s in script.splitlines() if s.startswith("ppdp publish") and "--dry" not in s]
    assert [shlex.split(s)[2] for s in releases] == ["groupby", "synth", "synth"]
    outputs = [(a := shlex.split(s))[a.index("-o") + 1].rsplit("/", 1)[-1] for s in releases]
    assert outputs == ["groups.csv", "synthetic.csv", "synthetic-2.csv"]
    assert budget_report(ledger).spent.epsilon == pytest.approx(1.5)


def test_the_release_form_offers_what_the_schema_allows(app, client, kunden, tmp_path):
    from ppdp.ui._app import _plan_step

    _drafted(client, kunden)
    client.post("/schema", data=_fields(client, **{"c5-drop": "on"}))
    ledger = _ledger(client, tmp_path / "kunden.ledger.db")
    # no label drafted: the model is offered disabled, and a forced post says where to name one
    assert 'value="model" disabled' in client.get("/release").text
    refused = _plan(client, ledger, kind="model", epsilon="1")
    assert "name the label column on screen 1" in errors(refused.text)["form"]
    budget = _plan(client, ledger, kind="synth", epsilon="1", delta="1e-9",
                   keep="Einkommen:Ausgaben")  # fmt: skip
    assert budget.url.path == "/budget"
    assert "--keep Einkommen:Ausgaben" in app.state.session.run.plan["release_line"]
    session = app.state.session
    values = {"kind": "groupby", "by": "Diagnose", "keys": "private", "delta": "1e-9",
              "epsilon": "0.5", "ledger": str(ledger)}  # fmt: skip
    step, _ = _plan_step(session.run, values, dry_run=True, session=session)
    assert "--by Diagnose --keys private --delta 1e-09 --dry-run" in step.line()


def test_group_statistics_of_an_open_column_with_keys_chosen_privately(client, kunden, tmp_path):
    _drafted(client, kunden)
    client.post("/schema", data=_fields(client))
    ledger = _ledger(client, tmp_path / "kunden.ledger.db")
    budget = _plan(client, ledger, kind="groupby", by="Diagnose", keys="private", delta="1e-9",
                   epsilon="0.5")  # fmt: skip
    assert budget.url.path == "/budget"
    assert _publish(client).url.path == "/report"
