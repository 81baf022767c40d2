"""A history of results files keyed by commit, and what it says about each cell's noise.

The layout (docs/ci.md), a plain folder that a CI cache, an artifacts store or a branch
can hold:

    DIR/0001-3f2a9c1e....json               results of the first commit added
    DIR/0001-3f2a9c1e....provenance.json    its provenance, when it had one
    DIR/0002-8b41d07a....json               the next commit, and so on

The number orders the commits (the order they were added: commit hashes have none) and
the name after it is the commit. `store` adds and lists entries; `noise` derives, per
cell, the change its own history calls noise; `render` prints a history.
"""
