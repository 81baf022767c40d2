"""The session both `icount run` and `icount serve` measure their cells in.

A command plans its cells and says how to measure one; this package does the rest,
the same way for both: the typed options and their defaults (options.py), the steps
both plans take (planning.py: the results file reserved, the file to resume and its
shard), the checks that a results file may be continued (resume.py), and the session
itself (scheduler.py):
the shard's cells not yet measured, --jobs at a time, the results file saved after
every cell with its provenance.
"""
