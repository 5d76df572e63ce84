"""Benchmark: private logistic regression on Adult at ε = 1, the defaults vs the tuned setting.

Issue 15's closing-note target: ``PrivateLogisticRegression(epsilon=1.0, schema=schema)``
(the raw DataFrame encoded inside, ``data_norm`` from the schema's declared row-norm bound,
``fit_intercept=True``, ``regularization="auto"``, objective perturbation) should score an AUC
within 0.02 of the tuned setting that ``docs/learn.md`` reports (§5, the
``chaudhuri2011-adult`` experiment, ``experiments-results/chaudhuri2011-adult/summary.md``):
logistic regression by objective perturbation at ε = 1 with "Λ best at each ε" = 1e-4 (a choice
by test error, *not* private), no intercept (CMS11's model).

Data: UCI Adult's official split (:func:`ppdp.datasets.load_adult`: 30,162 train / 15,060 test
rows after dropping missing values), the shipped schema (33 encoded features, declared
``max_row_l2_norm`` = sqrt(10)). Rows compared (each over seeds 0-4 of the privacy noise,
seeded for reproducibility, so not a release):

* defaults (schema=): the new defaults on the raw DataFrame;
* tuned (docs): ``fit_intercept=False, regularization=1e-4`` (the experiment's oracle Λ at ε = 1);
* old defaults: ``fit_intercept=False, regularization=1e-3`` (the defaults before issue 15);
* privately tuned: the defaults with ``tuning=`` the experiment's public Λ grid (CMS11 Alg. 4);
* the intercept with the previous default Λ = 1e-3 (``"auto"`` is a function of ε and the
  public n only: the least Λ objective perturbation can use without its fallback);
* non-private: scikit-learn ``LogisticRegression()`` on the same encoding.

Run::

    .venv/bin/python benchmarks/bench_logreg_defaults.py [--seeds 5] [--epsilon 1]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from ppdp.datasets import load_adult
from ppdp.exceptions import InsecureRandomnessWarning
from ppdp.learn import PrivateLogisticRegression

#: Λ grid of the chaudhuri2011-adult experiment (config.json), public.
GRID = (1e-4, 1e-3, 3e-3, 1e-2, 3e-2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    warnings.simplefilter("ignore", InsecureRandomnessWarning)  # seeded on purpose

    train, schema = load_adult("train")
    test, _ = load_adult("test")
    label = schema.label
    assert label is not None
    y_test = (test[label.name] == label.classes[1]).to_numpy()
    X_train, c_train = schema.encode(train)
    X_test, _ = schema.without_label().encode(test)
    names = np.asarray(label.classes)[c_train]
    eps = args.epsilon

    settings = {
        "defaults (schema=, intercept, Λ='auto')": dict(schema=schema),
        "tuned (docs: no intercept, Λ=1e-4)": dict(
            schema=schema, fit_intercept=False, regularization=1e-4
        ),
        "old defaults (no intercept, Λ=1e-3)": dict(
            schema=schema, fit_intercept=False, regularization=1e-3
        ),
        "intercept, Λ=1e-3": dict(schema=schema, regularization=1e-3),
        "privately tuned (intercept, CMS11 Alg. 4)": dict(schema=schema, tuning=GRID),
    }
    print(
        f"Adult, official split: {len(train):,} train / {len(test):,} test rows, "
        f"{schema.n_features} encoded features, data_norm = {schema.max_row_l2_norm:.4g}; "
        f"ε = {eps:g}; mean ± std over {args.seeds} noise seeds"
    )
    header = f"{'setting':<44} | {'AUC':>15} | {'error':>15} | {'fit s':>6}"
    print(header)
    print("-" * len(header))
    results: dict[str, float] = {}
    for name, kw in settings.items():
        aucs, errs, secs = [], [], []
        for seed in range(args.seeds):
            clf = PrivateLogisticRegression(epsilon=eps, random_state=seed, **kw)
            t0 = time.perf_counter()
            clf.fit(train.drop(columns=label.name), train[label.name])
            secs.append(time.perf_counter() - t0)
            aucs.append(roc_auc_score(y_test, clf.decision_function(test)))
            errs.append(float(np.mean(clf.predict(test) != test[label.name].to_numpy())))
        results[name] = float(np.mean(aucs))
        print(
            f"{name:<44} | {np.mean(aucs):.4f} ± {np.std(aucs):.4f} | "
            f"{np.mean(errs):.4f} ± {np.std(errs):.4f} | {np.median(secs):6.2f}"
        )
    ref = LogisticRegression(max_iter=1000).fit(X_train, names)
    auc_np = roc_auc_score(y_test, ref.decision_function(X_test))
    err_np = float(np.mean(ref.predict(X_test) != test[label.name].to_numpy()))
    print(f"{'non-private (scikit-learn, C=1)':<44} | {auc_np:.4f}{'':>9} | {err_np:.4f}{'':>9} |")
    keys = list(settings)
    gap = results[keys[1]] - results[keys[0]]
    print(
        f"\ntuned − defaults AUC gap: {gap:+.4f} (target: within 0.02) -> "
        f"{'met' if abs(gap) <= 0.02 or gap < 0 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
