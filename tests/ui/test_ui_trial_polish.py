"""The new-user trial's (``benchmarks/ui/new_user_trial.md``) smaller findings, fixed: δ and
ε without scientific notation, drafted bounds without float residue (rounded outward), the
columns the draft left out in one visible line, and words to choose ε by."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pandas as pd
import pytest
from ui_helpers import csrf, plan, ready

from ppdp.budget import PrivacyBudget
from ppdp.data.schema_files import draft_schema_file
from ppdp.ui._words import budget_words, outward_bounds, plain_number


@pytest.mark.parametrize(
    ("value", "text"),
    [(1e-6, "10⁻⁶"), (1e-9, "10⁻⁹"), (2.5e-9, "2.5 × 10⁻⁹"), (0.1 + 0.2, "0.3"), (3.0, "3"),
     (0.001, "0.001"), (1e-12, "10⁻¹²")],
)  # fmt: skip
def test_plain_numbers_have_no_scientific_notation_nor_float_residue(value, text):
    assert plain_number(value) == text
    assert "e" not in plain_number(value)


def test_budget_words_read_epsilon_and_delta_in_plain_notation():
    assert budget_words(PrivacyBudget(1.0, 1e-6)) == "ε = 1 and δ = 10⁻⁶"
    assert budget_words(PrivacyBudget(0.5, 0.0)) == "ε = 0.5"
    left = PrivacyBudget(0.2 - 0.19999999999999998, 1e-6)  # a float share's residue
    assert budget_words(left, of=PrivacyBudget(0.2, 1e-6)) == "ε = 0 and δ = 10⁻⁶"


@pytest.mark.parametrize(
    ("lower", "upper"),
    [(1.79999995, 10.6000003), (-0.123456789, 0.987654321), (1e-7 * 1.23456789, 5e-7),
     (0, 1234.56789012), (-98765.4321987, None)],
)  # fmt: skip
def test_drafted_bounds_are_rounded_outward_so_the_range_still_covers_the_draft(lower, upper):
    low, high = outward_bounds(lower, upper)
    assert low <= lower
    assert (upper is None and high is None) or high >= upper
    for old, new in ((lower, low), (upper, high)):
        if isinstance(old, float):
            assert len(repr(float(new)).replace("-", "").strip("0.")) <= 7  # no residue left
    if upper is not None:  # widened by at most a hundredth of the range on each side
        assert lower - low <= (upper - lower) / 100 and high - upper <= (upper - lower) / 100


def test_a_range_too_narrow_to_round_keeps_its_digits():
    assert outward_bounds(3.00000001, 3.00000002) == (3.00000001, 3.00000002)


def test_short_and_non_float_bounds_are_shown_as_drafted():
    assert outward_bounds(0, 1.5) == (0, 1.5)
    assert outward_bounds(17, 90) == (17, 90)
    assert outward_bounds(0.125, 2.75) == (0.125, 2.75)
    assert outward_bounds("2020-01-01", "2024-12-31") == ("2020-01-01", "2024-12-31")
    assert outward_bounds(1.79999995, 10.6000003) == (1.79, 10.61)


@pytest.fixture
def r_table(tmp_path):
    """A table as R's ``write.csv`` writes it: a ``rownames`` index, single-precision ratios."""
    rng = np.random.default_rng(7)
    n = 300
    unemp = rng.uniform(2, 10, n).astype(np.float32).astype(np.float64)
    unemp[0], unemp[1] = np.float32(1.8), np.float32(10.6)  # 1.7999999523..., 10.6000003...
    df = pd.DataFrame({"rownames": np.arange(1, n + 1), "unemp": unemp.round(8),
                       "deny": rng.choice(["yes", "no"], n)})  # fmt: skip
    path = tmp_path / "hmda.csv"
    df.to_csv(path, index=False)
    return path


def _draft(client, table):
    page = client.get("/").text
    return client.post("/draft", data={"csrf": csrf(page), "table": str(table)}).text


