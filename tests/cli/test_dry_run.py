"""Issue 14 items 2 and 3: ``--dry-run`` before paying, and warnings by default.

``--dry-run`` runs every check of the real run, prints the charges, spends nothing and
writes nothing; the charges it prints are the ones the real run then records. A column with
more than 5 % of its values clipped warns on stderr without ``-v``; noisy projections whose
per-row noise swamps the projection's range warn before the spend with the ε that suffices.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import budget_report
from ppdp.cli import main
from ppdp.data import Schema

N = 200


def _schema(upper: float = 10.0) -> dict:
    return {
        "columns": [
            {"name": "x1", "type": "numeric", "lower": 0, "upper": upper},
            {"name": "x2", "type": "numeric", "lower": 0, "upper": 10},
            {"name": "colour", "type": "categorical", "categories": ["red", "blue"]},
        ],
        "label": {"name": "cls", "classes": ["no", "yes"], "public_counts": [N // 2, N // 2]},
    }


@pytest.fixture
def files(tmp_path):
    """A private table, its schema, a public sample and a ledger of ε = 100."""
    rng = np.random.default_rng(3)
    cls = np.array(["no", "yes"] * (N // 2))
    df = pd.DataFrame(
        {
            "x1": np.round(rng.uniform(0, 9.9, N), 3),
            "x2": np.round(rng.uniform(0, 9.9, N) + (cls == "yes") * 0.05, 3),
            "colour": rng.choice(["red", "blue"], N),
            "cls": cls,
        }
    )
    df.loc[:9, "x1"] = 50.0  # 10 of 200 values (5 %) above the declared upper bound 10
    df.to_csv(tmp_path / "data.csv", index=False)
    df.drop(columns="cls").head(40).to_csv(tmp_path / "public.csv", index=False)
    (tmp_path / "schema.json").write_text(json.dumps(_schema()))
    argv = ["budget", "init", str(tmp_path / "b.db"), "--dataset-id", "t", "--epsilon", "100"]
    argv += ["--delta", "1e-4", "--allow-large-epsilon"]
    assert main(argv) == 0
    return tmp_path


PUBLISH = {
    "pca": ["--components", "2"],
    "lda-synth": [],
    "lda-projection": ["--delta", "1e-6"],
    "laplace": [],
    "exponential": [],
    "synth": ["--delta", "1e-6"],
}
TRAIN = {
    "logreg": [],
    "svm": [],
    "rbf-svm": ["--components", "20"],
    "hybrid-svm": ["--components", "10", "--public", "PUBLIC"],
}


def _publish(root, method: str, *extra: str) -> list[str]:
    return [
        "publish",
        method,
        str(root / "data.csv"),
        "--schema",
        str(root / "schema.json"),
        "--epsilon",
        "2",
        "--ledger",
        str(root / "b.db"),
        "-o",
        str(root / "out.csv"),
        *PUBLISH[method],
        *extra,
    ]


def _train(root, learner: str, *extra: str) -> list[str]:
    opts = [str(root / "public.csv") if a == "PUBLIC" else a for a in TRAIN[learner]]
    return [
        "train",
        learner,
        str(root / "data.csv"),
        "--schema",
        str(root / "schema.json"),
        "--epsilon",
        "2",
        "--ledger",
        str(root / "b.db"),
        "-o",
        str(root / "model.json"),
        *opts,
        *extra,
    ]


def _planned(out: str) -> list[tuple[float, float]]:
    """The (ε, δ) of each planned ledger entry, as printed."""
    found = re.findall(r"^  \d+\. .*: epsilon = (\S+), delta = (\S+)$", out, re.M)
    return [(float(e), float(d)) for e, d in found]


def _check_dry_then_real(root, argv, capsys, written) -> None:
    assert main([*argv, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "nothing was spent or written" in out
    assert budget_report(root / "b.db").spends == ()
    assert not any(p.exists() for p in written)
    planned = _planned(out)
    assert planned
    assert main(argv) == 0
    capsys.readouterr()
    spends = budget_report(root / "b.db").spends
    charged = [(s.budget.epsilon, s.budget.delta) for s in spends]
    assert len(charged) == len(planned)
    for (e, d), (pe, pd_) in zip(charged, planned, strict=True):
        assert e == pytest.approx(pe, rel=1e-9) and d == pytest.approx(pd_, rel=1e-9)
    assert all(p.exists() for p in written)


@pytest.mark.parametrize("method", list(PUBLISH))
def test_publish_dry_run_spends_nothing_writes_nothing_and_prints_the_real_charges(
    files, method, capsys
):
    out = files / "out.csv"
    argv = _publish(files, method, "--seed", "1", "--allow-seeded")
    _check_dry_then_real(files, argv, capsys, [out, out.with_name("out.csv.guarantee.json")])


@pytest.mark.parametrize("learner", list(TRAIN))
def test_train_dry_run_spends_nothing_writes_nothing_and_prints_the_real_charge(
    files, learner, capsys
):
    pytest.importorskip("ppdp.learn.rbf_svm")
    argv = _train(files, learner, "--seed", "1", "--allow-seeded")
    _check_dry_then_real(files, argv, capsys, [files / "model.json"])


def test_dry_run_still_refuses_an_existing_output(files, capsys):
    (files / "out.csv").write_text("keep me\n")
    assert main([*_publish(files, "laplace"), "--dry-run"]) == 2
    assert "--force" in capsys.readouterr().err
    assert (files / "out.csv").read_text() == "keep me\n"
    assert budget_report(files / "b.db").spends == ()


def test_dry_run_prints_noise_in_column_units_and_the_clipping_table(files, capsys):
    assert main([*_publish(files, "laplace"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "Laplace noise, scale b = " in out
    b = float(re.search(r"scale b = (\S+) per released value", out).group(1))
    line = re.search(r"x1: b x declared range 10 = (\S+) expected", out)
    assert float(line.group(1)) == pytest.approx(b * 10, rel=1e-3)
    assert re.search(r"^  x1 +\[0, 10\] +10 +5\.0%$", out, re.M)
    assert re.search(r"^  x2 +\[0, 10\] +0 +0\.0%$", out, re.M)
    assert "left; after this release" in out


def test_clipping_warns_by_default_above_five_percent_only(files, capsys):
    # 10 of 200 clipped (5 %): no warning
    assert main([*_publish(files, "laplace"), "--dry-run"]) == 0
    assert "were clipped" not in capsys.readouterr().err
    # bounds [0, 5]: about half of x1 is clipped, one warning line for x1 only
    (files / "schema.json").write_text(json.dumps(_schema(upper=5.0)))
    for argv in (_publish(files, "laplace"), _train(files, "logreg")):
        assert main([*argv, "--dry-run"]) == 0
        err = capsys.readouterr().err
        lines = [ln for ln in err.splitlines() if "were clipped" in ln]
        assert len(lines) == 1 and "'x1'" in lines[0] and "[0, 5]" in lines[0], err
    # and in a real run, without -v
    assert main(_publish(files, "laplace", "--seed", "1", "--allow-seeded")) == 0
    assert "'x1'" in capsys.readouterr().err


def test_noisy_projections_at_small_epsilon_warn_before_the_spend_with_the_epsilon_needed(
    files, capsys
):
    from ppdp.publish.lda_projection import LDAProjectionPublisher

    schema = Schema.from_file(files / "schema.json")
    message = LDAProjectionPublisher(1.0, 1e-6, schema).low_utility_message()
    assert message is not None and "mostly noise" in message
    needed = float(re.search(r"epsilon above ([0-9.]+)", message).group(1))
    assert LDAProjectionPublisher(needed, 1e-6, schema).low_utility_message() is None
    assert LDAProjectionPublisher(needed * 0.99, 1e-6, schema).low_utility_message()
    # on the command line: said on stderr, before anything is spent
    argv = _publish(files, "lda-projection")
    argv[argv.index("--epsilon") + 1] = "1"
    assert main([*argv, "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "warning: LowUtilityWarning: noisy projections at epsilon 1.0" in err
    assert f"epsilon above {needed:g}" in err
    assert budget_report(files / "b.db").spends == ()


def test_schema_check_lists_clipping_and_undeclared_values(files, capsys):
    df = pd.read_csv(files / "data.csv")
    df.loc[:2, "colour"] = "green"
    df.loc[3, "colour"] = "mauve"
    df.to_csv(files / "data.csv", index=False)
    # the report is printed, and exit 2: a release would refuse the undeclared colours
    assert (
        main(["schema", "check", str(files / "schema.json"), "--data", str(files / "data.csv")])
        == 2
    )
    captured = capsys.readouterr()
    out = captured.out
    assert re.search(r"^  x1 +\[0, 10\] +10 +5\.0%$", out, re.M)
    assert "colour" in out and "'green' (3)" in out and "'mauve' (1)" in out
    assert "ppdp: error: column 'colour': 4 value(s) are not among" in captured.err


def test_schema_check_caps_the_list_of_undeclared_values(files, capsys):
    df = pd.read_csv(files / "data.csv")
    df.loc[:11, "colour"] = [f"shade{i}" for i in range(12)]
    df.to_csv(files / "data.csv", index=False)
    argv = ["schema", "check", str(files / "schema.json"), "--data", str(files / "data.csv")]
    assert main([*argv, "--max-values", "3"]) == 2  # undeclared: a release would refuse
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  colour:"))
    assert "12 distinct" in line and line.count("shade") == 3 and "and 9 more" in line
    assert main([*argv, "--max-values", "0"]) == 2
    assert "--max-values (0) must be an integer >= 1" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["publish", "train"])
def test_clipping_warning_comes_before_the_spend(files, command, capsys, monkeypatch):
    from ppdp.accounting import Accountant

    (files / "schema.json").write_text(json.dumps(_schema(upper=5.0)))
    seen: list[bool] = []
    real_spend = Accountant.spend

    def spend(self, *args, **kwargs):
        seen.append("'x1'" in capsys.readouterr().err)
        return real_spend(self, *args, **kwargs)

    monkeypatch.setattr(Accountant, "spend", spend)
    build = _publish if command == "publish" else _train
    first = "laplace" if command == "publish" else "logreg"
    assert main(build(files, first, "--seed", "1", "--allow-seeded")) == 0
    assert seen == [True]


def test_synth_dry_run_states_both_sigmas_of_its_plan(files, capsys):
    # The tree model draws two kinds of tables: the dry run names both σ, as planned.
    from ppdp.data import Schema
    from ppdp.publish import TableSynthesizer

    argv = _publish(files, "synth", "--method", "tree")
    assert main([*argv, "--dry-run"]) == 0
    out = capsys.readouterr().out
    schema = Schema.from_file(files / "schema.json")
    plan = TableSynthesizer(2.0, schema, delta=1e-6, method="tree").plan()
    first = re.search(r"sigma = (\S+) per cell of the (\d+) first-round tables", out)
    edges = re.search(r"and sigma = (\S+) per cell of the (\d+) edge tables", out)
    assert float(first.group(1)) == pytest.approx(plan.sigma_first, rel=1e-3)
    assert int(first.group(2)) == len(plan.first)
    assert float(edges.group(1)) == pytest.approx(plan.sigma_second, rel=1e-3)
    assert int(edges.group(2)) == plan.n_second


@pytest.mark.parametrize("command", ["publish", "train"])
def test_dry_run_without_a_ledger_says_so_once_in_its_summary(files, command, capsys):
    # New-user trial: the run-time warning "the spend ... is not recorded anywhere" came
    # before a dry run that spends nothing; its summary already says what a real run does.
    argv = _publish(files, "laplace") if command == "publish" else _train(files, "logreg")
    at = argv.index("--ledger")
    argv = argv[:at] + argv[at + 2 :]
    assert main([*argv, "--dry-run"]) == 0
    printed = capsys.readouterr()
    assert "no --ledger given: the real run would record the spend nowhere" in printed.out
    assert "not recorded anywhere" not in printed.err
    assert main(argv) == 0  # the real run still warns
    assert "no --ledger given; the spend" in capsys.readouterr().err


# -- each mechanism is named by its own dry run --------------------------------------------


def test_the_exponential_dry_run_describes_the_exponential_mechanism(bank_table, tmp_path, capsys):
    data, schema = bank_table
    argv = ["publish", "exponential", str(data), "-o", str(tmp_path / "out.csv")]
    assert main([*argv, "--schema", str(schema), "--epsilon", "1", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "Laplace noise" not in out
    # Δu = p1 + 2·p2 = 1 + 2·2 = 5 (label included); the sampler's Laplace is at ε/2.
    line = next(x for x in out.splitlines() if "exponential mechanism" in x)
    assert "sensitivity 5" in line and "truncated to [0, 1]" in line
    b = float(line.split("scale b = ")[1].split()[0])
    assert b == pytest.approx(10.0, rel=0.01)
    worst = float(line.split("at most ")[1].split(",")[0])
    assert worst == pytest.approx(b - 1 / math.expm1(1 / b), rel=1e-3)
    # The stated worst case is an exponential of mean b cut at 1 (a value at a bound).
    rng = np.random.default_rng(1)
    t = rng.exponential(b, 400_000)
    assert t[t <= 1].mean() == pytest.approx(worst, abs=0.005)
    assert not (tmp_path / "out.csv").exists()


def test_the_laplace_dry_run_still_says_laplace(bank_table, tmp_path, capsys):
    data, schema = bank_table
    argv = ["publish", "laplace", str(data), "-o", str(tmp_path / "out.csv")]
    assert main([*argv, "--schema", str(schema), "--epsilon", "1", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "Laplace noise, scale b = 5 per released value" in out
    assert "exponential mechanism" not in out


def test_a_group_by_dry_run_says_what_each_quantile_entry_is(files, capsys):
    """The quantile tree's noise is in rows (node counts), and each quantile's draw is a
    selection among the grid's points, not a value with per-value noise."""
    argv = ["publish", "groupby", str(files / "data.csv"), "--schema", str(files / "schema.json")]
    argv += ["--epsilon", "2", "--ledger", str(files / "b.db"), "-o", str(files / "out.csv")]
    argv += ["--by", "colour", "--quantiles", "x1", "--q", "0.5"]
    assert main([*argv, "--dry-run"]) == 0
    out = capsys.readouterr().out
    tree = re.search(r"quantile tree of x1: .*\n(.*)", out).group(1)
    assert "discrete Laplace noise" in tree and tree.endswith("in rows (each node's count)")
    draw = re.search(r"p50_x1: .*\n(.*)", out).group(1)
    assert "a selection (exponential mechanism, utility sensitivity 1)" in draw
    assert "perturbed objective" not in out
    assert budget_report(files / "b.db").spends == ()
