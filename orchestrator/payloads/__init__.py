"""Payloads: what runs inside containers, not on the host (microbenchmark programs, Kernel Tuner's
driver and its pinned wheels); the images copy them in, and nothing here imports the host's
code.
"""
