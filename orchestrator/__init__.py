"""gmxbench: containerized, reproducible GROMACS benchmarks for compiler developers."""

__version__ = "0.1.0"

#: Prefix of every label this project puts on images and containers.
LABEL_PREFIX = "gmxbench."
