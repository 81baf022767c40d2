"""`icount compare`: match the cells of two results files and gate on regressions.

`thresholds` parses the limits, `model` matches cells and gives verdicts (pure),
`render` turns a comparison into each output format (pure), `interleave` measures
base and new commands alternately for noisy backends.
"""
