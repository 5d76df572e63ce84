"""Benchmark: how many releases fit in one budget under basic, PLD and RDP composition.

Issue 17's closing-note table. Each row takes one kind of release, builds the typed events
ppdp actually charges for it (from the publisher's or learner's own plan, on UCI Adult's
shape: n = 45,222 rows with their class sizes, the shipped schema), and counts how many
such releases an accountant admits into a total of (ε, δ) = (4, 1e-5):

* LDA-DP (``LDAProjectionPublisher``, ε = 0.5, δ = 1e-6 per release, the default Gaussian
  calibration, release of the direction only): two Gaussian events per release;
* private logistic regression (``PrivateLogisticRegression``, ε = 0.5, Adult's n and
  encoded width): objective perturbation charges its objective noise at ε_obj and its
  residual Gamma-norm noise at ε_r (two pure events), output perturbation one Gamma-norm
  event;
* the EXP baseline (``ExponentialPublisher``, ε = 0.5): one exponential-mechanism event per
  table (RDP uses its bounded range, ε²/8-zCDP);
* a mix: a Laplace histogram (ε = 0.5, L1 sensitivity 2, 16 bins) alternating with a
  Gaussian release (ε = 0.5, δ = 1e-6, L2 sensitivity 1, 16 coordinates);
* the synthesizer (``TableSynthesizer``, ε = 1, δ = 1e-9, the default tree on Adult's
  schema) charged three ways (issue 31): its ``ZCDP`` event with its draws (what it charges),
  the same ρ and stated (ε, δ) without the draws (PLD then has only the worst (ε, δ) pair),
  and the bare (ε, δ) it charged before (RDP cannot take a δ > 0: refused).

The counts come from :meth:`ppdp.accounting.Accountant.fits_count` (bisection on the composed
ε at the target δ) for a single kind, and from spending one by one (alternating) for the mix;
"composed ε after" is what the accountant reports once they are charged. Needs
``pip install 'ppdp[tight]'``.

Run::

    .venv/bin/python benchmarks/accounting/bench_composition.py
"""

from __future__ import annotations

import math
import time

from ppdp.accounting import Accountant
from ppdp.accounting.events import ZCDP, Composed, EpsilonDelta, PrivacyEvent
from ppdp.budget import PrivacyBudget
from ppdp.datasets import load_adult
from ppdp.exceptions import BudgetExceededError, UnsupportedEventError
from ppdp.learn import PrivateLogisticRegression
from ppdp.mechanisms import GaussianMechanism, LaplaceMechanism
from ppdp.publish import ExponentialPublisher, LDAProjectionPublisher, TableSynthesizer

TOTAL = PrivacyBudget(4.0, 1e-5)
COMPOSITIONS = ("basic", "pld", "rdp")


def lda_event(schema, counts: list[int]) -> PrivacyEvent:
    pub = LDAProjectionPublisher(
        epsilon=0.5, delta=1e-6, schema=schema, release="direction", class_counts=counts
    )
    return Composed(events=tuple(e for c in pub._validate_params(sum(counts)) for e in c.events))


def logreg_event(df, schema, perturbation: str) -> PrivacyEvent:
    """What one fit on Adult charges: the plan after validation (n and the width known)."""
    est = PrivateLogisticRegression(epsilon=0.5, schema=schema, perturbation=perturbation)
    features = schema.without_label()
    Xe, _ = features.encode(df[list(features.column_names)])
    est._planned_dim = Xe.shape[1] + int(est.fit_intercept)
    events = est._plan(len(df)).events
    return events[0] if len(events) == 1 else Composed(events=events)


def exp_event(schema) -> PrivacyEvent:
    (charge,) = ExponentialPublisher(0.5, schema)._validate_params()
    return charge.event


