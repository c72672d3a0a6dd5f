"""``harness study``: one set of flags over tasks and seeds, each (task, seed) a plain run
under one MLflow parent (`runner`), run in this process or as Ray tasks (`executors`), then
what holds across seeds and tasks aggregated from the runs' stored summaries into
``study.json``."""
