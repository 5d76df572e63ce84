"""``ppdp publish METHOD``: a thin layer over :func:`ppdp.publish.files.publish_table_file`."""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from ppdp.cli import _common as c
from ppdp.cli._common import print_dry_run  # noqa: F401 (importable from here, as before)
from ppdp.registry import PUBLISHERS

METHODS = PUBLISHERS.names()
#: Models of ``synth`` (TableSynthesizer's ``method``).
SYNTH_METHODS = ("auto", "tree", "pairs")
#: Releases of ``lda-projection`` (LDAProjectionPublisher's ``release``).
LDA_RELEASES = ("noisy-projections", "direction", "raw-projections")

_DESCRIPTION = (
    "Release a differentially private version of a table declared by a schema. pca: DP-PCA "
    "(one row per input row, order kept; Jiang et al. 2013); lda-synth: synthetic labelled rows "
    "from noisy class statistics (DP-LDA); lda-projection: a noisy Fisher discriminant and (by "
    "default) noisy projections of every row on it (LDA-DP, Gu et al. 2022; needs --delta and "
    "public class counts); laplace, exponential: the per-record baselines; synth: synthetic rows "
    "from noisy marginals under zCDP (TableSynthesizer, (ε, δ)-DP). The spend is checked against "
    "and recorded in --ledger before anything is released; invalid input writes nothing and "
    "spends nothing."
)
# fmt: off
_FLAGS: tuple[c.Flag, ...] = (
    ("method", {"choices": METHODS}, "the publishing method"),
    ("input", {"metavar": "IN"},
     "the private table (.csv, .csv.gz, .parquet, or a Parquet dataset: a folder or a glob)"),
    ("-o --output", {"required": True, "metavar": "OUT"},
     "the release (.csv or .parquet; a folder for a Parquet dataset); its guarantee goes to "
     "OUT.guarantee.json"),
    ("--schema", {"required": True, "metavar": "S"}, "the schema (.json, .yaml)"),
    ("--epsilon", {"type": float, "required": True}, "ε spent by this release"),
    ("--components", {"type": int, "default": None, "metavar": "K"},
     "pca: number of principal components (fix it in advance); lda-projection: number of "
     "discriminant directions (default K - 1)"),
    ("--class-sizes", {"choices": ("public", "noisy"), "default": "noisy"},
     "lda-synth: use the schema's declared public class counts, or release noisy ones from the "
     "budget"),
    ("--delta", {"type": float, "default": None},
     "δ spent by this release (lda-projection: required; synth: default 1e-9)"),
    ("--release", {"choices": LDA_RELEASES, "default": None},
     "lda-projection: noisy projections of every row (default), the direction only, or the "
     "paper's exact projections (NOT differentially private for the rows)"),
    ("--calibration", {"choices": ("gaussian", "paper"), "default": None},
     "lda-projection: analytic Gaussian noise (default) or the paper's MOD-SULQ template"),
    ("--class-counts", {"default": None, "metavar": "N1,N2,..."},
     "lda-projection: the public class sizes, in the label's class order (default: the schema's "
     "declared public_counts); declaring them public is an assumption of the guarantee"),
    ("--mean-share", {"type": float, "default": None},
     "lda-projection: share of the direction's (ε, δ) spent on the class sums"),
    ("--projection-share", {"type": float, "default": None},
     "lda-projection: share of ε spent on the per-row noise of noisy projections"),
    ("--ridge", {"default": None, "metavar": "LAMBDA|auto"},
     "lda-projection: ridge added to the noisy scatter (auto: from ε, δ, p, counts)"),
    ("--keep-constant", {"action": "store_true"},
     "lda-projection: keep the one-hot blocks' constant directions (removed by default)"),
    ("--count-share", {"type": float, "default": None},
     "lda-synth: share of ε for the noisy class histogram (--class-sizes noisy)"),
    ("--method", {"dest": "synth_method", "choices": SYNTH_METHODS, "default": None},
     "synth: the model (auto: pairs for small domains such as 16 binary items, else tree)"),
    ("--bins", {"type": int, "default": None, "metavar": "B"},
     "synth: equal-width bins per numeric column over its declared bounds (default 16)"),
    ("--no-clamp", {"action": "store_true"},
     "pca: leave the encoded release unclamped (the decoded table is clipped anyway)"),
    ("--ledger", {"metavar": "L", "default": None},
     "the dataset's budget ledger (create one with 'ppdp budget init')"),
    c.SEED, c.ALLOW_SEEDED, c.FORCE, c.IDEMPOTENCY_KEY, c.SEP, c.ENCODING, c.SCHEDULER,
    ("--allow-large-epsilon", {"action": "store_true"},
     "accept epsilon above 10 (a weak guarantee: say so to whoever reads the release)"),
    ("--dry-run", {"action": "store_true"},
     "read and validate everything, print the planned charges, noise scales and the share of "
     "values the bounds clip, then stop: nothing is spent or written"),
)
# fmt: on
#: The method-specific flags, in the order ``publish_table_file`` checks them.
_OPTIONS = ("--mean-share", "--projection-share", "--ridge", "--keep-constant", "--count-share")
_OPTIONS += ("--no-clamp", "--method", "--bins", "--delta", "--release", "--calibration")
_OPTIONS += ("--class-counts", "--components", "--class-sizes")
#: Helpers that moved to the library, still importable from here.
_MOVED = {"charge_lines": "ppdp.accounting.plan", "clipping_lines": "ppdp.data.schema_files"}
_MOVED |= {"encode_report": "ppdp.publish.files"}


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_MOVED[name]), name)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``publish`` to the ``ppdp`` parser."""
    what = "release a private table (DP-PCA, DP-LDA synthetic data, LDA-DP, baselines)"
    c.command(subparsers, "publish", what, _DESCRIPTION, *_FLAGS, func=_run)


def add_idempotency_flag(parser: argparse.ArgumentParser) -> None:
    """``--idempotency-key``, shared by ``ppdp publish`` and ``ppdp train``."""
    c.add_flags(parser, c.IDEMPOTENCY_KEY)


def _ridge(text: str | None) -> float | str | None:
    """``--ridge``: ``auto`` or a number."""
    from ppdp.exceptions import ParameterError

    if text is None or text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise ParameterError(f"--ridge ({text!r}) must be 'auto' or a number >= 0") from None


def _option(args: argparse.Namespace, flag: str) -> Any:
    """A method-specific flag's value as ``publish_table_file`` takes it (None: not given)."""
    if flag in ("--keep-constant", "--no-clamp"):  # the flag turns a default off
        return False if getattr(args, flag[2:].replace("-", "_")) else None
    if flag == "--method":
        return args.synth_method
    value = getattr(args, flag[2:].replace("-", "_"))
    return _ridge(value) if flag == "--ridge" else value


def _run(args: argparse.Namespace) -> int:
    from ppdp.publish.files import publish_table_file

    c.refuse_seed_with_ledger(args.seed, args.ledger, args.allow_seeded)
    result = publish_table_file(
        args.method,
        args.input,
        options={flag: _option(args, flag) for flag in _OPTIONS},
        random_state=args.seed,
        say=c.say("ppdp publish"),
        **c.pick(args, "schema output epsilon ledger allow_seeded allow_large_epsilon force"),
        **c.pick(args, "idempotency_key dry_run scheduler"),
        **c.table_args(args),
    )
    if result.dry_run:
        what, per_value = f"publish {args.method}", args.method == "laplace"
        c.print_dry_run(what=what, per_value=per_value, state=result.ledger, after=result.after,
                        charges=result.charges, schema=result.publisher.schema,
                        report=result.report)  # fmt: skip
        return 0
    rel = result.release
    rows = result.rows_written if result.rows_written is not None else len(result.table)
    print(f"released {rows:,} rows to {result.path}")
    c.print_guarantee(rel.guarantee, verbose=args.verbose, full_in=result.sidecar)
    c.print_release_end(args.ledger, rel.ledger_indices, seeded=rel.seeded, state=result.ledger)
    return 0
