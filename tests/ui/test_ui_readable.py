"""The first new-user trial's last findings (``benchmarks/ui/new_user_trial.md`` #14-#16),
fixed: the report's verdict as a short headline with its parts below, the ledger's history
as a table (one row per release, from :func:`ppdp.accounting.files.release_history`, the
library's own rows), and the dry run's ε and δ in the budget screen's plain words."""

from __future__ import annotations

import html
import re

import pytest
from ui_helpers import csrf, plan, publish, ready

from ppdp.accounting import budget_report


def _text(page: str, pattern: str) -> str:
    """The text of the first element ``pattern`` opens, tags dropped and entities read."""
    found = re.search(pattern + r"(.*?)</(?:p|pre|ul|table)>", page, re.S)
    assert found is not None, pattern
    return html.unescape(re.sub(r"<[^>]+>", " ", found.group(1)))


def test_the_dry_run_on_screen_reads_epsilon_and_delta_without_scientific_notation(
    client, table, tmp_path
):
    ledger = ready(client, table, tmp_path / "adult.ledger.db")
    page = plan(client, ledger).text
    lines = _text(page, r'<pre class="plan">')
    assert "would charge ε = 1 and δ = 10⁻⁹ in 1 ledger entry" in lines
    assert "the ledger has ε = 3 and δ = 10⁻⁶ left; after this release: ε = 2 and δ = " in lines
    assert not re.search(r"δ ?= ?\d(\.\d+)?e-\d", lines), lines  # no 1e-06, 9.99e-07
    # the command line shown beside it is still the command line's own
    assert "--delta 1e-09" in _text(page, r"The dry run on the command line")


def test_the_ledger_screen_shows_one_row_per_release_from_the_library(client, table, tmp_path):
    from ppdp.accounting.files import release_history

    ledger = ready(client, table, tmp_path / "adult.ledger.db")
    plan(client, ledger, kind="groupby", by="sex", means="age", epsilon="1")
    publish(client)
    plan(client, ledger, epsilon="0.5")
    publish(client)
    page = client.get("/ledger").text
    body = re.search(r'<table class="data" id="history".*?<tbody>(.*?)</tbody>', page, re.S)
    assert body is not None, "no history table"
    rows = [html.unescape(re.sub(r"<[^>]+>", " ", r)) for r in body.group(1).split("</tr>")[:-1]]
    assert len(rows) == 2  # the group-by's two entries are one release
    groups, synthetic = (" ".join(r.split()) for r in rows)
    assert "groups.csv entries 1–2" in groups and "GroupByPublisher: counts; sums of age" in groups
    assert "replace-one, per row" in groups and "ε = 2 and δ = 10⁻⁶" in groups  # left after
    assert "synthetic.csv entry 3" in synthetic and "10⁻⁹" in synthetic
    assert "ε = 1.5 and δ = 9.99 × 10⁻⁷" in synthetic
    # the same rows as the library's, and the command still shown (its text folded)
    library = release_history(budget_report(ledger))
    assert [r.entries for r in library] == [(1, 2), (3,)]
    assert f"ppdp budget show {ledger} -v" in page
    assert '<pre class="ledger">' in page and "TableSynthesizer" in page


@pytest.mark.filterwarnings("ignore")
def test_the_report_screen_gives_a_short_verdict_with_its_parts_below(client, table, tmp_path):
    ledger = ready(client, table, tmp_path / "adult.ledger.db")
    plan(client, ledger, seed="5")
    publish(client)
    page = client.post("/report", data={"csrf": csrf(client.get("/report").text)}).text
    headline = " ".join(_text(page, r'id="verdict">').split())
    assert headline.startswith("verdict: ") and len(headline) <= 110, headline
    assert "total-variation" not in headline  # the numbers are below, not in the headline
    details = _text(page, r'id="verdict-details">')
    for part in ("marginals: ", "pairs: ", "associations: "):
        assert part in details
        assert part.rstrip(": ") in headline
    assert "mean total-variation distance" in details
