"""Where ppdp's mechanisms register under their command-line and file names.

One table per kind: :data:`PUBLISHERS` (``ppdp publish METHOD``), :data:`LEARNERS`
(``ppdp train LEARNER``; model files name the class) and :data:`RANDOMIZERS` (the
``"type"`` of a local randomizer's ``to_dict``). The command line's choices, its
method-specific flags (with their help), which method takes which flag, model-file
loading and :func:`ppdp.local.randomizer_from_dict` read these tables instead of string
if-chains, so adding a mechanism means writing its class and registering it here with
the :class:`Option` of each flag it takes.

An entry names its class as ``"module:Class"`` and is imported only when used, so
reading the names (``ppdp --help``) imports no mechanism; a name read from a file is only
ever looked up here, never imported as given.

Examples
--------
>>> from ppdp.registry import LEARNERS, PUBLISHERS
>>> PUBLISHERS.names()[:2]
('pca', 'lda-synth')
>>> LEARNERS.load("logreg").__name__
'PrivateLogisticRegression'
>>> LEARNERS.owners("--tune-grid")
('logreg', 'svm')
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = [
    "LEARNERS",
    "PUBLISHERS",
    "RANDOMIZERS",
    "Entry",
    "Option",
    "Registry",
    "option",
    "switch",
]


@dataclass(frozen=True)
class Option:
    """A method-specific command-line flag and the constructor parameter it sets.

    Attributes
    ----------
    flag : str
        The flag (``"--components"``).
    param : str
        The constructor parameter it sets (``"n_components"``).
    help : str
        What it does for this method (``ppdp publish METHOD --help`` lists it).
    spec : mapping
        ``argparse`` ``add_argument`` keywords (``type``, ``choices``, ``metavar``, ...).
        A switch is ``{"action": "store_const", "const": VALUE}``: the parameter's value
        when the flag is given.
    parse : callable, optional
        Turns the flag's text into the parameter's value; raises a one-line
        :class:`~ppdp.exceptions.ParameterError` naming the flag.
    """

    flag: str
    param: str
    help: str
    spec: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    parse: Callable[[str], Any] | None = None

    @property
    def dest(self) -> str:
        """The attribute ``argparse`` stores the flag's value under."""
        return str(self.spec.get("dest", self.flag.lstrip("-").replace("-", "_")))

    @property
    def is_switch(self) -> bool:
        """Whether the flag takes no value."""
        return self.spec.get("action") == "store_const"

    def value(self, raw: Any) -> Any:
        """The parameter's value of the flag's parsed ``raw`` value (None: not given).

        A repeatable flag (``action="append"``) gives its values joined by commas, as if
        given once comma-separated."""
        if self.spec.get("action") == "append" and isinstance(raw, list):
            raw = ",".join(raw)
        return self.parse(raw) if self.parse is not None and isinstance(raw, str) else raw


def option(flag: str, param: str, help: str, **spec: Any) -> Option:
    """An :class:`Option` (``parse=`` is taken out of ``spec``); switches default to None."""
    parse = spec.pop("parse", None)
    spec.setdefault("default", None)
    return Option(flag, param, help, MappingProxyType(spec), parse)


def switch(flag: str, param: str, help: str, value: Any = False) -> Option:
    """A flag without a value that sets ``param`` to ``value`` when given."""
    return option(flag, param, help, action="store_const", const=value)


@dataclass(frozen=True)
class Entry:
    """One registered mechanism.

    Attributes
    ----------
    name : str
        Its command-line / file name (``"pca"``, ``"logreg"``, ``"additive"``).
    target : str
        ``"module:Class"``.
    options : tuple of Option
        The method-specific command-line flags it takes.
    required : mapping
        Flags it cannot do without -> what to give, said when one is missing.
    summary : str
        One line saying what it does (``ppdp publish METHOD --help`` and the method list).
    """

    name: str
    target: str
    options: tuple[Option, ...] = ()
    required: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    summary: str = ""

    @property
    def flags(self) -> Mapping[str, str]:
        """Flag -> the constructor parameter it sets."""
        return MappingProxyType({o.flag: o.param for o in self.options})

    @property
    def class_name(self) -> str:
        """The class's name (what a model file stores)."""
        return self.target.partition(":")[2]

    @property
    def module(self) -> str:
        """The module that defines the class."""
        return self.target.partition(":")[0]

    def load(self) -> type:
        """The class itself (imports its module)."""
        return getattr(importlib.import_module(self.module), self.class_name)  # type: ignore[no-any-return]


