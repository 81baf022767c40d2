"""Callgrind output files: the format parser and the profile model it returns."""
