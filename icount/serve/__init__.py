"""`icount serve`: instructions per request of real servers on pinned CPUs.

- `adapter`: the targets (adapters/<name>/adapter.toml), building and answer checks;
- `http_client`, `loadgen`: the built-in keep-alive client and external load tools;
- `cpus`: the split of CPUs between the server and the load generator;
- `window_callgrind`, `window_perf`: counting windows under each backend;
- `method`: one cell (fresh server processes, verification, warm-up, reps);
- `session`: all cells, saving after each, `--resume`.
"""