class Registry:
    """Names -> mechanism classes of one kind, in registration order."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry] = {}
        self._options: dict[str, Option] = {}

    def register(
        self,
        name: str,
        target: str,
        *options: Option,
        required: Mapping[str, str] | None = None,
        summary: str = "",
    ) -> Entry:
        """Add ``name`` -> ``"module:Class"`` taking ``options``.

        A name registered twice is refused, as is a flag given another ``spec`` or
        ``parse`` than an earlier entry gave it (one flag reads one way on the command line).
        """
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        for opt in options:
            known = self._options.setdefault(opt.flag, opt)
            if (known.spec, known.parse) != (opt.spec, opt.parse):
                raise ValueError(f"{opt.flag} of {name!r} reads differently from its earlier use")
        required_flags = MappingProxyType(dict(required or {}))
        entry = Entry(name, target, tuple(options), required_flags, summary)
        self._entries[name] = entry
        return entry

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._entries)

    def entries(self) -> tuple[Entry, ...]:
        """The registered entries, in registration order."""
        return tuple(self._entries.values())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._entries

    def entry(self, name: str) -> Entry:
        """The entry of ``name``; an unknown name is refused in one line naming the choices."""
        from ppdp._validation import check_option

        return self._entries[check_option(self.kind, name, self.names())]

    def load(self, name: str) -> type:
        """The class registered as ``name``."""
        return self.entry(name).load()

    def owners(self, flag: str) -> tuple[str, ...]:
        """The names whose mechanism takes ``flag``."""
        return tuple(e.name for e in self._entries.values() if flag in e.flags)

    def options(self) -> tuple[Option, ...]:
        """Every method-specific flag, once each, in the order first registered."""
        return tuple(self._options.values())

    def parameters(self, name: str, given: Mapping[str, Any]) -> dict[str, Any]:
        """The constructor parameters of ``name`` from flag -> value (None: not given).

        A flag given to a method that does not take it is refused in one line naming who
        takes it; the values of the flags it takes are parsed (:attr:`Option.parse`).

        Examples
        --------
        >>> LEARNERS.parameters("logreg", {"--tune-grid": "0.1,1", "--gamma": None})
        {'tuning': (0.1, 1.0)}
        """
        from ppdp.exceptions import ParameterError

        entry = self.entry(name)
        for flag, raw in given.items():
            if raw is not None and flag not in entry.flags:
                shown = "" if self._options[flag].is_switch else f" ({raw!r})"
                owners = " and ".join(self.owners(flag))
                raise ParameterError(
                    f"{flag}{shown} does not apply to {name}; it applies to {owners} only"
                )
        taken = {o.flag: o for o in entry.options}
        chosen = [(taken[f], v) for f, v in given.items() if v is not None and f in taken]
        return {opt.param: opt.value(v) for opt, v in chosen}


def _numbers(flag: str, example: str) -> Callable[[str], tuple[float, ...]]:
    """A parser of ``flag``'s comma-separated numbers."""

    def parse(text: str) -> tuple[float, ...]:
        from ppdp.exceptions import ParameterError

        try:
            return tuple(float(v) for v in text.split(",") if v.strip())
        except ValueError:
            raise ParameterError(
                f"{flag} ({text!r}) must be numbers separated by commas, e.g. {example}"
            ) from None

    return parse