def test_the_schema_screen_names_the_dropped_column_and_shows_bounds_rounded_outward(
    client, r_table
):
    page = _draft(client, r_table)
    line = re.search(r'<p class="warning" role="status" id="dropped-columns">(.*?)</p>', page, re.S)
    assert line is not None, "no visible line for the dropped rownames column"
    text = html.unescape(re.sub(r"<[^>]+>", "", line.group(1)))
    assert "rownames, which has a different value in every row" in text
    lower = re.search(r'name="c\d+-lower" value="([^"]*)"[^>]*aria-label="lower bound of unemp"',
                      page).group(1)  # fmt: skip
    upper = re.search(r'name="c\d+-upper" value="([^"]*)"[^>]*aria-label="upper bound of unemp"',
                      page).group(1)  # fmt: skip
    assert (lower, upper) == ("1.79", "10.61")


def test_the_dropped_line_names_each_left_out_column_with_the_drafts_own_reason(
    client, r_table, tmp_path
):
    df = pd.read_csv(r_table).assign(comment=np.nan, stamp="2024-03-05 10:30")
    table = tmp_path / "wider.csv"
    df.to_csv(table, index=False)
    dropped = draft_schema_file(table).dropped  # data, not the warnings' texts
    assert set(dropped) == {"rownames", "comment", "stamp"}
    line = re.search(r'id="dropped-columns">(.*?)</p>', _draft(client, table), re.S)
    assert line is not None
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", line.group(1))).split())
    for name, why in dropped.items():
        assert f"{name}, which {' '.join(why.split())}" in text
    assert "unemp" not in text and "deny" not in text


def test_an_unedited_drafted_range_is_saved_wider_never_narrower(client, r_table, tmp_path):
    page = _draft(client, r_table)
    fields = dict(re.findall(r'name="(c\d+-[a-z]+)" value="([^"]*)"', page))
    for name, kind in re.findall(r'name="(c\d+-type)".*?<option selected>(\w+)', page, re.S):
        fields[name] = kind
    client.post("/schema", data={"csrf": csrf(page), **fields, "next": "0"})
    saved = json.loads(next((tmp_path / "runs").rglob("schema.json")).read_text())
    unemp = next(c for c in saved["columns"] if c["name"] == "unemp")
    data = pd.read_csv(r_table)["unemp"]
    assert unemp["lower"] <= data.min() and unemp["upper"] >= data.max()
    assert (unemp["lower"], unemp["upper"]) == (1.79, 10.61)


def test_a_bound_the_user_typed_is_shown_as_typed(client, r_table):
    page = _draft(client, r_table)
    fields = dict(re.findall(r'name="(c\d+-[a-z]+)" value="([^"]*)"', page))
    for name, kind in re.findall(r'name="(c\d+-type)".*?<option selected>(\w+)', page, re.S):
        fields[name] = kind
    p = re.search(r'name="(c\d+)-upper" value="[^"]*"[^>]*upper bound of unemp', page).group(1)
    fields[f"{p}-upper"] = "12.3456789"
    page = client.post("/schema", data={"csrf": csrf(page), **fields, "next": "0"}).text
    assert f'name="{p}-upper" value="12.3456789"' in page
    assert f'name="{p}-lower" value="1.79"' in page  # saved rounded: no longer the drafted one


def test_the_budget_screen_writes_delta_without_scientific_notation(client, table, tmp_path):
    ledger = ready(client, table, tmp_path / "adult.ledger.db")
    page = html.unescape(plan(client, ledger, epsilon="1", delta="1e-9").text)
    words = re.search(r'<div class="words">(.*?)</div>', page, re.S).group(1)
    assert "It spends ε = 1 and δ = 10⁻⁹ from the dataset's budget" in words
    assert "The ledger has ε = 3 and δ = 10⁻⁶ left." in words
    assert "After this release it will have ε = 2 and δ = 9.99 × 10⁻⁷ left." in words
    assert not re.search(r"\de-\d", words)


def test_the_epsilon_fields_say_how_to_choose_epsilon(client, table):
    page = client.get("/").text
    client.post("/draft", data={"csrf": csrf(page), "table": str(table), "label": "income"})
    page = html.unescape(client.get("/release").text)
    for hint in ("total-epsilon-help", "epsilon-help"):
        text = re.search(rf'id="{hint}">(.*?)</p>', page, re.S).group(1)
        assert "ε = 0.1" in text and "ε = 1" in text and "ε = 10" in text
        assert "Smaller is more\nprivate and noisier" in text
