"""The broker freezes its start-up heap (cli/commands/serve.py: freeze_startup_heap), so that a
full garbage collection, which stops the event loop, walks only objects made after the start."""

from __future__ import annotations

import gc

from cli.commands.serve import freeze_startup_heap


def test_objects_alive_at_start_are_left_out_of_collections():
    started_with = [[] for _ in range(1000)]  # tracked containers alive when the broker has started
    frozen_before = gc.get_freeze_count()
    try:
        freeze_startup_heap()
        assert gc.get_freeze_count() >= frozen_before + len(started_with)
        made_later = [[] for _ in range(10)]
        watched = {id(o) for o in gc.get_objects()}
        assert not any(id(o) in watched for o in started_with)
        assert all(id(o) in watched for o in made_later)
        # A cycle made after the start is still collected.
        cycle = []
        cycle.append(cycle)
        cycle_id = id(cycle)
        del cycle
        gc.collect()
        assert cycle_id not in {id(o) for o in gc.get_objects()}
    finally:
        gc.unfreeze()
