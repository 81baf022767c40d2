"""`icount serve`: instructions per request of real servers on pinned CPUs.

From what is asked to what is saved:
- `plan`: the session as asked (`ServeRequest`, kept for `--resume`) resolved into a
  `Plan`: targets, backend, load generator, CPU split, per-target cell options;
- `targets`: bundled or named adapters, `--cmd` servers, binary sizes;
- `adapter`: the adapter TOML model, building and answer checks;
- `session`: every cell of the plan, saving after each;
- `runs`: one run of a cell (warm-up, windows, the differential fallback);
- `server`: one server process under a backend: start, ready, verify, stop;
- `http_client`, `loadgen`: the built-in keep-alive client and external load tools;
- `cpus`: the split of CPUs between the server and the load generator.
Counting windows under each backend live with the backends (`icount/backends/`).
"""
