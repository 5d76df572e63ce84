"""Re-export of :mod:`ppdp._params` (the shared constraint tables, issue 18) for the publishers."""

from ppdp._params import Rule, check_table, epsilon_rules, table_fields

__all__ = ["Rule", "check_table", "epsilon_rules", "table_fields"]
