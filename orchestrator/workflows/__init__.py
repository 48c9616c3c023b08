"""Workflows: the pipelines the commands run (bench, rebuild, share); they return values."""
