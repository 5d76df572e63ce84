"""Private classifiers: ERM by objective and output perturbation, kernels, private tuning.

:class:`PrivateLogisticRegression` and :class:`PrivateLinearSVM` (Huber loss) follow
Chaudhuri, Monteleoni & Sarwate (JMLR 2011): ε-DP under replace-one neighbours with n
public, for records of declared norm. Every learner spends its budget in ``fit`` only, in
the order check → validate → spend → train (:mod:`ppdp.learn._base`), and states its
guarantee in ``guarantee_``. The privacy argument is in ``docs/proofs/erm.md``.

:class:`RandomFourierFeatures`, :class:`PrivateRBFSVM` (Rubinstein et al. 2012) and
:class:`HybridRBFSVM` (Li et al. 2014: frequencies fitted on public rows) learn RBF-kernel
SVMs through a unit-norm random feature map (``docs/proofs/rbf-svm.md``). Released models
are saved and loaded with :func:`save_model` / :func:`load_model` (JSON; nothing private);
:func:`train_model_file` / :func:`predict_file` do what ``ppdp train`` / ``ppdp predict`` do.
"""

from importlib.util import find_spec as _find_spec

from ppdp.exceptions import OptionalDependencyError as _OptionalDependencyError

if _find_spec("sklearn") is None:  # pragma: no cover - the learn extra is installed in CI
    raise _OptionalDependencyError(
        "ppdp.learn needs scikit-learn, which is not installed: pip install 'ppdp[learn]'"
    )

from ppdp.learn._base import Plan, PrivateClassifierBase, UnaccountedFitWarning, clip_to_unit_ball
from ppdp.learn._erm import HuberLoss, LogisticLoss, Loss, solve_erm
from ppdp.learn._model_io import ModelFile, load_model, read_model, save_model
from ppdp.learn.files import predict_file, train_model_file
from ppdp.learn.linear import PrivateLinearSVM, PrivateLogisticRegression
from ppdp.learn.rbf_svm import HybridRBFSVM, PrivateRBFSVM
from ppdp.learn.rff import RandomFourierFeatures
from ppdp.learn.tuning import PrivateTuning

__all__ = [
    "HuberLoss",
    "HybridRBFSVM",
    "LogisticLoss",
    "Loss",
    "ModelFile",
    "Plan",
    "PrivateClassifierBase",
    "PrivateLinearSVM",
    "PrivateLogisticRegression",
    "PrivateRBFSVM",
    "PrivateTuning",
    "RandomFourierFeatures",
    "UnaccountedFitWarning",
    "clip_to_unit_ball",
    "load_model",
    "predict_file",
    "read_model",
    "save_model",
    "solve_erm",
    "train_model_file",
]
