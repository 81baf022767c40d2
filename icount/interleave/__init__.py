"""Interleaved A/B measurement (`icount interleave`; `icount compare --interleave` is
routed to it): two builds measured alternately in one session, A B A B ..., a fresh
process each run, with a third, unchanged build in the same rounds where one is given.

`turns.py` the rounds and their order, `commands.py` an interleave of commands,
`servers.py` one of server builds. What they measure is judged by icount/compare/
(model.compare_pairs, control.judged), which imports nothing of this package.
"""
