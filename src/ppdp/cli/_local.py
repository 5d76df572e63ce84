"""``ppdp local serve | report | estimate | keygen``: thin layers over
:mod:`ppdp.local.collector` and :mod:`ppdp.local.files`."""

from __future__ import annotations

import argparse
import sys

from ppdp.cli import _common as c

_METHODS = ("auto", "mean", "threshold", "em", "em-fourier", "bayes", "fourier")


def _harmonics(text: str) -> int | str:
    """``--harmonics``: :func:`ppdp.local.files.parse_harmonics`, reported by argparse."""
    from ppdp.exceptions import ParameterError
    from ppdp.local.files import parse_harmonics

    try:
        return parse_harmonics(text)
    except ParameterError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_DOCS = "See docs/local-collector.md."
# fmt: off
_CONFIG: c.Flag = ("--config", {"required": True, "metavar": "FILE"}, "the collector's config")
_SERVE: tuple[c.Flag, ...] = (
    _CONFIG,
    ("--host", {"default": "127.0.0.1"}, "address to bind"),
    ("--port", {"type": int, "default": 8750}, "port to bind"),
    ("--tls-cert", {"metavar": "PEM"}, "serve HTTPS with this certificate"),
    ("--tls-key", {"metavar": "PEM"}, "the certificate's private key"),
    ("--insecure-plain-http", {"action": "store_true"},
     "allow plain HTTP on a non-loopback --host (refused otherwise)"),
)
_REPORT: tuple[c.Flag, ...] = (
    ("values", {"metavar": "VALUES.csv"}, "the respondent's values"),
    ("--config", {"required": True, "metavar": "FILE"}, "client config (YAML or JSON)"),
    ("--server", {"required": True, "metavar": "URL"}, "collector base URL"),
    ("--column", {"default": None}, "column of VALUES.csv (default: first)"),
    ("--batch-size", {"type": int, "default": 5000}, "reports per batch"),
    ("--seed", {"type": int, "default": None}, "reproducible noise (NOT for real respondents)"),
    ("--journal", {"metavar": "PATH", "default": None},
     "journal of the perturbed reports: a rerun resends what was not acknowledged "
     "(default: VALUES.csv[.COLUMN].report-journal)"),
    ("--again", {"action": "store_true"},
     "report a column this client has already reported (spends the guarantee again)"),
    ("--state", {"metavar": "PATH", "default": None},
     "this client's report marker (default: the client key's path + .reports.json)"),
)
_ESTIMATE: tuple[c.Flag, ...] = (
    ("--method", {"choices": _METHODS, "default": None},
     "additive: em (default), em-fourier, bayes, fourier; characteristic vectors: auto "
     "(default), mean, threshold"),
    ("--bins", {"type": int, "default": None},
     "equal bins over the domain, additive randomizers only (default 50); a "
     "characteristic-vector randomizer's regions are its bins"),
    ("--harmonics", {"type": _harmonics, "default": None},
     "Fourier harmonics of --method fourier or em-fourier only: a positive integer, or "
     "'auto' (default; from n and the noise law only)"),
    ("--delta", {"type": float, "default": None},
     "δ of the stated guarantee (default: pure ε if any, else δ = 1e-6)"),
    ("-o --output", {"required": True, "metavar": "OUT.csv"}, "the estimate"),
    ("--force", {"action": "store_true"}, "replace an existing OUT.csv and OUT.json"),
)
_TEXTS = {
    "local": ("local perturbation: collector service, respondent client, estimates",
              "Respondents perturb their own values; the collector keeps only running totals "
              f"and counts; estimates state the randomizer's local-DP guarantee. {_DOCS}"),
    "serve": ("run the collector (FastAPI + uvicorn)",
              "Accept signed batches of reports and keep only running totals in the config's "
              f"SQLite store. {_DOCS}"),
    "report": ("perturb values on this machine and send them",
               "Perturb each value of VALUES.csv once here with the survey's randomizer and post "
               "the reports in signed batches, journaled first: rerunning the same command after "
               f"a failure sends exactly the rest. {_DOCS}"),
    "estimate": ("reconstruct the distribution from the collector's totals",
                 "Reconstruct the distribution from a collector's totals (--server or --store), "
                 "write OUT.csv and OUT.json (the guarantee), and print the guarantee."),
    "keygen": ("make a client's Ed25519 key",
               "Write a new private key (mode 0600, never overwriting) and print the public key "
               "to list under 'clients' in the collector's config."),
}
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``local`` and its actions to the ``ppdp`` parser."""
    sub = c.group(subparsers, "local", *_TEXTS["local"], "local_command")
    c.command(sub, "serve", *_TEXTS["serve"], *_SERVE, func=_serve)
    c.command(sub, "report", *_TEXTS["report"], *_REPORT, func=_report)
    est = c.command(sub, "estimate", *_TEXTS["estimate"], _CONFIG, func=_estimate)
    where = est.add_mutually_exclusive_group(required=True)
    c.add_flags(where, ("--server", {"metavar": "URL"}, "collector base URL"))
    c.add_flags(where, ("--store", {"metavar": "DB"}, "the collector's SQLite store"))
    c.add_flags(est, *_ESTIMATE)
    key: c.Flag = ("key", {"metavar": "KEYFILE"}, "where to write the private key")
    c.command(sub, "keygen", *_TEXTS["keygen"], key, func=_keygen)


def _serve(args: argparse.Namespace) -> int:
    from ppdp.local.collector import serve

    serve(**c.pick(args, "config host port tls_cert tls_key insecure_plain_http"))
    return 0


def _report(args: argparse.Namespace) -> int:
    from ppdp.local.files import report_lines, report_values_file

    with c.seeded_quietly():
        run = report_values_file(
            args.values,
            random_state=args.seed,
            **c.pick(args, "config server column batch_size journal state again"),
        )
    print(*report_lines(run), sep="\n")
    if args.seed is not None and run.result.batches:
        sys.stderr.write("ppdp local: warning: --seed makes the noise reproducible; never use "
                         "it for real respondents\n")  # fmt: skip
    return 0


def _estimate(args: argparse.Namespace) -> int:
    from ppdp.local.files import estimate_file

    names = "config output server store method bins harmonics delta force"
    result, side = estimate_file(**c.pick(args, names))
    print(
        f"estimated the distribution from {result.count} reports ({result.method}, "
        f"{result.iterations} iteration(s)) into {args.output} (guarantee in {side})"
    )
    c.print_guarantee(result.guarantee, verbose=args.verbose, label="guarantee of each report")
    return 0


def _keygen(args: argparse.Namespace) -> int:
    from ppdp.local.collector import generate_client_key

    public = generate_client_key(args.key)
    print(f"wrote the private key to {args.key}; its public key (for 'clients'):")
    print(public)
    return 0
