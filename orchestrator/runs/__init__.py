"""Runs: recipes (what to run), inputs (downloaded once, verified), host info, the runner
(one container, one `result.json`) and the run store (the only module that knows the
results layout).
"""
