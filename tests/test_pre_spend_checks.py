"""Pre-spend refusals from the parameters alone (new-user trial, items 1-3).

1. TableSynthesizer refuses a plan whose count tables would not fit in memory.
2. Every publisher refuses an ε whose noise the samplers cannot draw exactly, naming the
   smallest ε that works (which does work, and is not far above the true threshold).
3. DP-PCA says before the spend when its stage-2 noise swamps every released value.

Each refusal is one line naming the parameter and what is allowed; nothing is charged,
nothing is written, and the CLI exits 2 without a traceback.
"""

from __future__ import annotations

import math
import re
import warnings

import mpmath
import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant, budget_report
from ppdp.budget import PrivacyBudget
from ppdp.cli import main
from ppdp.data import Schema
from ppdp.exceptions import LowUtilityWarning, ParameterError
from ppdp.mechanisms import GaussianMechanism, LaplaceMechanism
from ppdp.mechanisms.calibration import analytic_gaussian_sigma
from ppdp.mechanisms.grid import UndrawableNoiseError
from ppdp.publish import DPPCAPublisher, TableSynthesizer
from ppdp.publish import table_synth as ts
from ppdp.publish.files import build_publisher
from ppdp.registry import PUBLISHERS as REGISTRY

N = 400


def clinic_schema() -> Schema:
    """The trial's clinic schema (s1.json) in shape: its column kinds, bounds and sizes."""
    return Schema.from_dict(
        {
            "columns": [
                {"name": "sex", "type": "categorical", "categories": [1, 2]},
                {"name": "region", "type": "categorical", "categories": list(range(1, 8))},
                {"name": "dx", "type": "numeric", "lower": 0, "upper": 12, "integer": True},
                {"name": "age", "type": "numeric", "lower": 0, "upper": 110, "integer": True},
                {"name": "income", "type": "numeric", "lower": 0, "upper": 200000},
                {"name": "los", "type": "numeric", "lower": 0, "upper": 13, "integer": True},
                {"name": "bmi", "type": "numeric", "lower": 10, "upper": 60},
                {"name": "note", "type": "categorical", "categories": ["a", "b", "c", "d"]},
                {"name": "doctor", "type": "categorical", "categories": ["n", "m", "o", "s"]},
            ],
            # public class sizes: what lda-projection takes by default
            "label": {"name": "readmit", "classes": [0, 1], "public_counts": [N // 2, N // 2]},
        }
    )


def clinic_df(n: int = N, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "sex": rng.integers(1, 3, n),
            "region": rng.integers(1, 8, n),
            "dx": rng.integers(0, 13, n),
            "age": rng.integers(0, 111, n),
            "income": rng.uniform(0, 200000, n).round(2),
            "los": rng.integers(0, 14, n),
            "bmi": rng.uniform(10, 60, n).round(1),
            "note": rng.choice(["a", "b", "c", "d"], n),
            "doctor": rng.choice(["n", "m", "o", "s"], n),
            "readmit": rng.integers(0, 2, n),
        }
    )


#: A value for each flag some registered publisher requires (pca: k; lda-projection: δ).
REQUIRED = {"--components": 5, "--delta": 1e-9}


def _publisher(name: str, epsilon: float, schema: Schema):
    options = {flag: REQUIRED[flag] for flag in REGISTRY.entry(name).required}
    return build_publisher(name, epsilon=epsilon, schema=schema, options=options)


#: Every registered publisher (a new one is checked without an edit here).
PUBLISHERS = REGISTRY.names()
SMALLEST = re.compile(r"use epsilon >= ([0-9.e+-]+)$")


def _ledger() -> Accountant:
    return Accountant.in_memory(total=PrivacyBudget(3.0, 1e-6))


# -- 2. an epsilon whose noise cannot be drawn ---------------------------------------------


@pytest.mark.parametrize("name", PUBLISHERS)
@pytest.mark.parametrize("epsilon", [1e-12, 1e-30, 1e-300])
def test_undrawable_epsilon_is_refused_before_the_spend(name, epsilon) -> None:
    acct = _ledger()
    pub = _publisher(name, epsilon, clinic_schema())
    with pytest.raises(ParameterError) as info:
        pub.fit(clinic_df(), accountant=acct)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"epsilon ({epsilon!r})")
    assert "sampler" in message and SMALLEST.search(message), message
    assert acct.spent == PrivacyBudget(0.0) and acct.history() == []


