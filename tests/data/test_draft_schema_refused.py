"""A drafted schema is marked ``draft: true`` and every release refuses it until reviewed.

``ppdp schema draft`` reads bounds and categories from the data: they are the data's own,
and a release resting on them leaks. The draft says ``draft: true`` (YAML and JSON),
``schema check`` reports it (exit 2), and every publisher, learner and release command
refuses it in one line before reading the data or spending budget. Deleting the line (or
:meth:`Schema.reviewed`) is what lets the same release run.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant, budget_report
from ppdp.budget import PrivacyBudget
from ppdp.cli import main
from ppdp.data import Schema, draft_schema
from ppdp.data.schema import DRAFT_COMMENT
from ppdp.exceptions import PrivacyLeakWarning, SchemaError
from ppdp.learn import PrivateLogisticRegression
from ppdp.publish import LaplacePublisher
from ppdp.registry import LEARNERS, PUBLISHERS

N = 120
REFUSAL = "is a draft read from the data (its bounds and categories are the data's own, which"


@pytest.fixture
def table() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame(
        {
            "balance": np.round(rng.uniform(0, 1000, N), 2),
            "city": rng.choice(["Oslo", "Bergen", "Tromsø"], N),
            "y": np.array(["no", "yes"] * (N // 2)),
        }
    )


@pytest.fixture
def files(tmp_path, table):
    """The table as CSV, a ledger of ε = 10, and the drafted schema in YAML and JSON."""
    table.to_csv(tmp_path / "data.csv", index=False)
    argv = ["budget", "init", str(tmp_path / "b.db"), "--dataset-id", "t", "--epsilon", "10"]
    assert main(argv) == 0
    for suffix in ("yaml", "json"):
        out = tmp_path / f"s.{suffix}"
        assert main(["schema", "draft", str(tmp_path / "data.csv"), "-o", str(out), "-q",
                     "--label", "y"]) == 0  # fmt: skip
    return tmp_path


def _drafted(table: pd.DataFrame) -> Schema:
    with pytest.warns(PrivacyLeakWarning):
        return draft_schema(table, label="y")


def _undraft(path) -> None:
    """What a user does after the review: delete the ``draft: true`` line (or key)."""
    if path.suffix == ".json":
        raw = json.loads(path.read_text())
        del raw["draft"]
        path.write_text(json.dumps(raw))
    else:
        lines = path.read_text().splitlines(keepends=True)
        assert lines.count("draft: true\n") == 1
        path.write_text("".join(x for x in lines if x != "draft: true\n"))


# -- the draft says it --------------------------------------------------------------------


def test_draft_writes_the_key_in_yaml_under_a_comment_and_in_json(files) -> None:
    text = (files / "s.yaml").read_text()
    lines = text.splitlines()
    at = lines.index("draft: true")
    assert "\n".join(lines[at - 2 : at]) + "\n" == DRAFT_COMMENT
    assert "review every bound and category" in DRAFT_COMMENT
    assert "delete the next line" in DRAFT_COMMENT
    raw = json.loads((files / "s.json").read_text())
    assert raw["draft"] is True and next(iter(raw)) == "draft"  # top-level, first key
    for suffix in ("yaml", "json"):
        schema = Schema.from_file(files / f"s.{suffix}")
        assert schema.draft is True and schema.source == str(files / f"s.{suffix}")


def test_the_python_draft_is_marked_and_round_trips(table, tmp_path) -> None:
    schema = _drafted(table)
    assert schema.draft is True
    assert Schema.from_dict(schema.to_dict()).draft is True
    assert schema.without_label().draft is True
    for name in ("r.yaml", "r.json"):
        assert Schema.from_file(schema.to_file(tmp_path / name)) == schema
    reviewed = schema.reviewed()
    assert reviewed.draft is False and "draft" not in reviewed.to_dict()
    assert "draft" not in reviewed.to_yaml() and reviewed.columns == schema.columns
    with pytest.raises(SchemaError, match=r"^draft \('yes'\) must be true or false"):
        Schema.from_dict({**schema.to_dict(), "draft": "yes"})


def test_schema_check_reports_a_draft_in_one_line_and_exits_2(files, capsys) -> None:
    for suffix in ("yaml", "json"):
        path = files / f"s.{suffix}"
        assert main(["schema", "check", str(path)]) == 2
        captured = capsys.readouterr()
        assert captured.out.startswith(f"{path}: valid schema")
        assert captured.err.splitlines() == [
            f"ppdp: error: schema {str(path)!r} {REFUSAL} a release would leak): review it "
            "and delete 'draft: true'"
        ]
        # with --data too: the data are checked, and the draft still exits 2
        assert main(["schema", "check", str(path), "--data", str(files / "data.csv")]) == 2
        captured = capsys.readouterr()
        assert f"{N:,} rows" in captured.out and REFUSAL in captured.err
        _undraft(path)
        assert main(["schema", "check", str(path)]) == 0
        assert capsys.readouterr().err == ""


# -- every release refuses it, before the data and the budget --------------------------------


def _accountant() -> Accountant:
    return Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))


def test_a_publisher_refuses_a_draft_before_the_data_and_the_budget(table) -> None:
    schema = _drafted(table)
    acct = _accountant()
    publisher = LaplacePublisher(schema=schema, epsilon=1.0)
    with pytest.raises(SchemaError) as exc:
        publisher.fit(object(), accountant=acct)  # not a table: it is never read
    assert str(exc.value).startswith(f"schema (draft=True) {REFUSAL}")
    tail = "review it and use schema.reviewed(), or delete 'draft: true' from its file"
    assert "\n" not in str(exc.value) and str(exc.value).endswith(tail)
    assert acct.spent == PrivacyBudget(0.0) and not hasattr(publisher, "release_")
    with pytest.raises(SchemaError, match="is a draft read from the data"):
        publisher.privacy_budget()  # the cost query validates the same parameters
    publisher.schema = schema.reviewed()
    publisher.fit(table, accountant=acct)
    assert acct.spent.epsilon == pytest.approx(1.0) and len(publisher.release_.data) == N


def test_a_learner_refuses_a_draft_before_the_data_and_the_budget(table) -> None:
    schema = _drafted(table)
    acct = _accountant()
    learner = PrivateLogisticRegression(epsilon=1.0, schema=schema)
    with pytest.raises(SchemaError, match=f"^schema \\(draft=True\\) {REFUSAL[:20]}"):
        learner.fit(object(), accountant=acct)
    assert acct.spent == PrivacyBudget(0.0) and not hasattr(learner, "coef_")
    learner.set_params(schema=schema.reviewed()).fit(table, accountant=acct)
    assert acct.spent.epsilon == pytest.approx(1.0)
    assert set(learner.predict(table.drop(columns="y"))) <= {"no", "yes"}


REQUIRED = {"pca": {"n_components": 1}, "lda-projection": {"delta": 1e-6}}


@pytest.mark.parametrize("kind", ["publisher", "learner"])
def test_every_registered_estimator_refuses_a_draft(table, kind) -> None:
    schema = _drafted(table)
    registry = PUBLISHERS if kind == "publisher" else LEARNERS
    for name in registry.names():
        cls = registry.load(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = cls(schema=schema, epsilon=1.0, **REQUIRED.get(name, {}))
            with pytest.raises(SchemaError, match="is a draft read from the data"):
                est.privacy_budget()


def _publish(root, schema: str, *extra: str) -> list[str]:
    return ["publish", "laplace", str(root / "data.csv"), "--schema", str(root / schema),
            "--epsilon", "1", "--ledger", str(root / "b.db"), "-o", str(root / "out.csv"),
            *extra]  # fmt: skip


def _train(root, schema: str, *extra: str) -> list[str]:
    return ["train", "logreg", str(root / "data.csv"), "--schema", str(root / schema),
            "--epsilon", "1", "--ledger", str(root / "b.db"), "-o", str(root / "m.json"),
            *extra]  # fmt: skip


# ``ppdp train`` builds its learner without the schema (ppdp.learn.files encodes the table
# itself), so the learners' parameter check cannot see the draft: learn/files.py's
# _binary_schema needs ``schema.check_reviewed()`` (strict: this fails once it has it).


@pytest.mark.parametrize("command", [_publish, _train])
@pytest.mark.parametrize("schema", ["s.yaml", "s.json"])
def test_the_cli_refuses_a_draft_in_one_line_writes_and_spends_nothing(
    files, capsys, command, schema
) -> None:
    expected = (
        f"ppdp: error: schema {str(files / schema)!r} {REFUSAL} a release would leak): "
        "review it and delete 'draft: true'"
    )
    (files / "data.csv").rename(files / "kept.csv")  # a refusal that read it would say so
    (files / "data.csv").write_text("")
    for extra in ((), ("--dry-run",)):
        assert main(command(files, schema, *extra)) == 2
        err = capsys.readouterr().err
        assert err.splitlines()[-1] == expected and "Traceback" not in err
        assert [x for x in err.splitlines() if x.startswith("ppdp: error")] == [expected]
    assert budget_report(files / "b.db").spends == ()
    assert not any((files / n).exists() for n in ("out.csv", "out.csv.guarantee.json", "m.json"))
    (files / "kept.csv").replace(files / "data.csv")
    _undraft(files / schema)
    assert main(command(files, schema)) == 0
    capsys.readouterr()
    assert len(budget_report(files / "b.db").spends) == 1


# -- in the same area ----------------------------------------------------------------------


def test_yaml_booleans_of_every_column_are_named_in_one_message(tmp_path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "columns:\n"
        "  - {name: smoker, type: categorical, categories: [no, yes]}\n"
        "  - {name: drinker, type: categorical, categories: [no, yes, 'sometimes']}\n"
        "  - {name: n, type: numeric, lower: 0, upper: 1, integer: yes}\n"
        "label: {name: y, classes: [off, on]}\n"
    )
    with pytest.raises(SchemaError) as exc:
        Schema.from_file(path)
    message = str(exc.value)
    assert "\n" not in message and message.startswith("3 declarations contain booleans")
    for place in (
        "categories of 'smoker' (false, true): quote them: ['no', 'yes']",
        "categories of 'drinker' (false, true): quote them: ['no', 'yes', 'sometimes']",
        "classes of label 'y' (false, true): quote them: ['off', 'on']",
    ):
        assert place in message


def test_check_data_without_the_label_checks_the_features(files, capsys) -> None:
    _undraft(files / "s.yaml")
    scoring = files / "score.csv"
    pd.read_csv(files / "data.csv").drop(columns="y").to_csv(scoring, index=False)
    assert main(["schema", "check", str(files / "s.yaml"), "--data", str(scoring)]) == 0
    captured = capsys.readouterr()
    said = [x for x in captured.out.splitlines() if x.startswith("label")]
    assert said == [f"label 'y' is not a column of {scoring}: not checked (features only)"]
    assert "values clipped to the declared bounds:" in captured.out and captured.err == ""
    # a feature missing too is still the reader's one-line refusal
    pd.read_csv(scoring).drop(columns="city").to_csv(scoring, index=False)
    assert main(["schema", "check", str(files / "s.yaml"), "--data", str(scoring)]) == 2
    assert "missing column(s) 'city', 'y'" in capsys.readouterr().err


def test_a_federated_owner_refuses_a_draft_before_reading(table) -> None:
    # The owners' sums rest on the declared norm bound: a draft's bounds are the data's own.
    from ppdp.federated.owner_data import load_owner_statistics

    draft = _drafted(table)
    with pytest.raises(SchemaError, match="draft"):
        load_owner_statistics(object(), draft)  # refused before the data are looked at
    stats = load_owner_statistics(table, draft.reviewed())
    assert stats is not None
