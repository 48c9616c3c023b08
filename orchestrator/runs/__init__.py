"""Runs: recipes (what to run), inputs (downloaded once, verified), host info and the runner
(one container, one `result.json`, kept by `orchestrator.store`).
"""
