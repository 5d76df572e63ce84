"""``python -m ppdp`` runs the command line."""

from ppdp.cli import main

raise SystemExit(main())
