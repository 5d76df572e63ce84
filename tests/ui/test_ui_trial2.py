"""The second new-user trial's findings (``benchmarks/ui/new_user_trial.md``, second
section: Ecdat's ``Males`` panel written with ``;`` and decimal commas), fixed: a category
that holds a comma survives the schema form."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pandas as pd
import pytest
from ui_helpers import confirm_all, csrf, errors, plan

from ppdp.ui._schema_form import split_values

JOBS = ["Craftsmen, Foremen_and_kindred", "Clerical_and_kindred", 'The "other" ones']


@pytest.mark.parametrize(
    "values",
    [JOBS, ["a", "b"], [1980, 1981], ["x,y", " lead", "z"], ['"quoted"', "plain"]],
)
def test_values_with_commas_and_quotes_round_trip_through_the_field(values):
    from ppdp.ui._schema_form import values_text

    assert split_values(values_text(values)) == [v.strip() if isinstance(v, str) else v
                                                 for v in values]  # fmt: skip


def test_a_plain_list_is_written_as_before():
    from ppdp.ui._schema_form import values_text

    assert values_text(["no", "yes"]) == "no, yes" and split_values("no, yes") == ["no", "yes"]


@pytest.fixture
def europe(tmp_path):
    """A table as a European spreadsheet writes it (``;``, decimal commas), with a job
    category that holds a comma."""
    rng = np.random.default_rng(1)
    n = 400
    df = pd.DataFrame({"wage": rng.normal(1.6, 0.5, n).round(3), "job": rng.choice(JOBS, n),
                       "union": rng.choice(["no", "yes"], n)})  # fmt: skip
    path = tmp_path / "males.csv"
    df.to_csv(path, index=False, sep=";", decimal=",")
    return path


def test_a_category_with_a_comma_stays_one_category_through_the_form(client, europe, tmp_path):
    page = client.get("/").text
    client.post("/draft", data={"csrf": csrf(page), "table": str(europe)})
    shown = client.get("/schema").text
    assert '"Craftsmen, Foremen_and_kindred"' in html.unescape(shown)  # quoted: one value
    response = confirm_all(client, **{"c0-lower": "-4", "c0-upper": "5"})
    assert response.url.path == "/release", errors(response.text)
    run = client.app.state.session.run
    saved = json.loads(run.schema_path.read_text())
    job = next(c for c in saved["columns"] if c["name"] == "job")
    assert sorted(job["categories"]) == sorted(JOBS)
    page = client.get("/release").text
    client.post("/ledger/init", data={
        "csrf": csrf(page), "ledger": str(tmp_path / "l.db"), "dataset_id": "m",
        "total_epsilon": "3", "total_delta": "1e-6", "relation": "replace-one"})  # fmt: skip
    budget = plan(client, tmp_path / "l.db", kind="groupby", by="job", means="wage")
    assert budget.url.path == "/budget", errors(budget.text)
    assert re.search(r"would charge ε = 1 in 2 ledger entries", budget.text)


def test_the_release_screen_opens_with_the_guarantee_in_one_line_and_folds_the_rest(
    client, table, tmp_path
):
    """The guarantee's full statement (a screenful under a privacy unit) came before
    everything else on screen 5: its one-line summary leads, the rest is folded."""
    from ui_helpers import publish, ready

    ledger = ready(client, table, tmp_path / "adult.ledger.db")
    plan(client, ledger, kind="groupby", by="sex", means="age")
    page = publish(client).text
    lead = re.search(r'<p class="guarantee" id="guarantee">([^<]*)</p>', page)
    assert lead is not None and lead.group(1).startswith("guarantee: ")
    assert len(lead.group(1)) < 200
    folded = re.search(
        r'<details id="guarantee-full">.*?<pre class="guarantee">in full: ', page, re.S
    )
    assert folded is not None


def test_the_schema_screen_names_the_columns_drawn_once_per_person(client, tmp_path):
    """The draft of a panel marks columns constant within a person ``per_person``; the
    release's guarantee then speaks of "synthetic persons" and "the per_person columns
    school, ethn", which the schema screen never named."""
    rng = np.random.default_rng(2)
    pid = np.repeat(np.arange(150), 4)
    school = rng.integers(8, 17, 150)[pid]
    df = pd.DataFrame({"nr": pid, "school": school, "wage": rng.normal(1.6, 0.5, len(pid)),
                       "union": rng.choice(["no", "yes"], len(pid))})  # fmt: skip
    df.to_csv(tmp_path / "panel.csv", index=False)
    page = client.get("/").text
    client.post("/draft", data={"csrf": csrf(page), "table": str(tmp_path / "panel.csv")})
    drafted = client.app.state.session.run.schema
    assert drafted.get("privacy_unit", {}).get("column") == "nr"
    per_person = [c["name"] for c in drafted["columns"] if c.get("per_person")]
    assert "school" in per_person
    shown = client.get("/schema").text
    said = re.search(r'<p class="hint" id="per-person">(.*?)</p>', shown, re.S)
    assert said is not None and ", ".join(per_person) in said.group(1)
