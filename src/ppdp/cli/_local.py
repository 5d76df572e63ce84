"""``ppdp local serve | report | estimate | keygen``: the local-perturbation collector.

Thin wrappers over :mod:`ppdp.local.collector` (see ``docs/local-collector.md``).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

_METHODS = ("auto", "mean", "threshold", "em", "em-fourier", "bayes", "fourier")


def _harmonics(text: str) -> int | str:
    """``--harmonics``: ``auto`` or a positive integer (argparse reports anything else)."""
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"harmonics ({text!r}) must be 'auto' or a positive integer"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"harmonics ({value}) must be 'auto' or >= 1")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``local`` and its actions to the ``ppdp`` parser."""
    parser = subparsers.add_parser(
        "local",
        help="local perturbation: collector service, respondent client, estimates",
        description="Respondents perturb their own values; the collector keeps only running "
        "totals and counts; estimates state the randomizer's local-DP guarantee.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    sub = parser.add_subparsers(dest="local_command", metavar="ACTION")
    sub.required = True

    srv = sub.add_parser(
        "serve",
        help="run the collector (FastAPI + uvicorn)",
        description="Accept signed batches of reports, validate them against the config's "
        "randomizer and keep only running totals in the config's SQLite store. On start it "
        "prints (stderr) where it listens, what it accepts, whether TLS is on and how to "
        "stop it.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    srv.add_argument("--config", required=True, metavar="FILE", help="collector config (YAML/JSON)")
    srv.add_argument("--host", default="127.0.0.1", help="address to bind")
    srv.add_argument("--port", type=int, default=8750, help="port to bind")
    srv.add_argument("--tls-cert", metavar="PEM", help="serve HTTPS with this certificate")
    srv.add_argument("--tls-key", metavar="PEM", help="the certificate's private key")
    srv.add_argument(
        "--insecure-plain-http",
        action="store_true",
        help="allow plain HTTP on a non-loopback --host (refused otherwise)",
    )
    srv.set_defaults(func=_serve)

    rep = sub.add_parser(
        "report",
        help="perturb values on this machine and send them",
        description="Read VALUES.csv (a header line, one value per row; the first column or "
        "--column), perturb each value once here with the survey's randomizer, and post the "
        "reports in signed batches. Values outside the declared domain stop everything "
        "before any noise is drawn. The perturbed reports are journaled (--journal) before "
        "the first is sent: if the collector fails, the error says how many were delivered, "
        "and rerunning the same command sends exactly the rest.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    rep.add_argument("values", metavar="VALUES.csv", help="the respondent's values")
    rep.add_argument("--config", required=True, metavar="FILE", help="client config (YAML or JSON)")
    rep.add_argument("--server", required=True, metavar="URL", help="collector base URL")
    rep.add_argument("--column", default=None, help="column of VALUES.csv (default: first)")
    rep.add_argument("--batch-size", type=int, default=5000, help="reports per batch")
    rep.add_argument(
        "--seed", type=int, default=None, help="reproducible noise (NOT for real respondents)"
    )
    rep.add_argument(
        "--journal",
        metavar="PATH",
        default=None,
        help="the client-side journal of perturbed reports and acknowledged batches, written "
        "before anything is sent; rerunning with it resends exactly what was not "
        "acknowledged, never perturbing again (default: VALUES.csv.report-journal, or "
        "VALUES.csv.COLUMN.report-journal with --column)",
    )
    rep.add_argument(
        "--again",
        action="store_true",
        help="make a new report of a survey column this client has already reported (refused "
        "otherwise): each report spends the local guarantee again, the guarantees compose",
    )
    rep.add_argument(
        "--state",
        metavar="PATH",
        default=None,
        help="this client's report marker, which records the surveys and columns it has "
        "reported (no values; docs/local-collector.md) (default: the client key's path + "
        ".reports.json)",
    )
    rep.set_defaults(func=_report)

    est = sub.add_parser(
        "estimate",
        help="reconstruct the distribution from the collector's totals",
        description="Fetch the running totals from a collector (--server) or read its store "
        "(--store), reconstruct the distribution, write OUT.csv and OUT.json (the "
        "guarantee), and print the guarantee.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    est.add_argument("--config", required=True, metavar="FILE", help="collector config (YAML/JSON)")
    where = est.add_mutually_exclusive_group(required=True)
    where.add_argument("--server", metavar="URL", help="collector base URL")
    where.add_argument("--store", metavar="DB", help="the collector's SQLite store")
    est.add_argument(
        "--method",
        choices=_METHODS,
        default=None,
        help="additive: em (default), em-fourier, bayes, fourier; characteristic vectors: "
        "auto (default), mean, threshold",
    )
    est.add_argument("--bins", type=int, default=50, help="bins over the domain (additive)")
    est.add_argument(
        "--harmonics",
        type=_harmonics,
        default="auto",
        help="Fourier harmonics: a positive integer, or 'auto' (chosen from n and the "
        "published noise law only; docs/local.md)",
    )
    est.add_argument(
        "--delta",
        type=float,
        default=None,
        help="δ of the stated guarantee (default: pure ε if any, else δ = 1e-6)",
    )
    est.add_argument("-o", "--output", required=True, metavar="OUT.csv", help="the estimate")
    est.add_argument(
        "--force",
        action="store_true",
        help="replace an existing OUT.csv and OUT.json (never an input)",
    )
    est.set_defaults(func=_estimate)

    key = sub.add_parser(
        "keygen",
        help="make a client's Ed25519 key",
        description="Write a new private key (mode 0600, never overwriting) and print the "
        "public key to list under 'clients' in the collector's config.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    key.add_argument("key", metavar="KEYFILE", help="where to write the private key")
    key.set_defaults(func=_keygen)


def _serve(args: argparse.Namespace) -> int:
    from ppdp.local.collector import serve

    serve(
        config=args.config,
        host=args.host,
        port=args.port,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        insecure_plain_http=args.insecure_plain_http,
    )
    return 0


def _report(args: argparse.Namespace) -> int:
    from ppdp.exceptions import InsecureRandomnessWarning
    from ppdp.local.collector import (
        CollectorConfig,
        default_state_path,
        read_values,
        report,
        value_column,
    )

    values = read_values(args.values, column=args.column)
    column = value_column(args.values, column=args.column)
    journal = args.journal
    if journal is None:
        middle = "" if args.column is None else f".{args.column}"
        journal = f"{args.values}{middle}.report-journal"
    config = CollectorConfig.from_file(args.config)
    state = args.state or default_state_path(config.require_client().key)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        result = report(
            config=config,
            server=args.server,
            values=values,
            batch_size=args.batch_size,
            random_state=args.seed,
            journal=journal,
            column=column,
            state=state,
            again=args.again,
        )
    if result.again:
        print(
            f"report {result.reports_of_column} of column {column!r} of survey "
            f"{config.survey!r} by this client (--again): the guarantees compose, each report "
            f"spends the local guarantee again (recorded in {state})"
        )
    if result.batches == 0:
        print(
            f"all {result.total} reports of the journal {journal} were already delivered; "
            "nothing sent (a new journal would perturb the values again and spend their "
            "guarantee a second time)"
        )
        return 0
    if result.already:
        print(
            f"resumed the journal {journal}: {result.already} of {result.total} reports had "
            "been delivered before"
        )
    again = f" ({result.duplicates} already counted by the collector)" if result.duplicates else ""
    print(
        f"sent {result.sent} perturbed reports in {result.batches} batch(es){again}; "
        f"delivered {result.delivered} of {result.total}; the collector now holds {result.count}"
    )
    if args.seed is not None:
        sys.stderr.write("ppdp local: warning: --seed makes the noise reproducible; never use "
                         "it for real respondents\n")  # fmt: skip
    return 0


def _estimate(args: argparse.Namespace) -> int:
    from ppdp._io import check_output
    from ppdp.exceptions import ParameterError
    from ppdp.local.collector import estimate

    out = Path(args.output)
    if out.suffix.lower() == ".json":
        raise ParameterError(f"--output ({str(out)!r}) must not end in .json (that is the sidecar)")
    store = [] if args.store is None else [args.store, f"{args.store}-wal", f"{args.store}-shm"]
    check_output(
        out,
        sidecars=[("--output's guarantee file", out.with_suffix(".json"))],
        inputs=[("config", args.config), *(("collector's store", p) for p in store)],
        force=args.force,
    )
    result = estimate(
        config=args.config,
        server=args.server,
        store=args.store,
        method=args.method,
        bins=args.bins,
        harmonics=args.harmonics,
        delta=args.delta,
        output=args.output,
    )
    side = Path(args.output).with_suffix(".json")
    print(
        f"estimated the distribution from {result.count} reports ({result.method}, "
        f"{result.iterations} iteration(s)) into {args.output} (guarantee in {side})"
    )
    from ppdp.cli._common import print_guarantee

    print_guarantee(result.guarantee, verbose=args.verbose, label="guarantee of each report")
    return 0


def _keygen(args: argparse.Namespace) -> int:
    from ppdp.local.collector import generate_client_key

    public = generate_client_key(args.key)
    print(f"wrote the private key to {args.key}; its public key (for 'clients'):")
    print(public)
    return 0
