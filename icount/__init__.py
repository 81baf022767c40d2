"""icount: user-space instruction counts and binary-size breakdowns."""

__version__ = "0.1.0"
