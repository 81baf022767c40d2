"""How every run of a cell is measured: the options serve/runs.py takes, one frozen
value per cell (a session's plan builds it from its request)."""

from __future__ import annotations

from dataclasses import dataclass, field

from icount.backends import ServerBackend
from icount.cpus import CpuSplit
from icount.serve.warmup import AutoLimits
from icount.session import options
from icount.session.options import Arrival, Warmup


@dataclass(frozen=True)
class CellOptions:
    """How every run of a cell is measured."""

    backend: ServerBackend
    cpus: CpuSplit
    runs: int = options.RUNS
    reps: int = options.REPS
    requests: int = 1000
    warmup: Warmup = options.AUTO
    concurrency: int = options.CONCURRENCY
    load_kind: str = "builtin"
    connection: str = "auto"  # http_client.CONNECTIONS: --connection
    arrival: Arrival = Arrival.CLOSED  # serve/arrival.py; a session plan gives its own
    max_spread: float = options.MAX_SPREAD
    auto_limits: AutoLimits = field(default_factory=AutoLimits)
    idle_seconds: float = options.IDLE_SECONDS  # an idle window after the reps; 0: none
    # windows added for a collected runtime's interval: a run's caps
    max_windows: int = options.MAX_WINDOWS  # --reps included
    max_extra_seconds: float = options.MAX_EXTRA_SECONDS
