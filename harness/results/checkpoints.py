"""The names of the checkpoints a run compares, as its stored results name them, and the
pairs it compares: what changed going from the first of a pair to the second."""

from __future__ import annotations

PRETRAINED = "pretrained"
FINETUNED = "finetuned"
# Kovaleva et al.'s Table 1 baselines (--baselines), trained with the fine-tuning recipe: the
# classifier head alone on the frozen pre-trained encoder, and the whole model from random weights.
FROZEN_ENCODER = "frozen-encoder"
RANDOM_INIT = "random-init"
BASELINES = (FROZEN_ENCODER, RANDOM_INIT)
PAIRS = [(PRETRAINED, FINETUNED)]
BASELINE_PAIRS = [(baseline, FINETUNED) for baseline in BASELINES]
MAIN_PAIR = f"{PRETRAINED}->{FINETUNED}"  # its name in a summary's "per_pair" results
