"""The privacy unit through ``ppdp ui``: the drafted unit pre-filled and round-tripped by
the schema form, a group-by release with a unit and per-person caps equal to the command
line it shows, and a bad unit or cap refused in one line next to its field, with nothing
written and nothing spent."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest
from ui_helpers import confirm_all, csrf, errors

from ppdp.accounting import budget_report
from ppdp.cli import main
from ppdp.datasets import load_adult


@pytest.fixture
def unit_table(tmp_path):
    """1,500 rows of Adult with a ``patient_id`` column, 3 rows per person (500 persons):
    the draft proposes it as the privacy unit."""
    df, _ = load_adult()
    df = df.head(1500).copy()
    df.insert(0, "patient_id", np.arange(1500) // 3)
    path = tmp_path / "visits.csv"
    df.to_csv(path, index=False)
    return path


def _draft(client, table):
    data = {"csrf": csrf(client.get("/").text), "table": str(table), "label": "income"}
    assert client.post("/draft", data=data).status_code == 200


def _ledger(client, path):
    page = client.get("/release").text
    data = {"csrf": csrf(page), "ledger": str(path), "dataset_id": "adult",
            "total_epsilon": "3", "total_delta": "1e-6", "relation": "replace-one"}  # fmt: skip
    assert client.post("/ledger/init", data=data).status_code == 200


def _plan(client, ledger, **values):
    page = client.get("/release").text
    data = {"csrf": csrf(page), "ledger": str(ledger), "kind": "groupby", "epsilon": "1",
            "delta": "1e-9", **values}  # fmt: skip
    return client.post("/plan", data=data)


def _publish(client):
    page = client.get("/budget").text
    nonce = re.search(r'name="nonce" value="([^"]*)"', page).group(1)
    return client.post("/publish", data={"csrf": csrf(page), "nonce": nonce})


def _unit_shown(page: str) -> tuple[str, str]:
    """The unit column selected and the max_rows shown by the schema page."""
    select = re.search(r'<select id="unit-column".*?</select>', page, re.S).group(0)
    chosen = re.search(r'<option value="([^"]*)" selected>', select).group(1)
    max_rows = re.search(r'name="unit-max_rows" value="([^"]*)"', page).group(1)
    return chosen, max_rows


def _saved_unit(app):
    return json.loads(app.state.session.run.schema_path.read_text()).get("privacy_unit")


def _ready(app, client, table, tmp_path, **unit):
    _draft(client, table)
    assert confirm_all(client, **unit).url.path == "/release"
    ledger = tmp_path / "visits.ledger.db"
    _ledger(client, ledger)
    return ledger


def test_the_drafted_unit_is_prefilled_and_round_trips_through_the_form(app, client, unit_table):
    _draft(client, unit_table)
    page = client.get("/schema").text
    assert _unit_shown(page) == ("patient_id", "3")  # the draft's proposal
    assert "none: each row is a different person" in page and "never released" in page
    assert "custodian-only log" in page
    assert confirm_all(client, **{"unit-column": "patient_id", "unit-max_rows": "2"}).url.path == (
        "/release"
    )
    assert _saved_unit(app) == {"column": "patient_id", "max_rows": 2}
    assert _unit_shown(client.get("/schema").text) == ("patient_id", "2")
    saved = json.loads(app.state.session.run.schema_path.read_text())
    assert "patient_id" not in [c["name"] for c in saved["columns"]]
    # none: each row is a different person
    confirm_all(client, **{"unit-column": "", "unit-max_rows": "2"})
    assert _saved_unit(app) is None
    assert _unit_shown(client.get("/schema").text) == ("", "")


def test_max_rows_auto_round_trips_through_the_form(app, client, unit_table):
    _draft(client, unit_table)
    form = {"unit-column": "patient_id", "unit-max_rows": "auto"}
    assert confirm_all(client, **form).url.path == "/release"
    defaults = {"upper": 100, "quantile": 0.9, "epsilon": 0.1}  # written out by the schema
    assert _saved_unit(app) == {"column": "patient_id", "max_rows": "auto", "auto": defaults}
    assert _unit_shown(client.get("/schema").text) == ("patient_id", "auto")
    # settings declared in the file survive the form (it shows max_rows only)
    from ppdp.ui._schema_form import schema_from_form

    declared = {"upper": 20, "quantile": 0.95, "epsilon": 0.2}
    old = {"columns": [], "privacy_unit": {"column": "pid", "max_rows": "auto", "auto": declared}}
    new, _ = schema_from_form(old, {"unit-column": "pid", "unit-max_rows": "auto"})
    assert new["privacy_unit"]["auto"] == declared
    new, _ = schema_from_form(old, {"unit-column": "pid", "unit-max_rows": "4"})
    assert new["privacy_unit"] == {"column": "pid", "max_rows": 4}


def test_a_groupby_release_with_a_unit_and_caps_equals_the_command_line_it_shows(
    app, client, unit_table, tmp_path
):
    ledger = _ready(app, client, unit_table, tmp_path)
    assert _saved_unit(app) == {"column": "patient_id", "max_rows": 3}
    caps = {"max_groups": "1", "max_rows_per_group": "2"}
    assert _plan(client, ledger, seed="7", by="sex", means="age", **caps).url.path == "/budget"
    assert _publish(client).url.path == "/report"
    run = app.state.session.run
    line = run.commands["release"]
    assert "--max-groups 1 --max-rows-per-group 2" in line
    cli_ledger, cli_out = tmp_path / "cli.ledger.db", tmp_path / "cli.csv"
    assert main(["budget", "init", str(cli_ledger), "--dataset-id", "adult", "--epsilon", "3",
                 "--delta", "1e-6"]) == 0  # fmt: skip
    argv = shlex.split(line)[1:]
    argv[argv.index("--ledger") + 1] = str(cli_ledger)
    argv[argv.index("-o") + 1] = str(cli_out)
    assert main(argv) == 0
    ui_out = run.folder / "groups.csv"
    assert ui_out.read_bytes() == cli_out.read_bytes()
    assert "patient_id" not in ui_out.read_text()
    ui_side = Path(str(ui_out) + ".guarantee.json").read_text().replace(str(ledger), "L")
    cli_side = Path(str(cli_out) + ".guarantee.json").read_text().replace(str(cli_ledger), "L")
    assert ui_side == cli_side
    assert budget_report(ledger).spent.epsilon == budget_report(cli_ledger).spent.epsilon == 1.0


@pytest.mark.parametrize("max_rows", ["0", "2.5", "many"])
def test_a_bad_max_rows_is_refused_next_to_its_field_and_nothing_is_saved(
    app, client, unit_table, max_rows
):
    _draft(client, unit_table)
    confirm_all(client, next="0")
    schema_file = app.state.session.run.schema_path
    before = schema_file.read_bytes()
    page = confirm_all(client, **{"unit-column": "patient_id", "unit-max_rows": max_rows}).text
    found = errors(page)
    assert list(found) == ["unit"], found
    assert found["unit"].startswith("privacy_unit: max_rows") and max_rows in found["unit"]
    assert "\n" not in found["unit"]
    assert schema_file.read_bytes() == before
    assert _unit_shown(page) == ("patient_id", max_rows)  # the user's edit is kept


@pytest.mark.parametrize(
    ("values", "field", "text"),
    [({"max_groups": "2.5"}, "max_groups", "max_groups ('2.5') must be an integer >= 1"),
     ({"max_rows_per_group": "0"}, "max_rows_per_group",
      "max_rows_per_group (0) must be an integer >= 1"),
     ({"kind": "model", "epsilon": "0.5"}, "kind",
      "perturbation ('objective'): schema declares privacy_unit")],
)  # fmt: skip
def test_a_bad_cap_or_a_refused_unit_is_one_line_next_to_its_field_and_spends_nothing(
    app, client, unit_table, tmp_path, values, field, text
):
    ledger = _ready(app, client, unit_table, tmp_path)
    before = budget_report(ledger).to_dict()
    response = _plan(client, ledger, by="sex", **values)
    assert response.url.path == "/plan"  # the release screen again, not the budget
    found = errors(response.text)
    assert list(found) == [field], found
    assert found[field].startswith(text) and "\n" not in found[field]
    assert budget_report(ledger).to_dict() == before  # the ledger unchanged
    assert budget_report(ledger).spent.epsilon == 0.0
    folder = app.state.session.run.folder
    assert not (folder / "groups.csv").exists() and not (folder / "model.json").exists()


def test_a_cap_without_a_unit_is_refused_next_to_its_field(app, client, unit_table, tmp_path):
    ledger = _ready(app, client, unit_table, tmp_path, **{"unit-column": ""})
    found = errors(_plan(client, ledger, by="sex", max_groups="2").text)
    assert list(found) == ["max_groups"], found
    assert "declares no privacy_unit" in found["max_groups"]
    assert budget_report(ledger).spent.epsilon == 0.0
