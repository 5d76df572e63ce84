"""``ppdp train LEARNER`` and ``ppdp predict``: private classifiers and their model files.

Thin layers over :func:`ppdp.learn.files.train_model_file` and
:func:`ppdp.learn.files.predict_file`. ``train`` validates the parameters, checks the
budget in the ledger, reads and encodes the table with the declared schema (``data_norm`` is
the schema's encoded row-norm bound, never read from the data), records the spend, trains,
and writes the model file atomically. Invalid input writes nothing and spends nothing.
``predict`` is post-processing of a released model: it spends nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any

from ppdp.cli._common import (
    add_seed_and_force_flags,
    add_table_flags,
    ledger_entries,
    ledger_total,
    print_guarantee,
    refuse_seed_with_ledger,
    table_separator,
)
from ppdp.cli._publish import add_idempotency_flag
from ppdp.registry import LEARNERS as LEARNER_REGISTRY

LEARNERS = LEARNER_REGISTRY.names()


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``train`` and ``predict`` to the ``ppdp`` parser."""
    train = subparsers.add_parser(
        "train",
        help="train a differentially private classifier and write its model file",
        description="Train a private binary classifier on a table declared by a schema with a "
        "two-class label. logreg, svm: logistic regression and Huber SVM by objective or "
        "output perturbation (Chaudhuri et al. 2011); rbf-svm: RBF-kernel SVM by random "
        "Fourier features (Rubinstein et al.); hybrid-svm: the same with features fitted on "
        "a public sample (Li et al. 2014; needs --public). Records are scaled by the "
        "schema's declared row-norm bound. The spend is checked against and recorded in "
        "--ledger before anything is released; invalid input writes nothing and spends "
        "nothing. The model file holds the released parameters, the guarantee and the "
        "schema, nothing private.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    train.add_argument("learner", choices=LEARNERS, help="the learner")
    train.add_argument("input", metavar="IN", help="the private table (.csv, .csv.gz, .parquet)")
    train.add_argument("-o", "--output", required=True, metavar="MODEL.json", help="model file")
    train.add_argument("--schema", required=True, metavar="S", help="the schema (.json, .yaml)")
    train.add_argument("--epsilon", type=float, required=True, help="ε spent by this release")
    train.add_argument(
        "--delta", type=float, default=None, help="δ, for learners with an (ε, δ) guarantee"
    )
    train.add_argument(
        "--regularization",
        type=float,
        default=None,
        metavar="LAMBDA",
        help="Λ > 0 (fix it in advance; the learner's default if omitted)",
    )
    train.add_argument(
        "--perturbation",
        choices=("objective", "output"),
        default=None,
        help="logreg, svm: objective or output perturbation (the learner's default if omitted)",
    )
    train.add_argument(
        "--tune-grid",
        default=None,
        metavar="L1,L2,...",
        help="logreg, svm: choose Λ privately from this public grid (CMS11 Alg. 4: one model "
        "per disjoint part of the data, chosen by the exponential mechanism; same ε in total)",
    )
    train.add_argument(
        "--huber-h", type=float, default=None, metavar="H", help="svm, rbf-svm: Huber width h"
    )
    train.add_argument(
        "--allow-large-epsilon",
        action="store_true",
        help="accept epsilon above 10 (a weak guarantee: say so to whoever reads the model)",
    )
    train.add_argument(
        "--no-intercept",
        action="store_true",
        help="logreg, svm: no intercept (CMS11's model; the default fits one inside the norm "
        "bound)",
    )
    train.add_argument(
        "--intercept-scaling",
        type=float,
        default=None,
        metavar="S",
        help="logreg, svm: value of the constant feature of the intercept",
    )
    train.add_argument(
        "--tol",
        type=float,
        default=None,
        help="logreg, svm: certified bound on the solver's gradient norm (docs/proofs/erm.md)",
    )
    train.add_argument(
        "--max-iter", type=int, default=None, help="logreg, svm: Newton iterations at most"
    )
    train.add_argument(
        "--C-form",
        dest="C_form",
        choices=("rubinstein", "libsvm"),
        default=None,
        help="rbf-svm, hybrid-svm: the convention of --C (C/n or LIBSVM's C)",
    )
    train.add_argument(
        "--tuning",
        choices=("none", "private", "public"),
        default=None,
        help="rbf-svm (none, private), hybrid-svm (none, private, public): tune over --param-grid",
    )
    train.add_argument(
        "--param-grid",
        default=None,
        metavar="JSON",
        help='rbf-svm, hybrid-svm: candidate lists, e.g. \'{"C": [1, 10], "gamma": [0.5, 1]}\'',
    )
    train.add_argument(
        "--feature-seed",
        type=int,
        default=None,
        help="rbf-svm, hybrid-svm: seed of the public random features ρ (public: not noise)",
    )
    train.add_argument(
        "--rho-max-iter", type=int, default=None, help="hybrid-svm: L-BFGS iterations for ρ"
    )
    train.add_argument(
        "--no-overlap-check",
        action="store_true",
        help="hybrid-svm: do not warn when public rows equal private rows",
    )
    train.add_argument(
        "--C",
        dest="C",
        type=float,
        default=None,
        help="rbf-svm, hybrid-svm: SVM cost C (Rubinstein et al.'s C/n form)",
    )
    train.add_argument(
        "--components",
        type=int,
        default=None,
        metavar="D",
        help="rbf-svm, hybrid-svm: number of random features",
    )
    train.add_argument(
        "--gamma", type=float, default=None, help="rbf-svm, hybrid-svm: RBF kernel width γ"
    )
    train.add_argument(
        "--public",
        metavar="P",
        default=None,
        help="hybrid-svm: a public table with the schema's feature columns",
    )
    train.add_argument(
        "--ledger",
        "--budget-ledger",
        dest="ledger",
        metavar="L",
        default=None,
        help="the dataset's budget ledger (create one with 'ppdp budget init')",
    )
    train.add_argument(
        "--seed",
        type=int,
        default=None,
        help="reproducible noise for experiments (NOT for real releases); refused with "
        "--ledger unless --allow-seeded",
    )
    add_seed_and_force_flags(train)
    add_idempotency_flag(train)
    add_table_flags(train)
    train.add_argument(
        "--dry-run",
        action="store_true",
        help="read and validate everything, print the planned charge, its noise and the "
        "share of values the bounds clip, then stop: nothing is spent or written",
    )
    train.set_defaults(func=_train)

    predict = subparsers.add_parser(
        "predict",
        help="predict a table with a model file (no privacy cost)",
        description="Predict each row of IN with the model in MODEL.json, encoding it with the "
        "schema stored in the model file (a label column, if present, is ignored). Writes "
        "prediction (the class name), score (the decision function) and, for logreg, "
        "probability. Post-processing of a released model: nothing is spent.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    predict.add_argument("model", metavar="MODEL.json", help="a model file from 'ppdp train'")
    predict.add_argument("input", metavar="IN", help="the table (.csv, .csv.gz, .parquet)")
    add_table_flags(predict)
    predict.add_argument("-o", "--output", required=True, metavar="OUT.csv", help="predictions")
    predict.add_argument(
        "--force", action="store_true", help="replace an existing output file (never an input)"
    )
    predict.set_defaults(func=_predict)


def _say(command: str, message: str) -> None:
    sys.stderr.write(f"ppdp {command}: {message}\n")
    sys.stderr.flush()


def _grid(text: str | None) -> tuple[float, ...] | None:
    from ppdp.exceptions import ParameterError

    if text is None:
        return None
    try:
        return tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise ParameterError(
            f"--tune-grid ({text!r}) must be numbers separated by commas, e.g. 1e-4,1e-3,1e-2"
        ) from None


def _options(args: argparse.Namespace) -> dict[str, Any]:
    from ppdp.exceptions import ParameterError

    if args.tune_grid is not None and args.learner not in ("logreg", "svm"):
        raise ParameterError(
            f"--tune-grid ({args.tune_grid!r}) applies to logreg and svm only, not {args.learner}"
        )
    if args.no_intercept and args.learner not in ("logreg", "svm"):
        raise ParameterError(
            f"--no-intercept applies to logreg and svm only, not {args.learner} (no intercept)"
        )
    if args.tuning is not None and args.tune_grid is not None:
        raise ParameterError(
            "--tuning applies to rbf-svm and hybrid-svm, --tune-grid to logreg and svm: give one"
        )
    param_grid = None
    if args.param_grid is not None:
        try:
            param_grid = json.loads(args.param_grid)
        except ValueError:
            raise ParameterError(
                f"--param-grid ({args.param_grid[:80]!r}) must be a JSON object of candidate "
                "lists, e.g. '{\"C\": [1, 10]}'"
            ) from None
        if not isinstance(param_grid, dict):
            raise ParameterError(
                f"--param-grid ({args.param_grid[:80]!r}) must be a JSON object of lists"
            )
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
        "tuning": _grid(args.tune_grid) if args.tuning is None else args.tuning,
    }
    return {k: v for k, v in opts.items() if v is not None}


def _train(args: argparse.Namespace) -> int:
    from ppdp.cli._publish import print_dry_run
    from ppdp.exceptions import InsecureRandomnessWarning
    from ppdp.learn.files import train_model_file
    from ppdp.publish.files import warn_clipping

    refuse_seed_with_ledger(args.seed, args.ledger, args.allow_seeded)
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.simplefilter("ignore", InsecureRandomnessWarning)
            result = train_model_file(
                args.learner,
                args.input,
                schema=args.schema,
                output=args.output,
                epsilon=args.epsilon,
                delta=args.delta,
                regularization=args.regularization,
                perturbation=args.perturbation,
                public=args.public,
                ledger=args.ledger,
                random_state=args.seed,
                options=_options(args),
                allow_seeded=args.allow_seeded,
                force=args.force,
                sep=table_separator(args.sep),
                encoding=args.encoding,
                dry_run=args.dry_run,
                idempotency_key=args.idempotency_key,
                on_report=lambda schema, report: warn_clipping(
                    schema, report, lambda m: _say("train", m)
                ),
                say=lambda m: _say("train", m),
            )
    finally:
        for w in caught:  # one line each, also when the training failed
            _say("train", f"warning: {w.category.__name__}: {w.message}")
    state = result.ledger_state
    remaining = state.remaining if state is not None else None
    total = ledger_total(state) if state is not None else ""
    if args.dry_run:
        print_dry_run(
            what=f"train {args.learner}",
            charges=[result.plan],
            schema=result.schema,
            report=result.report,
            remaining=remaining,
            per_value=False,
            after=result.after,
        )
        return 0
    print(f"trained {type(result.estimator).__name__}; model written to {result.path}")
    print_guarantee(result.guarantee, verbose=args.verbose, full_in=result.path)
    if result.ledger_indices:
        print(f"charged in {args.ledger} ({ledger_entries(result.ledger_indices)}); {total}")
    if result.seeded:
        print(
            "note: --seed was given, so the noise is reproducible and NOT fit for a real release"
            + (" (--allow-seeded is recorded in the ledger)" if args.ledger else "")
        )
    return 0


def _predict(args: argparse.Namespace) -> int:
    from ppdp.learn.files import predict_file

    result = predict_file(
        args.model,
        args.input,
        output=args.output,
        force=args.force,
        sep=table_separator(args.sep),
        encoding=args.encoding,
    )
    print(f"predicted {result.n_rows:,} rows to {result.path} ({', '.join(result.columns)})")
    return 0