def _json_object(text: str) -> dict[str, Any]:
    """``--param-grid``: a JSON object of candidate lists."""
    from ppdp.exceptions import ParameterError

    try:
        grid = json.loads(text)
    except ValueError:
        raise ParameterError(
            f"--param-grid ({text[:80]!r}) must be a JSON object of candidate lists, "
            "e.g. '{\"C\": [1, 10]}'"
        ) from None
    if not isinstance(grid, dict):
        raise ParameterError(f"--param-grid ({text[:80]!r}) must be a JSON object of lists")
    return grid


def _ridge(text: str) -> float | str:
    """``--ridge``: ``auto`` or a number."""
    from ppdp.exceptions import ParameterError

    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise ParameterError(f"--ridge ({text!r}) must be 'auto' or a number >= 0") from None


#: ``ppdp publish METHOD``: table publishers, with the method-specific flags each takes.
PUBLISHERS = Registry("method")
_COMPONENTS = {"type": int, "metavar": "K"}
_DELTA = {"type": float}


def _level(text: str) -> float | None:
    """``--interval``: a coverage such as 0.95, or ``none``."""
    from ppdp.exceptions import ParameterError

    if text.strip().lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        raise ParameterError(
            f"--interval ({text!r}) must be a coverage such as 0.95, or none"
        ) from None


