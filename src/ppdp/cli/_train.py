"""``ppdp train LEARNER`` and ``ppdp predict``: thin layers over
:func:`ppdp.learn.files.train_model_file` and :func:`ppdp.learn.files.predict_file`."""

from __future__ import annotations

import argparse
import json
import warnings
from typing import Any

from ppdp.cli import _common as c
from ppdp.exceptions import ParameterError
from ppdp.registry import LEARNERS as LEARNER_REGISTRY

LEARNERS = LEARNER_REGISTRY.names()

_DESCRIPTION = (
    "Train a private binary classifier on a table declared by a schema with a two-class label. "
    "logreg, svm: logistic regression and Huber SVM by objective or output perturbation "
    "(Chaudhuri et al. 2011); rbf-svm: RBF-kernel SVM by random Fourier features (Rubinstein et "
    "al.); hybrid-svm: the same with features fitted on a public sample (Li et al. 2014; needs "
    "--public). Records are scaled by the schema's declared row-norm bound. The spend is checked "
    "against and recorded in --ledger before anything is released; invalid input writes nothing "
    "and spends nothing. The model file holds the released parameters, the guarantee and the "
    "schema, nothing private."
)
_PREDICT = (
    "Predict each row of IN with the model in MODEL.json, encoding it with the schema stored in "
    "the model file (a label column, if present, is ignored). Writes prediction (the class name), "
    "score (the decision function) and, for logreg, probability. Post-processing of a released "
    "model: nothing is spent."
)
# fmt: off
_FLAGS: tuple[c.Flag, ...] = (
    ("learner", {"choices": LEARNERS}, "the learner"),
    ("input", {"metavar": "IN"},
     "the private table (.csv, .csv.gz, .parquet, or a Parquet dataset: a folder or a glob)"),
    ("-o --output", {"required": True, "metavar": "MODEL.json"}, "model file"),
    ("--schema", {"required": True, "metavar": "S"}, "the schema (.json, .yaml)"),
    ("--epsilon", {"type": float, "required": True}, "ε spent by this release"),
    ("--delta", {"type": float, "default": None}, "δ, for learners with an (ε, δ) guarantee"),
    ("--regularization", {"type": float, "default": None, "metavar": "LAMBDA"},
     "Λ > 0 (fix it in advance; the learner's default if omitted)"),
    ("--perturbation", {"choices": ("objective", "output"), "default": None},
     "logreg, svm: objective or output perturbation (the learner's default if omitted)"),
    ("--tune-grid", {"default": None, "metavar": "L1,L2,..."},
     "logreg, svm: choose Λ privately from this public grid (CMS11 Alg. 4: one model per "
     "disjoint part of the data, chosen by the exponential mechanism; same ε in total)"),
    ("--huber-h", {"type": float, "default": None, "metavar": "H"}, "svm, rbf-svm: Huber width h"),
    ("--allow-large-epsilon", {"action": "store_true"},
     "accept epsilon above 10 (a weak guarantee: say so to whoever reads the model)"),
    ("--no-intercept", {"action": "store_true"},
     "logreg, svm: no intercept (CMS11's model; the default fits one inside the norm bound)"),
    ("--intercept-scaling", {"type": float, "default": None, "metavar": "S"},
     "logreg, svm: value of the constant feature of the intercept"),
    ("--tol", {"type": float, "default": None},
     "logreg, svm: certified bound on the solver's gradient norm (docs/proofs/erm.md)"),
    ("--max-iter", {"type": int, "default": None}, "logreg, svm: Newton iterations at most"),
    ("--C-form", {"dest": "C_form", "choices": ("rubinstein", "libsvm"), "default": None},
     "rbf-svm, hybrid-svm: the convention of --C (C/n or LIBSVM's C)"),
    ("--tuning", {"choices": ("none", "private", "public"), "default": None},
     "rbf-svm (none, private), hybrid-svm (none, private, public): tune over --param-grid"),
    ("--param-grid", {"default": None, "metavar": "JSON"},
     'rbf-svm, hybrid-svm: candidate lists, e.g. \'{"C": [1, 10], "gamma": [0.5, 1]}\''),
    ("--feature-seed", {"type": int, "default": None},
     "rbf-svm, hybrid-svm: seed of the public random features ρ (public: not noise)"),
    ("--rho-max-iter", {"type": int, "default": None}, "hybrid-svm: L-BFGS iterations for ρ"),
    ("--no-overlap-check", {"action": "store_true"},
     "hybrid-svm: do not warn when public rows equal private rows"),
    ("--C", {"dest": "C", "type": float, "default": None},
     "rbf-svm, hybrid-svm: SVM cost C (Rubinstein et al.'s C/n form)"),
    ("--components", {"type": int, "default": None, "metavar": "D"},
     "rbf-svm, hybrid-svm: number of random features"),
    ("--gamma", {"type": float, "default": None}, "rbf-svm, hybrid-svm: RBF kernel width γ"),
    ("--public", {"metavar": "P", "default": None},
     "hybrid-svm: a public table with the schema's feature columns"),
    ("--ledger --budget-ledger", {"dest": "ledger", "metavar": "L", "default": None},
     "the dataset's budget ledger (create one with 'ppdp budget init')"),
    c.SEED, c.ALLOW_SEEDED, c.FORCE, c.IDEMPOTENCY_KEY, c.SEP, c.ENCODING, c.SCHEDULER,
    ("--dry-run", {"action": "store_true"},
     "read and validate everything, print the planned charge, its noise and the share of values "
     "the bounds clip, then stop: nothing is spent or written"),
)
_PREDICT_FLAGS: tuple[c.Flag, ...] = (
    ("model", {"metavar": "MODEL.json"}, "a model file from 'ppdp train'"),
    ("input", {"metavar": "IN"}, "the table (.csv, .csv.gz, .parquet, or a Parquet dataset)"),
    c.SEP, c.ENCODING, c.SCHEDULER,
    ("-o --output", {"required": True, "metavar": "OUT.csv"}, "predictions"),
    ("--force", {"action": "store_true"}, "replace an existing output file (never an input)"),
)
# fmt: on
def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``train`` and ``predict`` to the ``ppdp`` parser."""
    what = "train a differentially private classifier and write its model file"
    c.command(subparsers, "train", what, _DESCRIPTION, *_FLAGS, func=_train)
    what = "predict a table with a model file (no privacy cost)"
    c.command(subparsers, "predict", what, _PREDICT, *_PREDICT_FLAGS, func=_predict)


def _grid(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise ParameterError(
            f"--tune-grid ({text!r}) must be numbers separated by commas, e.g. 1e-4,1e-3,1e-2"
        ) from None


def _param_grid(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
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


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The learner's options from its flags (the flags a learner does not take are refused)."""
    linear = args.learner in ("logreg", "svm")
    if args.tune_grid is not None and not linear:
        raise ParameterError(
            f"--tune-grid ({args.tune_grid!r}) applies to logreg and svm only, not {args.learner}"
        )
    if args.no_intercept and not linear:
        raise ParameterError(
            f"--no-intercept applies to logreg and svm only, not {args.learner} (no intercept)"
        )
    if args.tuning is not None and args.tune_grid is not None:
        raise ParameterError(
            "--tuning applies to rbf-svm and hybrid-svm, --tune-grid to logreg and svm: give one"
        )
    param_grid = _param_grid(args.param_grid)
    opts = {
        "fit_intercept": False if args.no_intercept else None,
        "intercept_scaling": args.intercept_scaling,
        "tol": args.tol,
        "max_iter": args.max_iter,
        "C_form": args.C_form,
        "param_grid": param_grid,
        "feature_random_state": args.feature_seed,
        "rho_max_iter": args.rho_max_iter,
        "check_overlap": False if args.no_overlap_check else None,
        "allow_large_epsilon": True if args.allow_large_epsilon else None,
        "huber_h": args.huber_h,
        "n_components": args.components,
        "gamma": args.gamma,
        "C": args.C,
        "tuning": args.tuning if args.tune_grid is None else _grid(args.tune_grid),
    }
    return {k: v for k, v in opts.items() if v is not None}


