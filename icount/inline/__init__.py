"""`icount inline`: align two builds' callgrind profiles and explain the difference.

align.py (names, deltas), binary.py (symbol sizes), dwarf.py (inline sites),
report.py (the report and its renderers), measure.py (getting both profiles and binaries).
"""
