"""`icount inline`: align two builds' callgrind profiles and explain the difference.

align.py (names, deltas), binary.py (symbol sizes), dwarf.py (inline sites),
report.py (the report and its renderers), session.py (getting the profiles).
"""
