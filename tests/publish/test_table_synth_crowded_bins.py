"""TableSynthesizer warns when a numeric column's values crowd into an end bin.

New-user trial: a skewed income declared on ``[0, 1e6]`` put 85 % of the rows in the first of
16 bins and the release silently lost the column's distribution. The warning is read from the
fitted model (post-processing of the noisy tables), and a crowded middle bin (a real spike)
is not reported.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.cli import main
from ppdp.data import Schema
from ppdp.exceptions import LowUtilityWarning
from ppdp.publish import TableSynthesizer
from ppdp.publish import table_synth_model as model


def _schema(upper: float) -> Schema:
    return Schema.from_dict(
        {
            "columns": [
                {"name": "income", "type": "numeric", "lower": 0, "upper": upper},
                {"name": "hours", "type": "numeric", "lower": 0, "upper": 100},
            ],
            "label": {"name": "y", "classes": ["a", "b"]},
        }
    )


def _table(n: int = 4000) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "income": np.round(rng.lognormal(10.0, 1.0, n), 2),
            "hours": np.where(rng.random(n) < 0.7, 40.0, rng.uniform(1, 99, n)),  # a spike
            "y": rng.choice(["a", "b"], n),
        }
    )


def _warnings(schema: Schema, df: pd.DataFrame, **kwargs) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        TableSynthesizer(2.0, schema, random_state=0, **kwargs).fit(df)
    return [str(w.message) for w in caught if issubclass(w.category, LowUtilityWarning)]


def test_a_skewed_column_is_named_with_its_bin_and_the_fix():
    (message,) = _warnings(_schema(1_000_000), _table())
    assert message.startswith("column 'income': about ")
    assert "first bin [0, 62500) of 16" in message and "n_bins" in message
    share = int(message.split("about ")[1].split("%")[0])
    real = float(np.mean(_table().income < 62_500))
    assert abs(share / 100 - real) < 0.05  # the noisy share is close to the real one


def test_bounds_that_fit_and_a_middle_spike_are_not_reported():
    assert _warnings(_schema(200_000), _table()) == []  # 'hours' spikes at 40: not reported


def test_the_joint_model_reports_too():
    assert len(_warnings(_schema(1_000_000), _table(), method="pairs", n_bins=8)) == 1


def test_crowded_end_bins_reads_the_model_only():
    bins = model.Bins.from_schema(_schema(100), 4)
    counts = np.zeros(bins.sizes)
    counts[1, 4, 0] = 60.0  # income: 60 % in the first bin; hours: 60 % in the last
    counts[3, 2, 1] = 40.0
    joint = model.JointModel(n=100, sizes=bins.sizes, counts=counts)
    assert model.crowded_end_bins(joint, bins) == [(0, 1, 0.6), (1, 4, 0.6)]
    counts[1, 4, 0], counts[2, 2, 0] = 49.0, 11.0  # below the share: nothing
    assert model.crowded_end_bins(joint, bins) == []


@pytest.mark.parametrize("quiet", [False, True])
def test_cli_says_it_and_quiet_keeps_only_warnings(tmp_path, capsys, quiet):
    _table().to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.json").write_text(_schema(1_000_000).to_json())
    argv = ["publish", "synth", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    argv += ["--epsilon", "2", "-o", str(tmp_path / "o.csv"), "--seed", "1"]
    assert main([*argv, *(["-q"] if quiet else [])]) == 0
    err = capsys.readouterr().err.splitlines()
    assert any("LowUtilityWarning: column 'income'" in line for line in err)
    progress = [line for line in err if not line.startswith("ppdp publish: warning")]
    assert (progress == []) == quiet, err
