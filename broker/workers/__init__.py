"""One broker, several worker processes: every core serves clients (issue 25, bench/SCALING.md).

`num.worker.processes` (default 1; 0: one per core) workers share the listeners (SO_REUSEPORT), and
each partition is owned by one of them (`ownership.py`), which alone opens its log: `log/` stays
single-threaded, with no locks. A request reaching a worker that does not own what it names is
handed over (`routing.py`, `link.py`); Fetch reads come back as file descriptors and leave with
sendfile (`fetch.py`); worker 0 holds the metadata and the coordinators and tells the others when
it changed (`runtime.py`); transactions span workers (`transactions.py`); the supervisor starts,
stops and restarts them (`supervisor.py`).
"""
