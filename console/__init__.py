"""The web console (`console.port`): overview, topics, a message browser, consumer groups and the
Schema Registry, served from the broker process.

`kafka-wire serve` imports this package only when `console.port` is set, so a broker without the
console starts as before. The pieces: `server` (a small asyncio HTTP server in the broker's event
loop, as broker/metrics_endpoint.py serves metrics), `api` (the JSON API under /api), `kafka_calls`
(the broker's own Kafka API handlers, called for the logged-in user), `registry_views` (the Schema
Registry's pages, read from the registry this broker serves), `sessions` (logins checked
against the broker's SCRAM credentials), `sampler` (rates and lag over time), `static/` (the page:
plain HTML, CSS and JavaScript, charts drawn as SVG by our own code).
"""

from __future__ import annotations


async def start_console(broker, host: str, port: int):
    """Serve the console of this broker on host:port (port 0 picks a free one); returns the
    running ConsoleServer (its `address`, and `stop()`)."""
    from .server import ConsoleServer

    server = ConsoleServer(broker, read_only=bool(broker.config["console.read.only"]),
                           sample_interval_ms=int(broker.config["console.sample.interval.ms"]))
    await server.start(host, port)
    return server