def _train(args: argparse.Namespace) -> int:
    from ppdp.exceptions import InsecureRandomnessWarning
    from ppdp.learn.files import train_model_file
    from ppdp.publish.files import warn_clipping

    c.refuse_seed_with_ledger(args.seed, args.ledger, args.allow_seeded)
    say, caught = c.say("ppdp train"), []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.simplefilter("ignore", InsecureRandomnessWarning)
            result = train_model_file(
                args.learner,
                args.input,
                random_state=args.seed,
                options=_options(args),
                on_report=lambda schema, report: warn_clipping(schema, report, say),
                say=say,
                **c.pick(args, "schema output epsilon delta regularization perturbation public"),
                **c.pick(args, "ledger allow_seeded force dry_run idempotency_key scheduler"),
                **c.table_args(args),
            )
    finally:
        for w in caught:  # one line each, also when the training failed
            say(f"warning: {w.category.__name__}: {w.message}")
    state = result.ledger_state
    if args.dry_run:
        c.print_dry_run(what=f"train {args.learner}", per_value=False, state=state,
                        after=result.after, charges=[result.plan], schema=result.schema,
                        report=result.report)  # fmt: skip
        return 0
    print(f"trained {type(result.estimator).__name__}; model written to {result.path}")
    c.print_guarantee(result.guarantee, verbose=args.verbose, full_in=result.path)
    c.print_release_end(args.ledger, result.ledger_indices, seeded=result.seeded, state=state)
    return 0


def _predict(args: argparse.Namespace) -> int:
    from ppdp.learn.files import predict_file

    result = predict_file(
        args.model, args.input, **c.pick(args, "output force scheduler"), **c.table_args(args)
    )
    print(f"predicted {result.n_rows:,} rows to {result.path} ({', '.join(result.columns)})")
    return 0