@pytest.mark.parametrize("name", PUBLISHERS)
def test_the_smallest_epsilon_named_works_and_is_tight(name) -> None:
    schema = clinic_schema()
    with pytest.raises(ParameterError) as info:
        _publisher(name, 1e-30, schema)._validate_params(N)
    least = float(SMALLEST.search(str(info.value)).group(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LowUtilityWarning)  # noise that large is useless
        _publisher(name, least, schema)._validate_params(N)  # no error at the value named
    with pytest.raises(ParameterError, match=SMALLEST):  # rounded up by at most 1%
        _publisher(name, least / 1.02, schema)._validate_params(N)


def test_the_refusal_comes_from_the_parameters_alone() -> None:
    """Without the data (privacy_budget, the CLI's first check) the same line is raised."""
    for name in PUBLISHERS:
        with pytest.raises(ParameterError, match=r"^epsilon \(1e-12\).*sampler.*use epsilon >="):
            _publisher(name, 1e-12, clinic_schema()).privacy_budget()


def test_laplace_mechanism_refuses_noise_beyond_its_grid() -> None:
    # b/Λ ≈ 2**32 + d/ε: beyond 2**40 grid steps once ε < d·2**-40 (about).
    d = 24
    LaplaceMechanism(epsilon=d / (2.0**40 - 2.0**32) * 1.001, sensitivity=15.0, dimension=d)
    with pytest.raises(UndrawableNoiseError, match=r"b = .* exceeds what the sampler"):
        LaplaceMechanism(epsilon=d / 2.0**40 * 0.99, sensitivity=15.0, dimension=d)
    with pytest.raises(UndrawableNoiseError, match="2\\*\\*960"):
        LaplaceMechanism(epsilon=1e-300, sensitivity=15.0)


@pytest.mark.parametrize("epsilon", [1e-300, 1e-20, 1e-12, 1e-9, 1e-6, 1e-3, 1.0])
@pytest.mark.parametrize("delta", [1e-6, 1e-12, 1e-20, 1e-30])
def test_analytic_gaussian_at_tiny_epsilon_meets_delta_exactly(epsilon, delta) -> None:
    """The calibration brackets its root at any ε, and δ(σ) ≤ δ in 60-digit arithmetic.

    Before the fix ε = 1e-300 found no bracket, and the float evaluation of δ(σ) lost its
    precision at tiny ε: ε = 1e-12, δ = 1e-12 gave a σ with δ(σ) = 1.45e-12, ε = 1e-6,
    δ = 1e-20 one with δ(σ) = 1.0000000165e-20.
    """
    ratio = analytic_gaussian_sigma(epsilon, delta, 1.0)
    mpmath.mp.dps = 60
    r, e = mpmath.mpf(ratio), mpmath.mpf(epsilon)
    a, b = 1 / (2 * r), e * r
    exact = mpmath.ncdf(a - b) - mpmath.exp(e) * mpmath.ncdf(-a - b)
    assert exact <= delta
    assert ratio <= 1.0 / (delta * math.sqrt(2.0 * math.pi)) * 1.001  # never above ε = 0's
    # σ/Λ ≈ 2**32 + σ/Δ (the grid Λ ≈ 2**-32·σ is paid for in the sensitivity)
    if ratio <= 2.0**40 - 2.0**32:
        GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=1.0)
    elif ratio > 2.0**40:  # beyond 2**40 grid steps: refused in one line, before any spend
        with pytest.raises(UndrawableNoiseError, match="Gaussian mechanism at epsilon"):
            GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=1.0)


def _learners() -> list:
    from ppdp.learn import PrivateLinearSVM, PrivateLogisticRegression, PrivateRBFSVM

    return [
        PrivateLogisticRegression(epsilon=1e-12, data_norm=1.0),
        PrivateLogisticRegression(epsilon=1e-12, data_norm=1.0, perturbation="output"),
        PrivateLinearSVM(epsilon=1e-12, data_norm=1.0),
        PrivateRBFSVM(epsilon=1e-12),
        PrivateRBFSVM(epsilon=1e-12, tuning="private", param_grid={"C": [1.0, 2.0]}),
    ]


