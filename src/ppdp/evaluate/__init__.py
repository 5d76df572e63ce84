"""Utility metrics for judging a release against the original data.

Every metric here reads the original table: they are for *evaluating* a method (on public
benchmark data such as Adult, or inside the custodian's walls), never something to
publish next to a release.

* :func:`frobenius_error`, :func:`mse`: reconstruction error of a row-aligned release in
  the encoded space (Jiang et al.'s F-norm).
* :func:`classification_utility`, :func:`baseline_accuracy`, :func:`lowest_achievable`:
  accuracy and AUC of a classifier trained on a release and tested on held-out original
  rows, and the BA/LA reference lines (scikit-learn, the ``learn`` extra).
* :func:`quality_report`: a custodian's report of a released table against the private
  table (verdict, guarantee, marginals, bounds, correlations, ML utility) as HTML and JSON;
  :func:`model_report`: the same verdict for a private model file on held-out rows;
  :func:`lda_projection_report`: for an LDA projection release (direction and rows);
  :func:`group_report`: for a group-by release (each statistic's error against the true
  value on the bounded rows, its intervals' coverage, the rows each cap dropped).
* :func:`release_note`: a note for the recipients of a release (what, method, guarantee in
  words, accuracy from the noise law), from public quantities only.
* :func:`entropy`, :func:`kl_divergence`, :func:`attribute_distributions`: per-attribute
  distributions on fixed public cells.
"""

from ppdp.evaluate.classification import (
    CLASSIFIERS,
    DEFAULT_MIN_SAMPLES_LEAF,
    baseline_accuracy,
    classification_utility,
    lowest_achievable,
    roc_auc,
)
from ppdp.evaluate.group_report import group_report
from ppdp.evaluate.information import (
    DEFAULT_BINS,
    attribute_distributions,
    entropy,
    kl_divergence,
)
from ppdp.evaluate.matrix import frobenius_error, mse
from ppdp.evaluate.note import ReleaseNote, release_note
from ppdp.evaluate.report import (
    NOT_JUDGED,
    THRESHOLDS,
    VERDICTS,
    QualityReport,
    lda_projection_report,
    model_report,
    quality_report,
)

__all__ = [
    "CLASSIFIERS",
    "DEFAULT_BINS",
    "DEFAULT_MIN_SAMPLES_LEAF",
    "NOT_JUDGED",
    "THRESHOLDS",
    "VERDICTS",
    "QualityReport",
    "ReleaseNote",
    "attribute_distributions",
    "baseline_accuracy",
    "classification_utility",
    "entropy",
    "frobenius_error",
    "group_report",
    "kl_divergence",
    "lda_projection_report",
    "lowest_achievable",
    "model_report",
    "mse",
    "quality_report",
    "release_note",
    "roc_auc",
]
