"""Lazy imports of the optional extras the evaluation code needs, with install hints."""

from __future__ import annotations

from typing import Any

from ppdp.exceptions import OptionalDependencyError

__all__ = ["import_pyplot", "import_sklearn"]


def import_sklearn() -> Any:
    """Import scikit-learn (the ``learn`` extra) or say how to install it."""
    try:
        import sklearn
        import sklearn.discriminant_analysis
        import sklearn.tree
    except ImportError as exc:
        raise OptionalDependencyError(
            "the classification metrics need scikit-learn, which is not installed: "
            "pip install 'ppdp[learn]'"
        ) from exc
    return sklearn


def import_pyplot() -> Any:
    """Import ``matplotlib.pyplot`` on the non-interactive Agg backend (the ``plots`` extra)."""
    try:
        import matplotlib
    except ImportError as exc:
        raise OptionalDependencyError(
            "the experiment plots need matplotlib, which is not installed: "
            "pip install 'ppdp[plots]'"
        ) from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt
