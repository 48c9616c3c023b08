"""The store: the results folder and what it holds. `layout` names every path under it,
`records` is what a run's `result.json` says, `runstore` reads and writes run directories,
and `database` is the index over them (SQLite or PostgreSQL, versioned by `migrations/`).
"""
