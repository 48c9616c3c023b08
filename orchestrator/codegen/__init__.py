"""Codegen: which code a build's compiler made, per kernel, and what a compiler change did
to it. One feature across layers (`tests/test_layers.py` places each module): `model`
(the records and the probe's protocol), `collect` (the probe run in an image), `diff`,
`targets` and `table` (two builds compared), `asm` (kernels' code diffs), `html` (the
report's view) and `workflow` (the `codegen` command). The probe itself runs inside
images: `orchestrator/payloads/codegen_probe.py`.
"""