def synth_events(schema) -> dict[str, PrivacyEvent]:
    synth = TableSynthesizer(1.0, schema)
    (charge,) = synth._charges(synth.plan(), None)
    event = charge.event
    assert isinstance(event, ZCDP)
    return {
        "draws": event,
        "rho": ZCDP(rho=event.rho, epsilon=event.epsilon, delta=event.delta),
        "pair": EpsilonDelta(epsilon=1.0, delta=1e-9),
    }


def count_one_kind(event: PrivacyEvent, composition: str) -> tuple[int | str, float]:
    with Accountant.in_memory(total=TOTAL, composition=composition) as acct:
        try:
            acct.check(event)
        except UnsupportedEventError:
            return "refused", math.nan
        k = acct.fits_count(event, limit=10_000)
        if k:
            acct.spend(Composed(events=(event,) * k) if k > 1 else event, mechanism="batch")
        return k, acct.spent.epsilon


def count_mix(events: tuple[PrivacyEvent, PrivacyEvent], composition: str) -> tuple[int, float]:
    with Accountant.in_memory(total=TOTAL, composition=composition) as acct:
        n = 0
        try:
            while n < 10_000:
                acct.spend(events[n % 2], mechanism=f"release {n}")
                n += 1
        except BudgetExceededError:
            pass
        return n, acct.spent.epsilon


def main() -> None:
    df, schema = load_adult()
    label = schema.label.name
    sizes = [int((df[label] == c).sum()) for c in schema.label.classes]  # public here
    hist = LaplaceMechanism(epsilon=0.5, sensitivity=2.0, dimension=16).event
    gauss = GaussianMechanism(epsilon=0.5, delta=1e-6, sensitivity=1.0, dimension=16).event
    synth = synth_events(schema)
    rows = [
        (
            "LDA-DP (ε=0.5, δ=1e-6, Gaussian)",
            lambda c: count_one_kind(lda_event(schema, sizes), c),
        ),
        (
            "logistic regression (objective, ε=0.5)",
            lambda c: count_one_kind(logreg_event(df, schema, "objective"), c),
        ),
        (
            "logistic regression (output, ε=0.5)",
            lambda c: count_one_kind(logreg_event(df, schema, "output"), c),
        ),
        (
            "EXP baseline table (ε=0.5)",
            lambda c: count_one_kind(exp_event(schema), c),
        ),
        ("Laplace histogram / Gaussian, alternating", lambda c: count_mix((hist, gauss), c)),
        (
            "TableSynthesizer (ε=1, δ=1e-9): ZCDP with its draws",
            lambda c: count_one_kind(synth["draws"], c),
        ),
        (
            "TableSynthesizer: ZCDP, ρ and (ε, δ) only",
            lambda c: count_one_kind(synth["rho"], c),
        ),
        (
            "TableSynthesizer: bare (ε, δ) (before issue 31)",
            lambda c: count_one_kind(synth["pair"], c),
        ),
    ]
    print(f"Releases that fit in a total of (ε, δ) = ({TOTAL.epsilon:g}, {TOTAL.delta:g})")
    print()
    header = (
        "| release (each) | "
        + " | ".join(COMPOSITIONS)
        + " | composed ε after (basic / pld / rdp) |"
    )
    print(header)
    print("|---|" + "---:|" * len(COMPOSITIONS) + "---|")
    timings = []
    for name, run in rows:
        counts, eps = [], []
        for composition in COMPOSITIONS:
            t0 = time.perf_counter()
            k, e = run(composition)
            timings.append((name, composition, time.perf_counter() - t0))
            counts.append(k)
            eps.append(e)
        print(
            f"| {name} | "
            + " | ".join(str(k) for k in counts)
            + " | "
            + " / ".join("—" if math.isnan(e) else f"{e:.3f}" for e in eps)
            + " |"
        )
    print()
    print("seconds per cell (this machine):")
    for name, composition, s in timings:
        print(f"  {name:<45} {composition:<5} {s:6.2f}")


if __name__ == "__main__":
    main()