def _probabilities(text: str) -> tuple[float, ...]:
    """``--q``: comma-separated probabilities (checked by the publisher)."""
    from ppdp.exceptions import ParameterError

    try:
        return tuple(float(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise ParameterError(f"--q ({text!r}) must be probabilities such as 0.5,0.9") from None


def _names(text: str) -> tuple[str, ...]:
    """``--person-levels``: comma-separated column names (checked by the synthesizer)."""
    return tuple(t.strip() for t in text.split(",") if t.strip())


def _rounding(text: str) -> int | str | None:
    """``--round``: ``auto``, ``none`` or a number of decimals."""
    from ppdp.exceptions import ParameterError

    t = text.strip().lower()
    if t in ("auto", "none"):
        return None if t == "none" else "auto"
    try:
        return int(t)
    except ValueError:
        raise ParameterError(
            f"--round ({text!r}) must be auto, none or a number of decimals"
        ) from None


PUBLISHERS.register(
    "pca",
    "ppdp.publish.pca:DPPCAPublisher",
    option("--components", "n_components", "number of principal components (fix it in advance)",
           **_COMPONENTS),
    switch("--no-clamp", "clamp",
           "leave the encoded release unclamped (the decoded table is clipped anyway)"),
    required={"--components": "choose k in advance"},
    summary="the table through its noisy principal components (DP-PCA), one row per input row",
)  # fmt: skip
PUBLISHERS.register(
    "lda-synth",
    "ppdp.publish.lda_synth:DPLDASynthesizer",
    option("--class-sizes", "class_sizes",
           "the schema's declared public class counts, or noisy ones from the budget",
           choices=("public", "noisy"), default="noisy"),
    option("--count-share", "count_share",
           "share of ε for the noisy class histogram (--class-sizes noisy)", type=float),
    summary="labelled synthetic rows from noisy class means and a noisy second moment "
            "(DP-LDA, Jiang et al.)",
)  # fmt: skip
PUBLISHERS.register(
    "lda-projection",
    "ppdp.publish.lda_projection:LDAProjectionPublisher",
    option("--delta", "delta", "δ spent by this release (required)", **_DELTA),
    option("--components", "n_components", "number of discriminant directions (default K - 1)",
           **_COMPONENTS),
    option("--release", "release",
           "noisy projections of every row (default), the direction only, or the paper's exact "
           "projections (NOT differentially private for the rows)",
           choices=("noisy-projections", "direction", "raw-projections")),
    option("--calibration", "calibration",
           "analytic Gaussian noise (default) or the paper's MOD-SULQ template",
           choices=("gaussian", "paper")),
    option("--class-counts", "class_counts",
           "the public class sizes in the label's class order (default: the schema's "
           "public_counts); declaring them public is an assumption of the guarantee",
           metavar="N1,N2,..."),
    option("--mean-share", "mean_share", "share of the direction's (ε, δ) spent on the class sums",
           type=float),
    option("--projection-share", "projection_share",
           "share of ε spent on the per-row noise of noisy projections", type=float),
    option("--ridge", "ridge", "ridge added to the noisy scatter (auto: from ε, δ, p, counts)",
           metavar="LAMBDA|auto", parse=_ridge),
    switch("--keep-constant", "remove_constant",
           "keep the one-hot blocks' constant directions (removed by default)"),
    required={"--delta": "a number in (0, 1), well below 1/n"},
    summary="a noisy Fisher discriminant (LDA-DP) and, by default, noisy projections on it",
)  # fmt: skip
PUBLISHERS.register("laplace", "ppdp.publish.baselines:LaplacePublisher",
                    summary="baseline: every encoded value plus Laplace noise (LAP)")  # fmt: skip
PUBLISHERS.register("exponential", "ppdp.publish.baselines:ExponentialPublisher",
                    summary="baseline: each row with truncated Laplace noise (EXP)")  # fmt: skip
PUBLISHERS.register(
    "synth",
    "ppdp.publish.table_synth:TableSynthesizer",
    option("--delta", "delta", "δ spent by this release (default 1e-9)", **_DELTA),
    option("--method", "method",
           "the model (auto: pairs for small domains such as 16 binary items, else tree; "
           "chow-liu: MST's tree with the label as a node)",
           choices=("auto", "tree", "chow-liu", "pairs"), dest="synth_method"),
    option("--bins", "n_bins",
           "equal-width bins per numeric column over its declared bounds (default 16)",
           type=int, metavar="B"),
    option("--relation", "relation",
           "neighbouring relation of the guarantee, the budget ledger's (default replace-one; "
           "add/remove keeps n private and halves the noise variance)",
           choices=("replace-one", "add/remove")),
    option("--binning", "binning",
           "numeric columns without declared cuts: auto (default: equal-width bins, a column "
           "whose rows the measured sub-bins show crowded into a few bins re-cut from them, "
           "no extra budget), equal-width, or cut near their quantiles, measured with a "
           "tenth of the budget (skewed columns such as incomes)",
           choices=("auto", "equal-width", "private-quantiles")),
    option("--decode", "decode",
           "values within an equal-width bin: by the bin's sub-bins, measured with 2 percent of "
           "the budget (default: heaped values such as 40 hours a week keep their share), "
           "or uniform",
           choices=("sub-bins", "uniform")),
    option("--keep", "keep",
           "a pair of columns whose joint table is always measured, whatever the selection "
           "chooses (repeat the flag or separate pairs by commas: --keep los:cost,age:los); "
           "added to the schema's keep", action="append", metavar="COL:COL"),
    option("--check-pairs", "check_pairs",
           "how many column pairs the tree leaves off that the release checks privately "
           "(3 percent of the budget) and names with a warning when the model loses them "
           "(default 6 without a label where the tree leaves at most 50 pairs off, else 3; "
           "0: no check, its "
           "share goes to the tables)", type=int, metavar="K"),
    option("--extra-parents", "extra_parents",
           "how many of the pairs the check names may get their table measured (a pool of 5 "
           "percent of the budget each, taken from the edge tables; what skipped pairs leave "
           "measures the edge tables again) and one column drawn given two (default: one per "
           "check round, 0 with per_person columns; 0: a tree)", type=int, metavar="K"),
    option("--pair-tables", "pair_tables",
           "how the tree's edge tables are measured with a label: with the label axis "
           "(labelled, the default), also as pair tables summed over the classes on "
           "compressed levels (both: a small table's strong numeric pairs can then be "
           "measured), only so (unlabelled), or as both where the table has at least 1000 "
           "rows (round 1's noisy count), else labelled (auto)",
           choices=("labelled", "both", "unlabelled", "auto")),
    option("--person-levels", "person_levels",
           "with per_person columns: numeric columns whose persons keep a persistent level "
           "(each person's median a hidden per-person column, the rows their deviations from "
           "it; same budget), at most 3", metavar="COL,COL", parse=_names),
    summary="synthetic rows of the schema from noisy marginals (the general-purpose method)",
)  # fmt: skip

PUBLISHERS.register(
    "groupby",
    "ppdp.publish.groupby:GroupByPublisher",
    option("--by", "by",
           "categorical columns, the label, or numeric/date columns with declared cuts (by "
           "their intervals) to group by; every declared combination is a group, empty ones "
           "included (default: the whole table)", metavar="COL,COL"),
    option("--means", "means", "numeric columns whose per-group means (and sums) are released",
           metavar="COL,COL"),
    option("--count-share", "count_share",
           "share of ε for the noisy counts, in (0, 1); the rest is split equally between the "
           "--means columns (default: equal shares)", type=float),
    option("--max-groups", "max_groups",
           "with a schema privacy_unit: at most this many groups per person (L0; default: no cap)",
           type=int, metavar="N"),
    option("--max-rows-per-group", "max_rows_per_group",
           "with a schema privacy_unit: at most this many rows of one person per group (L∞; "
           "default: no cap beyond max_rows)", type=int, metavar="N"),
    option("--relation", "relation",
           "neighbouring relation of the guarantee, the budget ledger's (default replace-one; "
           "add/remove keeps n private and halves both sensitivities)",
           choices=("replace-one", "add/remove")),
    option("--keys", "keys",
           "declared (default: every declared combination) or private: keys of open columns "
           "(open: true in the schema) read from the data and released only when a noisy "
           "count passes a threshold; needs --delta",
           choices=("declared", "private"), dest="group_keys"),
    option("--delta", "delta",
           "δ of --keys private: at most the chance that a key held by one person is released "
           "(e.g. 1e-6, well below 1/n)", **_DELTA),
    option("--selection", "selection",
           "how --keys private selects: laplace (default; noisy counts over a threshold), "
           "gaussian (for many groups per person), truncated-geometric (one group per "
           "person) or dp-sips (many groups per person: rounds of Gaussian thresholding on "
           "each person's weight spread over their keys not yet selected); the last two "
           "release keys only, and the counts get their own half of the counts' share",
           choices=("laplace", "gaussian", "truncated-geometric", "dp-sips")),
    option("--threshold", "threshold",
           "a selection threshold above the least that meets --delta (stricter)", type=float),
    option("--variances", "variances",
           "numeric columns whose per-group variance and standard deviation are released "
           "(from a noisy sum of squares: one more share of ε each)", metavar="COL,COL"),
    option("--interval", "interval",
           "coverage of the interval released beside every statistic (default 0.95; none: "
           "no intervals)", metavar="LEVEL", parse=_level),
    option("--round", "rounding",
           "decimals of the released table: auto (default: what each value's noise "
           "supports), a number of decimals, or none", metavar="D", parse=_rounding),
    option("--quantiles", "quantiles",
           "numeric columns whose per-group quantiles are released, each with an interval "
           "(see --quantile-method for their shares of ε)", metavar="COL,COL"),
    option("--quantile-method", "quantile_method",
           "exponential+tree (default: each --q by the exponential mechanism, its interval "
           "from a noisy tree; one share of ε per column and probability, split 0.8/0.2), "
           "tree (a noisy tree histogram per column; every --q and its interval read from "
           "it) or exponential (one exponential mechanism draw per column and probability, "
           "each a share of ε; no interval)",
           choices=("exponential+tree", "tree", "exponential")),
    option("--q", "q", "the probabilities of --quantiles, each in (0, 1) (default 0.5: the "
           "median)", metavar="P,P", parse=_probabilities),
    option("--min-count", "min_count",
           "leave out groups whose noisy count is below this (post-processing)", type=float,
           metavar="T"),
    summary="noisy counts, sums and means per group of categorical columns (group by)",
)  # fmt: skip

#: ``ppdp train LEARNER``: private classifiers (a model file stores the class name).
LEARNERS = Registry("learner")
_LINEAR = (
    option("--regularization", "regularization",
           "Λ > 0 (fix it in advance; the learner's default if omitted)", type=float,
           metavar="LAMBDA"),
    option("--perturbation", "perturbation", "objective or output perturbation",
           choices=("objective", "output")),
    option("--tune-grid", "tuning",
           "choose Λ privately from this public grid (CMS11 Alg. 4: one model per disjoint part "
           "of the data, chosen by the exponential mechanism; same ε in total)",
           metavar="L1,L2,...", parse=_numbers("--tune-grid", "1e-4,1e-3,1e-2")),
    switch("--no-intercept", "fit_intercept",
           "no intercept (CMS11's model; the default fits one inside the norm bound)"),
    option("--intercept-scaling", "intercept_scaling",
           "value of the constant feature of the intercept", type=float, metavar="S"),
    option("--tol", "tol", "certified bound on the solver's gradient norm (docs/proofs/erm.md)",
           type=float),
    option("--max-iter", "max_iter", "Newton iterations at most", type=int),
)  # fmt: skip
_HUBER = option("--huber-h", "huber_h", "Huber width h", type=float, metavar="H")
_TUNING = {"choices": ("none", "private", "public")}


def _kernel(tuning: str) -> tuple[Option, ...]:
    """The flags of the RBF SVMs; ``tuning``: the modes the learner offers."""
    return (
        option("--C", "C", "SVM cost C (Rubinstein et al.'s C/n form)", type=float),
        option("--C-form", "C_form", "the convention of --C (C/n or LIBSVM's C)",
               choices=("rubinstein", "libsvm")),
        option("--gamma", "gamma", "RBF kernel width γ", type=float),
        option("--components", "n_components", "number of random features", type=int,
               metavar="D"),
        _HUBER,
        option("--tuning", "tuning", f"tune over --param-grid: {tuning}", **_TUNING),
        option("--param-grid", "param_grid",
               'candidate lists, e.g. \'{"C": [1, 10], "gamma": [0.5, 1]}\'', metavar="JSON",
               parse=_json_object),
        option("--feature-seed", "feature_random_state",
               "seed of the public random features ρ (public: not noise)", type=int),
    )  # fmt: skip


LEARNERS.register("logreg", "ppdp.learn.linear:PrivateLogisticRegression", *_LINEAR,
                  summary="logistic regression by objective or output perturbation")  # fmt: skip
LEARNERS.register("svm", "ppdp.learn.linear:PrivateLinearSVM", *_LINEAR, _HUBER,
                  summary="linear SVM (Huber loss), objective or output perturbation")  # fmt: skip
LEARNERS.register("rbf-svm", "ppdp.learn.rbf_svm:PrivateRBFSVM", *_kernel("none, private"),
                  summary="RBF-kernel SVM on random Fourier features")  # fmt: skip
LEARNERS.register(
    "hybrid-svm",
    "ppdp.learn.rbf_svm:HybridRBFSVM",
    *_kernel("none, private, public"),
    option("--rho-max-iter", "rho_max_iter", "L-BFGS iterations for ρ", type=int),
    option(
        "--rho-fit-rows",
        "rho_fit_rows",
        "at most this many public rows (a uniform subsample) enter the ρ fit, whose time grows "
        "with their square (default 5000; the overlap check reads every row)",
        type=int,
        metavar="N",
    ),
    switch("--no-overlap-check", "check_overlap", "no warning when public rows equal private ones"),
    summary="RBF-kernel SVM whose random features are fitted to public rows (--public)",
)

#: Local randomizers, by the ``"type"`` their ``to_dict`` writes.
RANDOMIZERS = Registry("randomizer type")
RANDOMIZERS.register("additive", "ppdp.local.additive:AdditiveRandomizer")
RANDOMIZERS.register(
    "characteristic-vector", "ppdp.local.characteristic:CharacteristicVectorRandomizer"
)
