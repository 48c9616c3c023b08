"""Verdicts as numbers: which way a metric moved, by how much, how sure, and under which rules.

Nothing here speaks to people: the words, emoji and tables are `orchestrator.report`'s,
made on demand from these numbers (pyperf's `CompareResult` style).
"""
