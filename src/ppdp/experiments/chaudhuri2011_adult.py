"""``chaudhuri2011-adult``: test error vs ε of private logistic regression and Huber SVM on Adult.

Chaudhuri, Monteleoni & Sarwate (2011), Section 7 (Figure 2 and Table 1): objective
perturbation (Algorithm 2) against output perturbation (Algorithm 1) for both losses, next to
the non-private classifier, on UCI Adult (45,220 rows after removing missing values, 105
features). The protocol is in :mod:`ppdp.experiments._chaudhuri2011`.

The encoding here keeps all 14 Adult columns, as the paper's 105 features do (6 numeric
columns, ``fnlwgt`` included, and 8 categorical ones one-hot: 6 + 8 + 16 + 7 + 14 + 6 + 5 +
2 + 41 = 105), unlike :func:`ppdp.datasets.load_adult`, which follows Jiang et al.'s
preprocessing (4 columns dropped). Categorical domains are the full lists of ``adult.names``;
numeric bounds are those of :func:`ppdp.datasets.adult_schema` (the public data's range),
and ``fnlwgt`` is clipped at a declared 1,500,000.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ppdp.data import CategoricalColumn, LabelSpec, NumericColumn, Schema
from ppdp.datasets import adult_schema, open_bytes
from ppdp.experiments import _chaudhuri2011 as ch
from ppdp.experiments._framework import ExperimentResult, Progress, check_config

__all__ = ["ID", "TITLE", "Config", "adult_105_schema", "load_adult_105", "run"]

ID = "chaudhuri2011-adult"
TITLE = (
    "Private logistic regression and Huber SVM on Adult: test error vs ε "
    "(Chaudhuri et al. 2011, Fig. 2, Table 1)"
)

PAPER = ch.PaperNumbers(
    table="Table 1",
    objective={"logistic": 0.216, "huber": 0.205},
    output={"logistic": 0.240, "huber": 0.238},
    non_private="≈ 0.152",
    n_rows="45,220",
    n_features=105,
    positives="~25%",
)

_ORDER = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country",
)  # fmt: skip
_EXTRA_CATEGORIES = {
    "education": (
        "Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm",
        "Assoc-voc", "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate",
        "5th-6th", "Preschool",
    ),
    "occupation": (
        "Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
        "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
        "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
        "Armed-Forces",
    ),
    "native-country": (
        "United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
        "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba",
        "Iran", "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico",
        "Portugal", "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan",
        "Haiti", "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand",
        "Yugoslavia", "El-Salvador", "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands",
    ),
}  # fmt: skip
#: Declared clipping bound of the sampling weight ``fnlwgt`` (a round number).
FNLWGT_UPPER = 1_500_000


def adult_105_schema() -> Schema:
    """Adult with all 14 columns: 6 numeric + 99 one-hot = 105 encoded features."""
    base = adult_schema()
    columns: list[NumericColumn | CategoricalColumn] = []
    for name in _ORDER:
        if name == "fnlwgt":
            columns.append(NumericColumn("fnlwgt", 0, FNLWGT_UPPER, integer=True))
        elif name in _EXTRA_CATEGORIES:
            columns.append(CategoricalColumn(name, _EXTRA_CATEGORIES[name]))
        else:
            columns.append(base.column(name))  # type: ignore[arg-type]
    assert base.label is not None
    return Schema(
        columns=tuple(columns),
        label=LabelSpec(base.label.name, base.label.classes),
        missing_values=("?",),
        nan_policy="error",
    )


def load_adult_105() -> tuple[pd.DataFrame, Schema]:
    """All 45,222 complete rows of Adult (train then test) with every column kept."""
    parts = [
        pd.read_csv(open_bytes(f"adult/adult_{split}.csv.gz"), compression="gzip")
        for split in ("train", "test")
    ]
    raw = pd.concat(parts, ignore_index=True)
    df = raw.loc[~(raw == "?").any(axis=1)].reset_index(drop=True)
    return df, adult_105_schema()


def _load(config: ch.BaseConfig) -> ch.Dataset:
    df, schema = load_adult_105()
    df = ch.subsample(df, config.n_rows, config.seed)
    X, y = schema.encode(df)
    assert y is not None
    return ch.Dataset(
        name="adult",
        X=X,
        y=y,
        schema=schema,
        description="UCI Adult, all 14 columns (rows with '?' removed), label income > 50K.",
    )


@dataclass(frozen=True)
class Config(ch.BaseConfig):
    """See :class:`ppdp.experiments._chaudhuri2011.BaseConfig` (its ``full`` and ``quick``)."""


def run(
    config: Config, out_dir: str | Path, *, progress: Progress | None = None
) -> ExperimentResult:
    """Run the experiment and write its outputs into ``out_dir``.

    Writes ``results.csv``, ``non_private.csv``, ``curves.csv``, ``config.json``,
    ``error_vs_epsilon.png`` and ``summary.md`` (see
    :func:`ppdp.experiments._chaudhuri2011.run_protocol`).
    """
    check_config(config, Config)
    return ch.run_protocol(
        config, out_dir, experiment_id=ID, title=TITLE, load=_load, paper=PAPER, progress=progress
    )
