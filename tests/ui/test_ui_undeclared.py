"""The schema screen says when a categorical column's declared list is shorter than the data
(the custodian's own screen): how many values lie outside it and what to do, counted by the
library's ``schema check --data`` (the app counts nothing itself)."""

from __future__ import annotations

import re

import pandas as pd
from ui_helpers import confirm_all, csrf

from ppdp.data.schema import Schema
from ppdp.data.schema_files import check_table


def _index(page: str, name: str) -> str:
    """The form prefix (``c3``) of column ``name``."""
    rows = re.findall(r'<tr data-name="([^"]*)".*?name="(c\d+)-type"', page, re.S)
    return dict(rows)[name.lower()]


def _drafted(client, table):
    page = client.get("/").text
    return client.post("/draft", data={"csrf": csrf(page), "table": str(table), "label": "income"})


def test_a_category_list_shorter_than_the_data_is_said_with_its_count_and_the_way_out(
    app, client, table
):
    drafted = _drafted(client, table)
    assert "undeclared-warning" not in drafted.text  # the draft's lists come from the data
    p = _index(drafted.text, "race")
    race = pd.read_csv(table)["race"]
    kept = ["White", "Black"]
    page = confirm_all(client, next="0", **{f"{p}-categories": ", ".join(kept)}).text
    outside = race[~race.isin(kept)]
    n, k = len(outside), outside.nunique()
    warning = re.search(r'id="undeclared-warning">(.*?)</div>', page, re.S).group(1)
    assert f"<strong>race</strong>: {n:,} value(s) outside the list ({k:,} distinct)" in warning
    assert "add them to the list, or tick “open”" in warning
    assert f'id="{p}-outside">{n:,} value(s) of the data outside this list' in page
    # the same count as `ppdp schema check --data`, the command shown beside it
    run = app.state.session.run
    assert check_table(Schema.from_file(run.schema_path), table).undeclared == {"race": (n, k)}
    assert f"ppdp schema check {run.schema_path} --data {table}" in page
    # an other bucket takes them: said so; an open list or a full one: no warning
    page = confirm_all(client, next="0", **{f"{p}-categories": "White, Black, Other",
                                            f"{p}-other": "Other"}).text  # fmt: skip
    assert "counts them as “Other” (the other bucket)" in page
    open_ = {f"{p}-categories": "White", f"{p}-open": "on", f"{p}-other": ""}
    page = confirm_all(client, next="0", **open_).text
    assert "undeclared-warning" not in page
    assert Schema.from_file(run.schema_path).open_column_names == ("race",)
    p = _index(page, "race")  # an open column is listed after the others: its row moved
    full = ", ".join(sorted(race.unique()))
    page = confirm_all(client, next="0", **{f"{p}-categories": full}).text
    assert "undeclared-warning" not in page and f"{p}-outside" not in page


def test_the_label_classes_shorter_than_the_data_are_said_too(client, table):
    _drafted(client, table)
    page = confirm_all(client, next="0", **{"label-classes": "<=50K, unknown"}).text
    income = pd.read_csv(table)["income"]
    n = int((income != "<=50K").sum())
    assert f"<strong>income</strong>: {n:,} value(s) outside the list (1 distinct)" in page
    assert "Add them to the label's classes below" in page
