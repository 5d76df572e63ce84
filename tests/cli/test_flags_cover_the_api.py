"""Issue 15 item 3: every parameter of the Python API the CLI drives has a CLI flag.

A table maps each constructor parameter of the publishers and learners behind ``ppdp publish``
and ``ppdp train`` to its flag, or names what supplies it on the command line. A new parameter
without a row fails here, so the CLI cannot fall behind the library silently.
"""

from __future__ import annotations

import argparse
import inspect

import pytest

from ppdp.cli import build_parser
from ppdp.learn import HybridRBFSVM, PrivateLinearSVM, PrivateLogisticRegression, PrivateRBFSVM
from ppdp.publish import (
    DPPCAPublisher,
    GroupByPublisher,
    LDAProjectionPublisher,
    TableSynthesizer,
)
from ppdp.publish.baselines import ExponentialPublisher, LaplacePublisher
from ppdp.publish.lda_synth import DPLDASynthesizer
from ppdp.registry import LEARNERS, PUBLISHERS

# parameter -> the flag that sets it, or (None, what supplies it)
PUBLISH = {
    "epsilon": "--epsilon",
    "delta": "--delta",
    "schema": "--schema",
    "random_state": "--seed",
    "allow_large_epsilon": "--allow-large-epsilon",
    "n_components": "--components",
    "clamp": "--no-clamp",
    "calibration": "--calibration",
    "release": "--release",
    "class_counts": "--class-counts",
    "mean_share": "--mean-share",
    "projection_share": "--projection-share",
    "ridge": "--ridge",
    "remove_constant": "--keep-constant",
    "class_sizes": "--class-sizes",
    "count_share": "--count-share",
    "max_groups": "--max-groups",
    "max_rows_per_group": "--max-rows-per-group",
    "method": "--method",
    "n_bins": "--bins",
    "relation": "--relation",
    "binning": "--binning",
    "decode": "--decode",
    "keep": "--keep",
    "check_pairs": "--check-pairs",
    "extra_parents": "--extra-parents",
    "pair_tables": "--pair-tables",
    "person_levels": "--person-levels",
    "by": "--by",
    "means": "--means",
    "keys": "--keys",
    "selection": "--selection",
    "threshold": "--threshold",
    "variances": "--variances",
    "interval": "--interval",
    "rounding": "--round",
    "min_count": "--min-count",
    "quantiles": "--quantiles",
    "q": "--q",
    "quantile_method": "--quantile-method",
}
TRAIN = {
    "epsilon": "--epsilon",
    "schema": "--schema",
    "random_state": "--seed",
    "allow_large_epsilon": "--allow-large-epsilon",
    "regularization": "--regularization",
    "perturbation": "--perturbation",
    "fit_intercept": "--no-intercept",
    "intercept_scaling": "--intercept-scaling",
    "tol": "--tol",
    "max_iter": "--max-iter",
    "huber_h": "--huber-h",
    "C": "--C",
    "C_form": "--C-form",
    "gamma": "--gamma",
    "n_components": "--components",
    "tuning": "--tune-grid",  # logreg/svm; --tuning for the kernel SVMs
    "param_grid": "--param-grid",
    "feature_random_state": "--feature-seed",
    "rho_max_iter": "--rho-max-iter",
    "rho_fit_rows": "--rho-fit-rows",
    "check_overlap": "--no-overlap-check",
    "public_X": "--public",
    "public_y": (None, "the label column of the --public table"),
    "data_norm": (None, "the schema's declared row-norm bound"),
    "classes": (None, "the schema's label classes"),
}


def _entry(command: str, cls: type):
    registry = {"publish": PUBLISHERS, "train": LEARNERS}[command]
    return next(e for e in registry.entries() if e.class_name == cls.__name__)


def _flags(command: str, cls: type) -> set[str]:
    """The flags ``ppdp COMMAND NAME --help`` lists, NAME being where ``cls`` registered."""
    name = _entry(command, cls).name
    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and command in a.choices)
    methods = next(a for a in sub.choices[command]._actions if a.choices and name in a.choices)
    actions = methods.choices[name]._option_string_actions
    return {flag for flag, action in actions.items() if action.help != argparse.SUPPRESS}


@pytest.mark.parametrize(
    ("command", "classes", "table"),
    [
        (
            "publish",
            (
                DPPCAPublisher,
                LDAProjectionPublisher,
                DPLDASynthesizer,
                LaplacePublisher,
                ExponentialPublisher,
                TableSynthesizer,
                GroupByPublisher,
            ),
            PUBLISH,
        ),
        (
            "train",
            (PrivateLogisticRegression, PrivateLinearSVM, PrivateRBFSVM, HybridRBFSVM),
            TRAIN,
        ),
    ],
)
def test_every_api_parameter_has_a_cli_flag(command, classes, table) -> None:
    for cls in classes:
        flags = _flags(command, cls)
        own = {param: flag for flag, param in _entry(command, cls).flags.items()}
        for name in list(inspect.signature(cls.__init__).parameters)[1:]:
            assert name in table, f"{cls.__name__}({name}=...) has no row: add a flag for it"
            flag = own.get(name, table[name])  # --tuning sets the kernel SVMs' tuning
            if isinstance(flag, str):
                assert flag in flags, f"ppdp {command} lacks {flag} for {cls.__name__}.{name}"
    assert "--tuning" in _flags("train", PrivateRBFSVM)  # the kernel SVMs' tuning mode
    assert "--tuning" not in _flags("train", PrivateLogisticRegression)  # hidden there
