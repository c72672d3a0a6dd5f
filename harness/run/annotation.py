"""Sampling real attention maps of a checkpoint into a labelling pool (``harness annotate``).

Draws (dev example, layer, head) triples at random from a model on a GLUE task through the
forward API, the examples spread evenly over input-length bands (`classifier.data.LENGTH_BANDS`, as far as
the task has inputs of each length), keeps each map cropped to its real tokens with where
its second segment starts, and writes the pool with
`classifier.annotate.write_pool`; the labels are recorded with ``--labels`` (see
``docs/classifier.md``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from classifier.annotate import label_interactively, parse_label_lines, record, write_pool
from classifier.data import MapSource, draw_evenly, length_band, read_sources
from harness.config import AnnotationConfig, RunConfig
from harness.inputs.encoding import encode_examples, token_lengths
from harness.model.finetune import finetune
from harness.model.forward import Capture, forward
from harness.model.loading import load_finetuned, load_sequence_classifier, load_tokenizer, prepare
from harness.results.checkpoints import FINETUNED
from harness.run.plan import Downloads, located, plan_run, run_device
from tasks.loading import load_examples, resolved

BATCH = 16


def heads_to_draw(annotation: AnnotationConfig, layers: int, heads: int) -> list[tuple[int, int]]:
    """0-indexed (layer, head) pairs to draw from: ``--heads``, else every head of ``--layers``, else all."""
    if annotation.heads:
        return [(int(layer) - 1, int(head) - 1) for layer, head in (pair.split(":") for pair in annotation.heads)]
    chosen = annotation.layers or range(1, layers + 1)
    return [(layer - 1, head) for layer in chosen for head in range(heads)]


def spread_over_lengths(lengths: list[int], count: int, rng: np.random.Generator) -> list[int]:
    """Up to ``count`` example indices drawn at random, in turn from each length band that has
    examples left, so short and long inputs are equally represented where the task allows."""
    bands: dict[int, list[int]] = {}
    for index, length in enumerate(lengths):
        bands.setdefault(length_band(length), []).append(index)
    return draw_evenly([members for _, members in sorted(bands.items())], count, rng)


def sample_pool(config: RunConfig, annotation: AnnotationConfig) -> list[Path]:
    """Sample ``annotation.count`` maps of the requested checkpoint into the pool; returns the sheets."""
    task = resolved(located(config.task.definition, Downloads(allowed=False)))
    tokenizer = load_tokenizer(config.task.model)
    finetune_key = "-"
    if annotation.checkpoint == FINETUNED:
        plan = plan_run(config, Downloads(allowed=False))  # only the task's data and the fine-tune are used
        examples = plan.data.dev[task.main_eval_split]
        tuned = finetune(plan.config, plan.data)
        model, finetune_key = load_finetuned(tuned.checkpoint_dir), tuned.key
    else:
        # only the dev split is read: the pre-trained maps of a task without training data (QNLI here) can be drawn
        examples = load_examples(task, task.main_eval_split, config.task.data_dir)
        model = load_sequence_classifier(config.task.model, task, head_seed=config.finetune.seed)
    model = prepare(model, run_device(config), model.dtype)
    heads = heads_to_draw(annotation, model.config.num_hidden_layers, model.config.num_attention_heads)
    rng = np.random.default_rng(annotation.sample_seed)
    lengths = token_lengths(tokenizer, examples, config.task.max_length, task.is_pair)
    chosen = spread_over_lengths(lengths, annotation.count, rng)
    sources, maps, separators = [], {}, {}
    for start in range(0, len(chosen), BATCH):
        indices = chosen[start : start + BATCH]
        encoded = encode_examples(tokenizer, [examples[i] for i in indices], config.task.max_length, task.is_pair)
        attentions = forward(model, encoded, capture=Capture(attention=True)).captured_attentions.float().cpu()
        for row, example_index in enumerate(indices):
            layer, head = heads[int(rng.integers(len(heads)))]
            length = int(encoded.lengths[row])
            map_id = f"{annotation.prefix}{start + row:04d}"
            sources.append(
                MapSource(
                    map_id,
                    config.task.model,
                    annotation.checkpoint,
                    finetune_key,
                    task.name,
                    task.main_eval_split,
                    example_index,
                    examples[example_index].guid,
                    layer,
                    head,
                    length,
                    int(encoded.second_segments[row]),
                )
            )
            maps[map_id] = attentions[row, layer, head, :length, :length].numpy()
            ids = encoded.input_ids[row, :length]
            separators[map_id] = (ids == tokenizer.sep_token_id).nonzero(as_tuple=True)[0].tolist()
    return write_pool(annotation.out, sources, maps, separators)


def annotate(config: RunConfig, annotation: AnnotationConfig) -> str:
    """Sample a pool (and label it at the terminal with ``--interactive``), or record ``--labels``; what was done."""
    if annotation.labels:
        labels = parse_label_lines(annotation.labels.read_text().splitlines(), str(annotation.labels))
        return f"recorded {record(annotation.out, labels)} labelled maps from {annotation.out}"
    sheets = sample_pool(config, annotation)
    done = (
        f"wrote {annotation.count} candidate maps of the {annotation.checkpoint} checkpoint and "
        f"{len(sheets)} sheets to {annotation.out}"
    )
    if annotation.interactive:
        sources: list[MapSource] = read_sources(annotation.out / "candidates.tsv")
        done += f"; recorded {record(annotation.out, label_interactively(sheets, sources))} labelled maps"
    return done
