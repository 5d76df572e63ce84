"""scikit-learn's estimator checks on PrivateRBFSVM.

Checks that cannot apply to a private estimator are listed with the reason.
HybridRBFSVM is not run through them: its public sample fixes the number of
columns, while the checks feed data of many widths.
"""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from ppdp.learn import PrivateRBFSVM

ESTIMATORS = [
    PrivateRBFSVM(epsilon=1.0, n_components=20, random_state=0, feature_random_state=0),
]

EXPECTED_FAILED: dict[str, str] = {}


def _expected_failed(estimator: object) -> dict[str, str]:
    return EXPECTED_FAILED


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed)
def test_sklearn_compatible(estimator, check) -> None:
    check(estimator)
