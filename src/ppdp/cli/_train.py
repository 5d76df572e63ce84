"""``ppdp train LEARNER`` and ``ppdp predict``: thin layers over
:func:`ppdp.learn.files.train_model_file` and :func:`ppdp.learn.files.predict_file`."""

from __future__ import annotations

import argparse
import warnings
from typing import Any

from ppdp.cli import _common as c
from ppdp.registry import LEARNERS as LEARNER_REGISTRY

LEARNERS = LEARNER_REGISTRY.names()

_DESCRIPTION = (
    "Train a private binary classifier on a table whose schema declares a two-class label "
    "(learners: docs/learn.md). The spend is checked against and recorded in --ledger before "
    "anything is released; invalid input writes nothing and spends nothing."
)
_PREDICT = (
    "Predict each row of IN with a model file, encoded with the schema it stores: prediction, "
    "score and, for logreg, probability. Post-processing: nothing is spent."
)
# fmt: off
_FLAGS: tuple[c.Flag, ...] = (
    c.INPUT,
    ("-o --output", {"required": True, "metavar": "MODEL.json"}, "model file"),
    c.SCHEMA, c.EPSILON,
    c.ALLOW_LARGE_EPSILON,
    ("--public", {"metavar": "P", "default": None},
     "hybrid-svm: a public table with the schema's feature columns"),
    ("--ledger --budget-ledger", {"dest": "ledger", "metavar": "L", "default": None}, c.LEDGER[2]),
    *c.RELEASE, c.DRY_RUN,
)
_PREDICT_FLAGS: tuple[c.Flag, ...] = (
    ("model", {"metavar": "MODEL.json"}, "a model file from 'ppdp train'"),
    ("input", {"metavar": "IN"}, "the table (CSV, Parquet file or dataset)"),
    c.SEP, c.ENCODING, c.DECIMAL, c.SCHEDULER, c.DASK_TIMEOUT,
    ("-o --output", {"required": True, "metavar": "OUT.csv"}, "predictions"), c.FORCE,
    c.OUTPUT_SEP, c.OUTPUT_DECIMAL,
    ("--keep", {"action": "append", "default": [], "metavar": "COL"},
     "copy this input column (an ID) in front of the predictions; repeatable"),
    ("--on-invalid", {"choices": ("raise", "mask"), "default": "raise"}, "a value the schema "
     "refuses: refuse the table, or predict every row and name the masked columns in 'masked'"),
)
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``train`` and ``predict`` to the ``ppdp`` parser."""
    what = "train a differentially private classifier and write its model file"
    parser = c.command(subparsers, "train", what, f"{_DESCRIPTION} 'ppdp train LEARNER --help' "
                       "lists a learner's flags.")  # fmt: skip
    c.registry_commands(parser, LEARNER_REGISTRY, _DESCRIPTION, *_FLAGS, dest="learner",
                        func=_train)  # fmt: skip
    what = "predict a table with a model file (no privacy cost)"
    c.command(subparsers, "predict", what, _PREDICT, *_PREDICT_FLAGS, func=_predict)


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The learner's parameters from its flags (one it does not take is refused)."""
    given = {o.flag: getattr(args, o.dest) for o in LEARNER_REGISTRY.options()}
    options = LEARNER_REGISTRY.parameters(args.learner, given)
    return options | ({"allow_large_epsilon": True} if args.allow_large_epsilon else {})


def _train(args: argparse.Namespace) -> int:
    from ppdp.exceptions import InsecureRandomnessWarning
    from ppdp.learn import UnaccountedFitWarning
    from ppdp.learn.files import train_model_file
    from ppdp.publish.files import say_corrections

    say, caught = c.say("ppdp train", quiet=args.quiet), []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.simplefilter("ignore", InsecureRandomnessWarning)
            # said in CLI words by train_model_file ("no --ledger given"); the warning's
            # advice is for Python callers
            warnings.simplefilter("ignore", UnaccountedFitWarning)
            result = train_model_file(
                args.learner,
                args.input,
                random_state=args.seed,
                options=_options(args),
                on_report=lambda schema, report: say_corrections(schema, report, say),
                say=say,
                **c.pick(args, "schema output epsilon public"),
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
    c.print_release_end(args.ledger, result.ledger_indices, seeded=result.seeded, state=state,
                        replayed=getattr(result.estimator, "replayed_", False))  # fmt: skip
    return 0


def _predict(args: argparse.Namespace) -> int:
    from ppdp.exceptions import DataValidationError
    from ppdp.learn.files import predict_file

    try:
        names = "output force scheduler keep output_sep output_decimal"
        result = predict_file(args.model, args.input, **c.pick(args, names),
                              on_invalid=args.on_invalid, **c.table_args(args))  # fmt: skip
    except DataValidationError as exc:  # the CLI's words for the Python advice
        raise type(exc)(str(exc).replace('on_invalid="mask"', "--on-invalid mask")) from None
    print(f"predicted {result.n_rows:,} rows to {result.path} ({', '.join(result.columns)})")
    if args.on_invalid == "mask":
        counts = ", ".join(f"{k!r}: {v:,}" for k, v in result.masked.items()) or "none"
        c.say("ppdp predict")(f"masked {result.n_masked:,} row(s), per column: {counts}")
    if result.imputed:
        filled = ", ".join(f"{k!r}: {v:,}" for k, v in result.imputed.items())
        c.say("ppdp predict")(f"filled missing values with the schema's impute constants: {filled}")
    return 0
