"""Parsers: md.log, rocprof CSVs and the kernel categories; files in, pydantic models out.

They know formats, not where files live: the run store hands them the paths.
"""
