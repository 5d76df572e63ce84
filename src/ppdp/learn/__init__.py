"""Private classifiers: ERM by objective and output perturbation, and private tuning.

:class:`PrivateLogisticRegression` and :class:`PrivateLinearSVM` (Huber loss) follow
Chaudhuri, Monteleoni & Sarwate (JMLR 2011): ε-DP under replace-one neighbours with n
public, for records of declared norm. Every learner spends its budget in ``fit`` only, in
the order check → validate → spend → train (:mod:`ppdp.learn._base`), and states its
guarantee in ``guarantee_``. The privacy argument is in ``docs/proofs/erm.md``.
"""

from importlib.util import find_spec as _find_spec

from ppdp.exceptions import OptionalDependencyError as _OptionalDependencyError

if _find_spec("sklearn") is None:  # pragma: no cover - the learn extra is installed in CI
    raise _OptionalDependencyError(
        "ppdp.learn needs scikit-learn, which is not installed: pip install 'ppdp[learn]'"
    )

from ppdp.learn._base import Plan, PrivateClassifierBase
from ppdp.learn._erm import HuberLoss, LogisticLoss, Loss, solve_erm
from ppdp.learn.linear import PrivateLinearSVM, PrivateLogisticRegression
from ppdp.learn.tuning import PrivateTuning

__all__ = [
    "HuberLoss",
    "LogisticLoss",
    "Loss",
    "Plan",
    "PrivateClassifierBase",
    "PrivateLinearSVM",
    "PrivateLogisticRegression",
    "PrivateTuning",
    "solve_erm",
]

# Learners of sibling modules (random features, RBF SVMs), exported once they exist.
if _find_spec("ppdp.learn.rff") is not None:
    from ppdp.learn.rff import RandomFourierFeatures

    __all__ += ["RandomFourierFeatures"]
if _find_spec("ppdp.learn.rbf_svm") is not None:
    from ppdp.learn.rbf_svm import HybridRBFSVM, PrivateRBFSVM

    __all__ += ["HybridRBFSVM", "PrivateRBFSVM"]
