"""Side-by-side benchmarks of kafka-wire against a peer broker (tansu): python -m bench.run."""
