"""scikit-learn's estimator checks on the private linear classifiers.

Checks that cannot apply to a private estimator are expected to fail, with the reason
(listed again in ``docs/proofs/erm.md``).
"""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from ppdp.learn import PrivateLinearSVM, PrivateLogisticRegression

ESTIMATORS = [
    PrivateLogisticRegression(epsilon=1.0, data_norm=10.0, random_state=0),
    PrivateLogisticRegression(epsilon=1.0, data_norm=10.0, perturbation="output", random_state=0),
    PrivateLinearSVM(epsilon=1.0, data_norm=10.0, random_state=0),
    PrivateLinearSVM(epsilon=1.0, data_norm=10.0, perturbation="output", random_state=0),
    PrivateLogisticRegression(
        epsilon=1.0, data_norm=10.0, fit_intercept=True, regularization="auto", random_state=0
    ),
    PrivateLinearSVM(epsilon=1.0, data_norm=10.0, tuning=(0.01, 0.1), random_state=0),
]

EXPECTED_FAILED: dict[str, str] = {}


def _expected_failed(estimator: object) -> dict[str, str]:
    return EXPECTED_FAILED


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed)
def test_sklearn_compatible(estimator, check) -> None:
    check(estimator)
