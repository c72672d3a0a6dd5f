"""Presenting stored results, never recomputing them: figures redrawn from a run's
summary (`redraw`), the static HTML report (`report`, with its page script and style), the
cross-task figures and tables of a study (`study_figures`), the README and docs tables
rebuilt from stored runs (`doc_tables`), and runs and studies as tidy pandas tables for
notebooks and ``harness export`` (`frames`)."""
