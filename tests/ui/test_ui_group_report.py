"""The report screen offers, for a group-by release, the report ``ppdp report`` makes of it
(:func:`ppdp.evaluate.group_report`, custodian only): the command shown, the page saved
beside the release in the run folder, linked from the ledger's screen; a refusal is one
line next to the button, nothing written."""

from __future__ import annotations

import html
import re
import shlex

from ui_helpers import csrf, plan, publish, ready

from ppdp.accounting import budget_report
from ppdp.cli import main


def _groupby(client, table, tmp_path):
    ledger = ready(client, table, tmp_path / "adult.ledger.db")
    plan(client, ledger, kind="groupby", by="sex", means="age", epsilon="1", seed="4")
    page = publish(client).text
    return ledger, page


def _shown_line(page: str) -> str:
    section = re.search(r"The report on the command line</h2>\s*<pre><code>([^<]*)<", page)
    return html.unescape(section.group(1))


def test_a_groupby_release_offers_its_report_and_shows_it(app, client, table, tmp_path, capsys):
    ledger, page = _groupby(client, table, tmp_path)
    run = app.state.session.run
    release = run.folder / "groups.csv"
    assert "Make the report" in page and 'id="report-what"' in page
    assert 'name="target"' not in page  # no column to predict in a group-by's report
    line = _shown_line(page)
    assert line == shlex.join(["ppdp", "report", str(release), "--original", str(run.data),
                               "--schema", str(run.schema_path), "-o",
                               f"{release}.report.html", "--force"])  # fmt: skip
    spent = budget_report(ledger).spent.epsilon
    shown = client.post("/report", data={"csrf": csrf(page), "target": "income"}).text
    verdict = html.unescape(re.search(r'id="verdict">([^<]*)<', shown).group(1))
    assert verdict.startswith("verdict: ") and "count" in verdict and "mean_age" in verdict
    details = html.unescape(re.search(r'id="verdict-details">(.*?)</ul>', shown, re.S).group(1))
    assert "intervals cover the true value" in details
    saved = run.folder / "groups.csv.report.html"
    assert saved.is_file() and 'src="/files/groups.csv.report.html"' in shown
    served = client.get("/files/groups.csv.report.html")
    assert served.status_code == 200 and served.text == saved.read_text(encoding="utf-8")
    assert served.headers["content-security-policy"].endswith("sandbox")
    assert 'href="/files/groups.csv.report.html"' in client.get("/ledger").text
    assert line in (run.folder / "commands.sh").read_text()
    assert budget_report(ledger).spent.epsilon == spent  # a report costs nothing
    # the command it shows makes the same report (the CLI prints the same verdict)
    capsys.readouterr()
    cli = shlex.split(line)[1:]
    cli[cli.index("-o") + 1] = str(tmp_path / "cli.report.html")
    assert main(cli) == 0
    assert verdict in capsys.readouterr().out


def test_the_ledger_offers_the_report_of_the_latest_groupby_release(client, table, tmp_path):
    _groupby(client, table, tmp_path)
    releases = client.get("/ledger").text.split('id="releases"', 1)[1]
    row = re.search(r"<code>groups\.csv</code>.*?</tr>", releases, re.S).group(0)
    assert '<a href="/report">make it</a>' in row


def test_a_refused_groupby_report_is_one_line_by_the_button_nothing_written(
    app, client, table, tmp_path
):
    _, page = _groupby(client, table, tmp_path)
    run = app.state.session.run
    (run.folder / "groups.csv.guarantee.json").unlink()  # not a group-by release any more
    response = client.post("/report", data={"csrf": csrf(page)})
    assert response.status_code == 200
    error = re.search(r'class="error" id="report-error" role="alert">([^<]*)<', response.text)
    assert error is not None and "\n" not in error.group(1)
    assert 'aria-describedby="report-error"' in response.text
    assert not (run.folder / "groups.csv.report.html").exists()
