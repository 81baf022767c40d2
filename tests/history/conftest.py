"""The compare tests' in-process CLI, for the history tests."""

from tests.compare.conftest import cli

__all__ = ["cli"]
