"""One broker, several worker processes: every core serves clients (issue 25, bench/SCALING.md).

`num.worker.processes` workers (default 0: one per core the process may run on; 1: one process)
share the listeners (SO_REUSEPORT), and each partition is owned by one of them (`ownership.py`),
which alone opens its log: `log/` stays single-threaded, with no locks. A request reaching a
worker that does not own what it names is handed over (`routing.py`, `link.py`); Fetch reads come
back as file descriptors and leave with sendfile (`fetch.py`); worker 0 holds the metadata and the
coordinators and tells the others when it changed (`runtime.py`); transactions span workers
(`transactions.py`); the supervisor starts, stops and restarts them (`supervisor.py`).
"""