@pytest.mark.parametrize("index", range(5))
def test_learners_refuse_an_undrawable_epsilon_before_the_spend(index) -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (300, 4))
    y = (X[:, 0] > 0).astype(int)
    est = _learners()[index]
    acct = _ledger()
    with pytest.raises(ParameterError) as info:
        est.fit(X, y, accountant=acct)
    message = str(info.value)
    assert message.startswith(f"epsilon (1e-12) is too small for {type(est).__name__}")
    least = float(SMALLEST.search(message).group(1))
    assert acct.spent == PrivacyBudget(0.0) and acct.history() == []
    est.set_params(epsilon=least)
    est.fit(X, y, accountant=acct)  # the ε named works
    assert acct.spent.epsilon == pytest.approx(least)


# -- 1. TableSynthesizer's tables must fit in memory ---------------------------------------


def test_n_bins_has_a_sane_upper_limit() -> None:
    acct = _ledger()
    with pytest.raises(ParameterError, match=r"^n_bins \(100000\) must be an integer in 2\.\.4096"):
        TableSynthesizer(1.0, clinic_schema(), n_bins=100000).fit(clinic_df(), accountant=acct)
    assert acct.spent == PrivacyBudget(0.0)


@pytest.mark.parametrize("method", ["tree", "chow-liu", "auto"])
def test_tables_that_would_not_fit_are_refused_with_the_largest_n_bins(method) -> None:
    acct = _ledger()
    schema = clinic_schema()
    with pytest.raises(ParameterError) as info:
        TableSynthesizer(1.0, schema, n_bins=4000, method=method).fit(clinic_df(), accountant=acct)
    message = str(info.value)
    assert message.startswith("n_bins (4000): TableSynthesizer") and "\n" not in message
    assert acct.spent == PrivacyBudget(0.0) and acct.history() == []
    largest = int(re.search(r"use n_bins <= (\d+)", message).group(1))
    plan = TableSynthesizer(1.0, schema, n_bins=largest, method=method).plan()
    cells = [math.prod(plan.bins.sizes[a] for a in c) for c in plan.counted_cliques()]
    assert max(cells) <= ts.MAX_TABLE_CELLS and sum(cells) <= ts.MAX_COUNTED_CELLS
    with pytest.raises(ParameterError, match="n_bins"):
        TableSynthesizer(1.0, schema, n_bins=largest + 1, method=method).plan()


def test_the_tree_counts_the_label_pair_tables_of_every_candidate_edge() -> None:
    # (label, income, bmi) at n_bins = 1447: 2 · 1449² > 2**22 cells (each binned column has
    # n_bins + 2 codes: its bins and its two bounds); 1446 fits.
    schema = clinic_schema()
    TableSynthesizer(1.0, schema, n_bins=1446, method="tree").plan()
    with pytest.raises(ParameterError, match=r"largest table 4,199,202"):
        TableSynthesizer(1.0, schema, n_bins=1447, method="tree").plan()


def test_many_small_tables_are_refused_by_their_total() -> None:
    cols = [
        {"name": f"c{i}", "type": "categorical", "categories": list(range(200))} for i in range(40)
    ]
    schema = Schema.from_dict({"columns": cols, "label": {"name": "y", "classes": [0, 1]}})
    with pytest.raises(ParameterError, match="no n_bins fits"):
        TableSynthesizer(1.0, schema, method="tree").plan()


def test_pairs_keeps_its_joint_ceiling() -> None:
    with pytest.raises(ParameterError, match=r"method \('pairs'\) needs cells x levels"):
        TableSynthesizer(1.0, clinic_schema(), n_bins=500, method="pairs").plan()


# -- 3. DP-PCA: noise that swamps every value, said before the spend -----------------------


def test_pca_low_utility_message_names_the_epsilon_needed() -> None:
    schema = clinic_schema()
    message = DPPCAPublisher(0.3, 5, schema).low_utility_message()
    assert message is not None and "mostly noise" in message and "\n" not in message
    needed = float(re.search(r"use epsilon above ([0-9.]+)", message).group(1))
    assert DPPCAPublisher(needed, 5, schema).low_utility_message() is None
    assert DPPCAPublisher(needed / 1.02, 5, schema).low_utility_message() is not None
    # Fewer components: the noise per value grows like k/ε.
    assert DPPCAPublisher(needed / 4, 1, schema).low_utility_message() is None


@pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")  # stage 1's, in fit
def test_pca_low_utility_rule_matches_the_release() -> None:
    """Where it warns, most numeric values sit at a declared bound; where it does not, few."""
    schema = clinic_schema()
    df = clinic_df(3000, seed=3)
    numeric = [c for c in schema.numeric_columns if not c.integer]

    def at_bounds(eps: float, k: int) -> float:
        pub = DPPCAPublisher(eps, k, schema, random_state=5, allow_large_epsilon=True)
        out = pub.fit(df).release_.data
        return float(
            np.mean([((out[c.name] <= c.lower) | (out[c.name] >= c.upper)).mean() for c in numeric])
        )

    assert DPPCAPublisher(0.3, 5, schema).low_utility_message() is not None
    assert at_bounds(0.3, 5) > 0.8
    assert DPPCAPublisher(30.0, 5, schema, allow_large_epsilon=True).low_utility_message() is None
    assert at_bounds(30.0, 5) < 0.2


# -- the command line ----------------------------------------------------------------------


def _files(tmp_path, n: int = N) -> tuple[str, str, str]:
    clinic_df(n).to_csv(tmp_path / "in.csv", index=False)
    clinic_schema().to_file(tmp_path / "s.json")
    ledger = tmp_path / "b.db"
    init = ["budget", "init", str(ledger), "--dataset-id", "c", "--epsilon", "3"]
    assert main([*init, "--delta", "1e-6"]) == 0
    return str(tmp_path / "in.csv"), str(tmp_path / "s.json"), str(ledger)


@pytest.mark.parametrize(
    ("method", "flags", "match"),
    [
        ("synth", ["--epsilon", "1e-12"], "is too small for TableSynthesizer"),
        ("synth", ["--epsilon", "1e-300"], "is too small for TableSynthesizer"),
        ("synth", ["--epsilon", "1", "--bins", "100000"], r"--bins \(100000\)"),
        ("synth", ["--epsilon", "1", "--bins", "2000"], r"use --bins <= 1446"),
        ("laplace", ["--epsilon", "1e-12"], "is too small for LaplacePublisher"),
        ("lda-synth", ["--epsilon", "1e-30"], "is too small for DPLDASynthesizer"),
        ("pca", ["--epsilon", "1e-12", "--components", "5"], "too small for DPPCAPublisher"),
    ],
)
def test_cli_refuses_in_one_line_exit_2_nothing_spent(tmp_path, capsys, method, flags, match):
    data, schema, ledger = _files(tmp_path)
    capsys.readouterr()
    out = tmp_path / "out.csv"
    argv = ["publish", method, data, "--schema", schema, *flags, "--ledger", ledger]
    assert main([*argv, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    errors = [ln for ln in err.splitlines() if ln.startswith("ppdp: error")]
    assert len(errors) == 1 and re.search(match, errors[0]), err
    assert "Traceback" not in err
    assert not out.exists() and not out.with_name("out.csv.guarantee.json").exists()
    assert budget_report(ledger).spends == ()


def test_cli_pca_warns_in_one_line_before_reading_the_data(tmp_path, capsys) -> None:
    data, schema, _ = _files(tmp_path, 3000)  # enough rows for stage 1 (no warning in fit)
    capsys.readouterr()
    argv = ["publish", "pca", data, "--schema", schema, "--epsilon", "0.3", "--components", "5"]
    assert main([*argv, "--dry-run", "-o", str(tmp_path / "o.csv")]) == 0
    err = capsys.readouterr().err.splitlines()
    warned = [i for i, ln in enumerate(err) if "LowUtilityWarning" in ln]
    assert len(warned) == 1 and "DP-PCA at epsilon 0.3 with 5 component(s)" in err[warned[0]]
    assert re.match(r"^ppdp[ a-z]*: warning: LowUtilityWarning: ", err[warned[0]])
    reading = [i for i, ln in enumerate(err) if "reading" in ln]
    assert reading and warned[0] < reading[0]
