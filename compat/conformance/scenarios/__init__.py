"""The conformance scenarios, one module per area (each registers its scenarios on import)."""
