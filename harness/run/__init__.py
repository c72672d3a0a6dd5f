"""One ``harness run``, end to end: planning (data read, checked and hashed; analyses chosen;
the run key), the pipeline from fine-tuning to figures (`pipeline`), the engine that streams
each source once through every checkpoint into every analysis (`engine`), MLflow tracking
(`tracking`), provenance of the code and model (`provenance`), file locks (`locking`) and the
sampling of maps for the pattern classifier's labels (`annotation`)."""
