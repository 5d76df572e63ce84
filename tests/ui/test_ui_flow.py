"""The flow of ``ppdp ui`` through FastAPI's TestClient: the same release as the command
line it shows, the leak warning until every bound is confirmed, and bad input refused in
one line next to its field with nothing written and nothing spent."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from ui_helpers import confirm_all, csrf, errors

from ppdp.accounting import budget_report
from ppdp.cli import main


def _draft(client, table, **extra):
    data = {"csrf": csrf(client.get("/").text), "table": str(table), "label": "income", **extra}
    return client.post("/draft", data=data)


def _ledger(client, path, total="3", relation="replace-one"):
    page = client.get("/release").text
    return client.post("/ledger/init", data={
        "csrf": csrf(page), "ledger": str(path), "dataset_id": "adult",
        "total_epsilon": total, "total_delta": "1e-6", "relation": relation})  # fmt: skip


def _plan(client, ledger, **values):
    page = client.get("/release").text
    data = {"csrf": csrf(page), "ledger": str(ledger), "kind": "synth", "epsilon": "1",
            "delta": "1e-9", **values}  # fmt: skip
    return client.post("/plan", data=data)


def _publish(client):
    page = client.get("/budget").text
    nonce = re.search(r'name="nonce" value="([^"]*)"', page).group(1)
    return client.post("/publish", data={"csrf": csrf(page), "nonce": nonce})


def _ready(client, table, tmp_path):
    """Drafted, confirmed and with a ledger: the release screen."""
    assert _draft(client, table).status_code == 200
    assert confirm_all(client).url.path == "/release"
    ledger = tmp_path / "adult.ledger.db"
    assert _ledger(client, ledger).status_code == 200
    return ledger


def _spent(ledger: Path) -> float:
    return budget_report(ledger).spent.epsilon


def _run(app):
    return app.state.session.run


@pytest.mark.parametrize(
    ("values", "name"),
    [({"kind": "synth"}, "synthetic.csv"),
     ({"kind": "groupby", "by": "sex,race", "means": "age"}, "groups.csv")],
)  # fmt: skip
def test_a_release_through_the_ui_equals_the_command_line_it_shows(
    app, client, table, tmp_path, values, name
):
    ledger = _ready(client, table, tmp_path)
    assert _plan(client, ledger, seed="7", **values).url.path == "/budget"
    page = _publish(client)
    assert page.url.path == "/report"
    run = _run(app)
    line = run.commands["release"]
    assert f"<code>{line}</code>".replace("'", "&#39;") in page.text or line in page.text
    # the command line shown, run by the CLI on a fresh ledger of the same budget
    cli_ledger, cli_out = tmp_path / "cli.ledger.db", tmp_path / "cli.csv"
    assert main(["budget", "init", str(cli_ledger), "--dataset-id", "adult", "--epsilon", "3",
                 "--delta", "1e-6"]) == 0  # fmt: skip
    argv = shlex.split(line)[1:]
    argv[argv.index("--ledger") + 1] = str(cli_ledger)
    argv[argv.index("-o") + 1] = str(cli_out)
    assert main(argv) == 0
    ui_out = run.folder / name
    assert ui_out.read_bytes() == cli_out.read_bytes()
    ui_side = Path(str(ui_out) + ".guarantee.json").read_text().replace(str(ledger), "L")
    cli_side = Path(str(cli_out) + ".guarantee.json").read_text().replace(str(cli_ledger), "L")
    assert ui_side == cli_side
    assert _spent(ledger) == _spent(cli_ledger) == 1.0


def test_the_run_folder_holds_the_schema_the_commands_and_the_outputs(app, client, table, tmp_path):
    ledger = _ready(client, table, tmp_path)
    _plan(client, ledger)
    _publish(client)
    report = client.post("/report", data={"csrf": csrf(client.get("/report").text)})
    assert "verdict:" in re.search(r'id="verdict">([^<]*)', report.text).group(1)
    run = _run(app)
    names = {p.name for p in run.folder.iterdir()}
    assert {"schema.json", "commands.sh", "synthetic.csv", "synthetic.csv.guarantee.json",
            "synthetic.csv.note.html", "synthetic.csv.report.html"} <= names  # fmt: skip
    script = (run.folder / "commands.sh").read_text()
    for step in ("ledger", "dry-run", "release", "note", "report", "history"):
        assert run.commands[step] in script
    assert f"test -e {ledger} || ppdp budget init {ledger}" in script
    report_page = client.get("/files/synthetic.csv.report.html")
    assert report_page.headers["content-security-policy"].endswith("sandbox")
    history = client.get("/ledger").text
    assert "TableSynthesizer" in history and f"ppdp budget show {ledger} -v" in history


@pytest.mark.parametrize(
    ("values", "name"),
    [({"kind": "synth"}, "synthetic.csv"),
     ({"kind": "groupby", "by": "sex,race", "means": "age"}, "groups.csv")],
)  # fmt: skip
def test_the_public_release_note_is_what_ppdp_note_writes_for_the_same_release(
    app, client, table, tmp_path, values, name
):
    ledger = _ready(client, table, tmp_path)
    _plan(client, ledger, seed="3", **values)
    page = _publish(client)
    run = _run(app)
    note = run.folder / f"{name}.note.html"
    line = run.commands["note"]
    assert shlex.split(line) == ["ppdp", "note", str(run.folder / name), "-o", str(note),
                                 "--schema", str(run.schema_path), "--force"]  # fmt: skip
    assert line in (run.folder / "commands.sh").read_text()
    assert "Release note (public" in page.text and f'src="/files/{note.name}"' in page.text
    # the command shown, run by the CLI on the same release, writes the same note
    cli_note = tmp_path / "cli.note.html"
    argv = shlex.split(line)[1:]
    argv[argv.index("-o") + 1] = str(cli_note)
    assert main(argv) == 0
    assert note.read_text() == cli_note.read_text()
    served = client.get(f"/files/{note.name}")
    assert served.text == note.read_text()
    assert served.headers["content-security-policy"].endswith("sandbox")
    # only this run's note is served: no other file of the folder by its suffix
    assert client.get(f"/files/{name}.guarantee.json").status_code == 404


def test_a_model_has_no_note_and_its_screen_says_why(app, client, table, tmp_path):
    ledger = _ready(client, table, tmp_path)
    _plan(client, ledger, kind="model")
    page = _publish(client).text
    assert "A model has no separate note" in page and "note" not in _run(app).commands


def test_the_leak_warning_stays_until_every_column_is_confirmed(app, client, table, tmp_path):
    page = _draft(client, table).text
    assert "were read from your data" in page and "10 column(s) and the label" in page
    assert 'id="impute-leak"' not in page  # no missing values: nan_policy error
    # confirm all but 'age': still a draft, saved as one, and every release refuses it
    response = confirm_all(client, **{"c0-public": ""})
    assert response.url.path == "/schema"
    assert "1 column(s) still to confirm" in response.text
    assert Path(_run(app).schema_path).read_text().count('"draft": true') == 1
    ledger = tmp_path / "l.db"
    _ledger(client, ledger)
    refused = _plan(client, ledger)
    assert "is a draft read from the data" in refused.text
    assert _spent(ledger) == 0.0
    done = confirm_all(client)
    assert done.url.path == "/release" and "draft" not in Path(_run(app).schema_path).read_text()


def test_drafted_impute_values_are_said_to_leak_like_the_bounds(client, table, tmp_path):
    holed = tmp_path / "holed.csv"
    df = pd.read_csv(table)
    df.loc[0, "age"] = np.nan  # a missing value: the draft declares nan_policy impute
    df.to_csv(holed, index=False)
    page = _draft(client, holed).text
    assert 'value="impute" selected' in page
    assert "drafted impute value is the middle of" in page and 'id="impute-leak"' in page


def test_a_schema_error_is_one_line_in_its_column_and_nothing_is_saved(app, client, table):
    _draft(client, table)
    response = confirm_all(client, **{"c0-lower": "90", "c0-upper": "17"})
    assert response.url.path == "/schema"
    assert errors(response.text) == {"c0": "column 'age': lower (90.0) must be < upper (17.0)"}
    assert not _run(app).schema_path.exists()


@pytest.mark.parametrize(
    ("values", "field", "text"),
    [
        ({"epsilon": "-1"}, "epsilon", "epsilon (-1.0) must be"),
        ({"epsilon": "abc"}, "epsilon", "epsilon ('abc') must be a number"),
        ({"epsilon": "5"}, "epsilon", "remain"),  # over the ledger's total of 3
        ({"seed": "1.5"}, "seed", "seed ('1.5') must be a whole number"),
        ({"kind": "groupby", "by": "nope"}, "by", "nope"),
    ],
)
def test_a_refused_release_is_one_line_next_to_its_field(
    app, client, table, tmp_path, values, field, text
):
    ledger = _ready(client, table, tmp_path)
    response = _plan(client, ledger, **values)
    assert response.url.path == "/plan"  # the release screen again, not the budget
    found = errors(response.text)
    assert list(found) == [field], found
    assert text in found[field] and "\n" not in found[field]
    assert _spent(ledger) == 0.0
    assert (
        sorted(p.name for p in _run(app).folder.iterdir())
        == ["commands.sh", "log.txt", "schema.draft.json", "schema.json"]
        or not (_run(app).folder / "synthetic.csv").exists()
    )


def test_a_release_refused_after_the_plan_writes_nothing_and_spends_nothing(
    app, client, table, tmp_path
):
    ledger = _ready(client, table, tmp_path)
    assert _plan(client, ledger).url.path == "/budget"
    table.unlink()  # the table is gone when the release runs
    response = _publish(client)
    assert response.url.path == "/publish"
    assert "adult.csv" in " ".join(errors(response.text).values()) + response.text
    assert _spent(ledger) == 0.0
    assert not (_run(app).folder / "synthetic.csv").exists()


def test_a_double_submit_releases_once(app, client, table, tmp_path):
    ledger = _ready(client, table, tmp_path)
    _plan(client, ledger)
    page = client.get("/budget").text
    form = {"csrf": csrf(page), "nonce": re.search(r'name="nonce" value="([^"]*)"', page)[1]}
    assert client.post("/publish", data=form).url.path == "/report"
    again = client.post("/publish", data=form)
    assert "already submitted" in again.text
    assert _spent(ledger) == 1.0


def test_group_statistics_and_a_model_through_the_ui(app, client, table, tmp_path):
    ledger = _ready(client, table, tmp_path)
    assert _plan(client, ledger, kind="groupby", by="sex", means="age").url.path == "/budget"
    page = _publish(client).text
    assert "released group statistics" in page and "mean_age" in page
    assert "ppdp publish groupby" in _run(app).commands["release"]
    assert _plan(client, ledger, kind="model", epsilon="0.5").url.path == "/budget"
    page = _publish(client).text
    assert "model.json" in page and "ppdp train logreg" in _run(app).commands["release"]
    assert _spent(ledger) == 1.5


@pytest.mark.parametrize(
    ("path", "text"),
    [("", "give the path"), ("/etc/passwd", "must be a file ending in"),
     ("missing.csv", "does not exist"), ("folder.csv", "is not a regular file")],
)  # fmt: skip
def test_the_table_path_is_validated_in_one_line(app, client, tmp_path, path, text):
    (tmp_path / "folder.csv").mkdir()
    response = _draft(client, tmp_path / path if path and path[0] != "/" else path)
    assert text in errors(response.text)["table"]
    assert _run(app) is None and not (tmp_path / "runs").exists()


def test_only_the_runs_own_files_are_served(client, table):
    _draft(client, table)
    assert client.get("/files/schema.draft.json").status_code == 404
    assert client.get("/files/..%2Fadult.csv").status_code == 404
    assert client.get("/files/commands.sh").status_code == 200


def test_a_release_is_charged_under_the_ledgers_relation(app, client, table, tmp_path):
    _draft(client, table)
    confirm_all(client)
    ledger = tmp_path / "add-remove.db"
    _ledger(client, ledger, relation="add/remove")
    assert _plan(client, ledger).url.path == "/budget"
    assert "--relation add/remove" in _run(app).commands["dry-run"]
    assert "1,500 rows" not in client.get("/budget").text  # n is private under add/remove
    assert _publish(client).url.path == "/report"
    assert budget_report(ledger).spends[0].epsilon == 1.0


def test_an_existing_ledger_is_used_by_typing_its_path(app, client, table, tmp_path):
    ledger = tmp_path / "kept.db"
    assert (
        main(
            [
                "budget",
                "init",
                str(ledger),
                "--dataset-id",
                "a",
                "--epsilon",
                "2",
                "--delta",
                "1e-6",
            ]
        )
        == 0
    )
    _draft(client, table)
    confirm_all(client)
    missing = _plan(client, tmp_path / "nope.db")
    assert "ledger" in errors(missing.text) and "Create the ledger" in missing.text
    assert _plan(client, ledger).url.path == "/budget"
    _publish(client)
    assert _spent(ledger) == 1.0
    assert str(ledger) in client.get("/ledger").text


def test_a_parquet_table_goes_through_the_same_flow(app, client, table, tmp_path):
    pytest.importorskip("pyarrow")
    import pandas as pd

    parquet = tmp_path / "adult.parquet"
    pd.read_csv(table).to_parquet(parquet, index=False)
    ledger = _ready(client, parquet, tmp_path)
    assert _plan(client, ledger).url.path == "/budget"
    assert _publish(client).url.path == "/report"
    assert f"ppdp publish synth {parquet}" in _run(app).commands["release"]


@pytest.mark.slow  # eight 'ppdp' processes: about 30 s on two busy cores
def test_commands_sh_repeats_the_release(app, client, table, tmp_path):
    """The run folder's script, rerun once the outputs are moved away, releases the same
    table again (seeded) through the same ledger: a second spend."""
    import os
    import shutil
    import subprocess
    import sys

    ledger = _ready(client, table, tmp_path)
    _plan(client, ledger, seed="11")
    _publish(client)
    client.post("/report", data={"csrf": csrf(client.get("/report").text), "target": ""})
    run = _run(app)
    kept = tmp_path / "kept.csv"
    shutil.move(run.folder / "synthetic.csv", kept)
    (run.folder / "synthetic.csv.guarantee.json").unlink()
    shim = tmp_path / "bin" / "ppdp"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m ppdp "$@"\n')
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join(sys.path)}  # fmt: skip
    done = subprocess.run(["sh", str(run.folder / "commands.sh")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (run.folder / "synthetic.csv").read_bytes() == kept.read_bytes()
    assert _spent(ledger) == 2.0


def test_a_wide_table_of_120_columns(app, client, tmp_path):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    wide = pd.DataFrame(rng.integers(0, 1000, (200, 120)), columns=[f"x{i}" for i in range(120)])
    path = tmp_path / "wide.csv"
    wide.to_csv(path, index=False)
    page = client.post("/draft", data={"csrf": csrf(client.get("/").text), "table": str(path)})
    assert page.text.count('aria-label="select x') == 120
    assert "120 column(s) still to confirm" in page.text
    assert confirm_all(client, **{"label-classes": ""}).url.path == "/release"
    assert len(_run(app).schema["columns"]) == 120 and "draft" not in _run(app).schema


@pytest.mark.parametrize(
    ("values", "field", "text"),
    [({"total_epsilon": "30"}, "total_epsilon", "epsilon (30) of the dataset's total budget"),
     ({"total_epsilon": "30"}, "total_epsilon", "epsilon (30) of the dataset's total budget "
      "must be at most 10, the limit of every release: a larger total is a weak guarantee "
      "(the app stays within 10; the command line's --allow-large-epsilon accepts more)"),
     ({"dataset_id": ""}, "dataset_id", "dataset_id ('') must be a non-empty string"),
     ({"total_delta": "x"}, "total_delta", "total_delta ('x') must be a number")],
)  # fmt: skip
def test_a_refused_ledger_is_one_line_next_to_its_field(client, table, tmp_path, values, field,
                                                        text):  # fmt: skip
    _draft(client, table)
    confirm_all(client)
    page = client.get("/release").text
    data = {"csrf": csrf(page), "ledger": str(tmp_path / "l.db"), "dataset_id": "a",
            "total_epsilon": "3", "total_delta": "1e-6", "relation": "replace-one"}  # fmt: skip
    data |= values
    found = errors(client.post("/ledger/init", data=data).text)
    assert list(found) == [field] and found[field].startswith(text)
    assert not (tmp_path / "l.db").exists()
