"""``ppdp demo``: private statistics of the shipped Adult data through a budget ledger."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="private statistics and tables of the shipped Adult data, end to end",
        description="Release private statistics and private tables (DP-PCA, DP-LDA synthetic "
        "data, and the per-record baselines) of the shipped Adult data (45,222 rows) through a "
        "fresh budget ledger; print each release with its guarantee and a utility table.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--output-dir", type=Path, default=Path("ppdp-demo"), help="folder for the run's ledger"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="reproducible noise for experiments (not for real releases)",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import warnings

    from ppdp.demo import run_demo
    from ppdp.exceptions import InsecureRandomnessWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        report = run_demo(output_dir=args.output_dir, random_state=args.seed)

    print(f"ppdp demo: Adult, {report.n_rows:,} rows (UCI Adult, Jiang et al. preprocessing)")
    print(f"ledger: {report.ledger_path}  (total budget {report.total})")
    if report.seeded:
        print(
            "note: --seed was given, so the noise is reproducible and NOT fit for a real "
            "release; the demo's own fresh ledger accepts it explicitly (allow_seeded=True, "
            "recorded with each spend)"
        )
    for release in report.releases:
        print()
        print(f"[ledger entry {release.ledger_index}] {release.title}")
        print(f"  guarantee: {release.guarantee}")
        width = max(len(name) for name, _, _ in release.rows)
        print(f"  {'':{width}}  {'private':>12}  {'exact':>12}")
        for name, private, exact in release.rows:
            print(f"  {name:{width}}  {private:12.4f}  {exact:12.4f}")
    if report.tables:
        _print_tables(report)
    if report.models:
        _print_models(report)
    print()
    print(f"budget remaining: {report.remaining}")
    if report.refused:
        print(
            f"a request for more than remains was refused before touching the data: "
            f"{report.refused}"
        )
    print(f"check the ledger: ppdp ledger verify {report.ledger_path}")
    print(f"see the spends:   ppdp budget show {report.ledger_path}")
    return 0


def _fmt(value: float | None, spec: str) -> str:
    width = int(spec.split(".")[0])
    return f"{'—':>{width}}" if value is None else format(value, spec)


def _print_tables(report) -> None:  # type: ignore[no-untyped-def]
    print()
    print("Private tables of Adult (released from a random 2/3, utility measured on the other 1/3)")
    for table in report.tables:
        indices = ", ".join(map(str, table.ledger_indices))
        print(f"  [ledger {indices}] {table.method}: {table.n_rows:,} rows -> {table.path}")
        print(f"    guarantee: {table.guarantee}")
    print()
    print(f"  {'release (ε = 1 each)':30}  {'MSE':>8}  {'accuracy':>8}  {'AUC':>6}")
    rows = [(t.method, t.utility) for t in report.tables]
    rows += list(report.reference.items())
    for name, u in rows:
        print(
            f"  {name:30}  {_fmt(u.get('mse'), '8.4f')}  {_fmt(u.get('accuracy'), '8.3f')}  "
            f"{_fmt(u.get('auc'), '6.3f')}"
        )
    print("  (MSE on the [0, 1]-encoded table, row-aligned releases only; accuracy and AUC of an")
    print("   LDA classifier trained on the release and tested on the held-out original rows)")


def _print_models(report) -> None:  # type: ignore[no-untyped-def]
    print()
    print("Private models of Adult (trained on the same 2/3, tested on the other 1/3)")
    for model in report.models:
        indices = ", ".join(map(str, model.ledger_indices))
        where = f" -> {model.path}" if model.path is not None else ""
        print(f"  [ledger {indices}] {model.method}{where}")
        print(f"    guarantee: {model.guarantee}")
    print()
    print(f"  {'model':38}  {'accuracy':>8}  {'AUC':>6}")
    rows = []
    for m in report.models:
        rows.append((m.method + f" (ε = {m.guarantee.epsilon:g})", m.utility))
        rows += [(f"  {use}", u) for use, u in m.other_uses.items()]
    rows += list(report.model_reference.items())
    for name, u in rows:
        print(f"  {name:38}  {_fmt(u.get('accuracy'), '8.3f')}  {_fmt(u.get('auc'), '6.3f')}")
    print("  (LDA-DP: the LDA rule built from the released noisy class means and scatter alone;")
    print("   below it, a classifier trained on the released noisy projections of the rows:")
    print("   per-row Laplace noise of scale 2/ε₃ on values of size at most 1 leaves its")
    print("   threshold near the majority class; both rank held-out rows by the released")
    print("   direction, hence the same AUC)")
