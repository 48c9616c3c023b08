"""gmxbench: containerized, reproducible GROMACS benchmarks for compiler developers.

The layers, each importing only those before it:
core → parsers → platforms → images → runs → results → workflows → cli.
"""

__version__ = "0.1.0"
