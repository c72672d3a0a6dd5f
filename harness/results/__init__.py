"""Stored results, the only thing figures, the report, MLflow and studies read: the versioned
results store (`store`: one JSON per result, keyed by a hash of its identity, written
atomically) and the JSON helpers around it. Nothing here imports torch."""
