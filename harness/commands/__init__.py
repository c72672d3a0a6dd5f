"""What each subcommand does once its flags are valid (`harness.cli`), in modules so a command
imports only what it uses: `compute` (run, study, finetune, ablate, figures, annotate: they
plan runs and load models, so torch and transformers), `stored` (report and docs: stored
results only, no torch) and `data` (the default corpora listed or downloaded, no torch)."""
