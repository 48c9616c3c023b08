"""`python -m orchestrator` entry point."""

from orchestrator.cli import main

raise SystemExit(main())
