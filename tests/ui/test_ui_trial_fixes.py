"""What a first-time user's trial of ``ppdp ui`` (``benchmarks/ui/new_user_trial.md``) found
confusing, fixed: one ledger field until the ledger exists, the released group columns
explained, the report's lost pairs turned into the next release's “Pairs to keep together”,
and a schema row showing the fields of its type only."""

from __future__ import annotations

import re
from types import SimpleNamespace

from ui_helpers import confirm_all, csrf, plan, publish, ready

from ppdp.ui._app import _lost_pairs


def test_the_release_form_has_one_ledger_field_until_the_ledger_exists(client, table, tmp_path):
    page = client.get("/").text
    client.post("/draft", data={"csrf": csrf(page), "table": str(table), "label": "income"})
    release = confirm_all(client).text
    assert len(re.findall(r'<input id="ledger[^"]*" name="ledger"', release)) == 1
    assert '<input type="hidden" name="ledger"' in release
    assert "charged to the ledger above, once it is created" in release
    ready(client, table, tmp_path / "adult.ledger.db")
    release = client.get("/release").text
    assert re.search(r'<input id="ledger" name="ledger"', release)  # now one may change it


def test_the_released_group_columns_are_explained_in_the_guarantees_words(client, table, tmp_path):
    ledger = ready(client, table, tmp_path / "adult.ledger.db")
    plan(client, ledger, kind="groupby", by="sex", means="age")
    page = publish(client).text
    notes = dict(re.findall(r"<dt><code>([^<]*)</code></dt><dd>([^<]*)</dd>", page))
    assert set(notes) >= {"count", "count_lo/count_hi", "mean_age", "mean_age_sd"}
    assert "interval for the true count" in notes["count_lo/count_hi"]


def test_the_reports_lost_pairs_become_the_next_releases_pairs_to_keep(
    client, table, tmp_path, monkeypatch
):
    ledger = ready(client, table, tmp_path / "adult.ledger.db")
    plan(client, ledger, epsilon="0.5", seed="3")
    publish(client)
    monkeypatch.setattr("ppdp.ui._app._lost_pairs", lambda report: ["age:hours-per-week"])
    page = client.post("/report", data={"csrf": csrf(client.get("/report").text)}).text
    step = re.search(r'id="next-step">(.*?)</p>', page, re.S).group(1)
    assert "<code>age:hours-per-week</code> under “Pairs to keep" in step
    assert 'id="keep" name="keep" value="age:hours-per-week"' in client.get("/release").text


def test_lost_pairs_are_the_reports_lost_strong_pairs_as_the_form_takes_them():
    strong = [{"columns": ("a", "b"), "lost": True}, {"columns": ("c", "d"), "lost": False},
              {"columns": ("e", "f"), "lost": True}]  # fmt: skip
    assert _lost_pairs(SimpleNamespace(pairs={"strong": strong})) == ["a:b", "e:f"]
    assert _lost_pairs(SimpleNamespace(pairs=None)) == []


def test_a_schema_row_shows_the_fields_of_its_type(client, table):
    page = client.get("/").text
    page = client.post("/draft", data={"csrf": csrf(page), "table": str(table)}).text
    row = re.search(r'<tr data-name="race" class="kind-categorical[^"]*">(.*?)</tr>', page, re.S)
    assert row and '<td data-num><input name="' in row.group(1)  # hidden by ui.css
    assert re.search(r'<tr data-name="age" class="kind-numeric', page)
