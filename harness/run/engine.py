"""Streaming the sources through the checkpoints into the analyses, with the results store.

For each analysis, `look_up` finds its results in the store (one per checkpoint, or one
joint result) and keeps only the missing work. `analyse` then streams each source that
has missing work once: every batch runs through the checkpoints that any pending analysis
still needs (`harness.model.forward`), with the captures those analyses asked for, and is folded
into all of them; their results are stored as soon as the source is done. Finally every
analysis gets one summary entry (the same schema for all) from stored results only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from harness.analyses.base import (
    ANALYSES,
    ATTENTION,
    GATE_GRADIENTS,
    GRADIENTS,
    HIDDEN_STATES,
    INTERVENES,
    VALUE_NORMS,
    Analysis,
    AnalysisContext,
    Units,
    VariantScorer,
)
from harness.inputs.batches import AttentionBatch, EncodedBatch, Gradients
from harness.inputs.sources import SOURCES, Source, SourceContext
from harness.inputs.tagging import batch_tags
from harness.model.forward import (
    MASKED_LM_LOSS,
    TASK_LOSS,
    TOKEN_TASK_LOSS,
    UNTRAINED_TASK_LOSS,
    Capture,
    ForwardOutput,
    Interventions,
    forward,
    forward_variants,
    variant_count,
)
from harness.model.loading import Checkpoint, checkpoint_device
from harness.results.entries import AnyEntry
from harness.results.store import (
    CheckpointIdentity,
    ResultIdentity,
    ResultStore,
    Settings,
    SourceIdentity,
    SourceNotes,
    plain,
    read_sealed,
    write_sealed,
)
from harness.views.base import pair_name
from tasks.errors import InputError
from tasks.progress import progress_bar

JOINT = "joint"
MASK_PROBABILITY = 0.15
NO_LABELS = "inputs have no task labels and the checkpoint has no masked-LM head"


@dataclass
class AnalysisWork:
    """One analysis's work in a run: its result identities, what is stored, what is missing.

    ``identities`` maps a checkpoint name (or `JOINT`) to the identity of its result.
    """

    analysis: type[Analysis]
    identities: dict[str, ResultIdentity]
    stored: dict[str, Any] = field(default_factory=dict)  # each stored result, of its analysis's declared shape

    @property
    def missing(self) -> tuple[str, ...]:
        """Checkpoint names whose results must be computed (all of them for a joint result)."""
        return tuple(name for name in self.identities if name not in self.stored)

    def to_measure(self, checkpoints: list[Checkpoint]) -> tuple[str, ...]:
        """The checkpoints to run the analysis on: none when all is stored, every one for a joint result."""
        if not self.missing:
            return ()
        return tuple(c.name for c in checkpoints) if self.analysis.joint else self.missing


def look_up(
    analysis: type[Analysis],
    checkpoints: list[Checkpoint],
    inputs: SourceIdentity,
    settings: Settings,
    store: ResultStore,
) -> AnalysisWork:
    """Look the results of ``analysis`` up in the store; what is absent (or damaged) is missing."""

    def identity_of(checkpoint: Checkpoint) -> CheckpointIdentity:
        return checkpoint.identity if analysis.uses_head else checkpoint.encoder_identity

    if analysis.joint:
        identities = {
            JOINT: ResultIdentity(
                analysis.name, analysis.version, tuple(identity_of(c) for c in checkpoints), inputs, settings
            )
        }
    else:
        identities = {
            c.name: ResultIdentity(analysis.name, analysis.version, (identity_of(c),), inputs, settings)
            for c in checkpoints
        }
    found = {name: store.load(identity) for name, identity in identities.items()}
    return AnalysisWork(analysis, identities, {name: result for name, result in found.items() if result is not None})


class GradientTargets:
    """Which loss each checkpoint's attention gradients come from on a batch, and its targets.

    Clark et al. used the masked-LM loss: a checkpoint gets it when it stores a complete
    masked-LM head, with 15% of each input's ordinary tokens replaced by [MASK] (seeded, at
    least one per input). Otherwise the task loss on the inputs' labels; inputs without
    labels (``--corpus`` text) then give no gradients, and the reason is recorded.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, seed: int) -> None:
        self.tokenizer = tokenizer
        self.generator = torch.Generator().manual_seed(seed)

    def word_tags(self, encoded: EncodedBatch) -> tuple[torch.Tensor, str]:
        """A tagging batch's (batch, seq) targets: each word's tag at its first sub-token, -100
        elsewhere (as fine-tuning labelled them: `harness.inputs.tagging`), and their loss."""
        return batch_tags(self.tokenizer, encoded), TOKEN_TASK_LOSS

    def masked(self, encoded: EncodedBatch) -> tuple[EncodedBatch, torch.Tensor]:
        """The batch with ordinary tokens masked, and the (batch, seq) targets (-100 where not masked)."""
        ids = encoded.input_ids
        special = torch.isin(ids, torch.tensor(self.tokenizer.all_special_ids))  # whatever the model calls them
        eligible = ~special & encoded.attention_mask.bool()
        draws = torch.rand(ids.shape, generator=self.generator)
        masked = (draws < MASK_PROBABILITY) & eligible
        fallback = torch.where(eligible, draws, -1.0).argmax(dim=1)  # one token for inputs that drew none
        masked[torch.arange(len(masked)), fallback] |= ~masked.any(dim=1) & eligible.any(dim=1)
        masked_ids = ids.masked_fill(masked, self.tokenizer.mask_token_id)
        return (replace(encoded, input_ids=masked_ids), ids.masked_fill(~masked, -100))


def run_checkpoints(
    encoded: EncodedBatch, checkpoints: list[Checkpoint], needs: dict[str, frozenset[str]], targets: GradientTargets
) -> AttentionBatch:
    """Every needed checkpoint on one batch, with the captures its analyses asked for."""
    batch = AttentionBatch(encoded, {})
    labels = [getattr(item, "label", None) for item in encoded.items]
    for checkpoint in checkpoints:
        wanted = needs.get(checkpoint.name, frozenset())
        if not wanted:
            continue
        differentiated = wanted & {GRADIENTS, GATE_GRADIENTS}
        task_gradients = bool(differentiated) and checkpoint.masked_lm is None and None not in labels
        norms, hidden = VALUE_NORMS in wanted, HIDDEN_STATES in wanted
        attention = bool(wanted & {ATTENTION, GRADIENTS})
        if task_gradients:
            capture = Capture(
                attention=attention,
                attention_grad=GRADIENTS in wanted,
                gate_grad=GATE_GRADIENTS in wanted,
                value_norms=norms,
                hidden_states=hidden,
            )
            tagging = bool(encoded.items[0].words)
            task_targets, kind = targets.word_tags(encoded) if tagging else (torch.tensor(labels), TASK_LOSS)
            out = forward(checkpoint.model, encoded, capture=capture, targets=task_targets, loss_kind=kind)
            loss = kind if checkpoint.head_trained else UNTRAINED_TASK_LOSS
            batch.gradients[checkpoint.name] = gradients_of(loss, out)
        else:
            capture = Capture(attention=attention, value_norms=norms, hidden_states=hidden)
            out = forward(checkpoint.model, encoded, capture=capture)
        if out.attentions is not None:
            batch.attentions[checkpoint.name] = out.attentions
        if out.value_norms is not None:
            batch.value_norms[checkpoint.name] = out.value_norms
        if out.hidden_states is not None:
            batch.hidden_states[checkpoint.name] = out.hidden_states
        batch.logits[checkpoint.name] = out.logits
        if differentiated and checkpoint.masked_lm is not None:
            masked, mlm_targets = targets.masked(encoded)
            capture = Capture(attention_grad=GRADIENTS in wanted, gate_grad=GATE_GRADIENTS in wanted)
            mlm = forward(checkpoint.masked_lm, masked, capture=capture, targets=mlm_targets, loss_kind=MASKED_LM_LOSS)
            batch.gradients[checkpoint.name] = gradients_of(MASKED_LM_LOSS, mlm)
        elif differentiated and not task_gradients:
            batch.skipped_gradients[checkpoint.name] = NO_LABELS
    return batch


def gradients_of(loss: str, out: ForwardOutput) -> Gradients:
    """The gradients a forward pass captured, attention gradients as magnitudes."""
    magnitudes = out.attention_grads.abs_() if out.attention_grads is not None else None
    return Gradients(loss, magnitudes, out.gate_grads)


def variant_scorer(source: Source, checkpoints: list[Checkpoint]) -> VariantScorer:
    """`AnalysisContext.score_variants` for one source: each call streams the source again through one
    checkpoint under V variants, many variants per forward pass (`harness.model.forward.forward_variants`);
    with a ``donor``, its attention on each batch is captured first, in one pass, and given to the
    variants' given heads."""
    models = {checkpoint.name: checkpoint.model for checkpoint in checkpoints}

    def score(
        checkpoint: str, variants: Interventions, donor: str | None = None, units: Units | None = None
    ) -> torch.Tensor:
        stream = source.stream()
        count = variant_count(variants)
        parts = []
        with progress_bar(
            total=stream.num_items * count, desc=f"{source.name}: {checkpoint}, {count} variants", unit="ex"
        ) as progress:
            for encoded in stream.batches:
                if donor is not None:
                    maps = forward(models[donor], encoded, capture=Capture(attention=True)).attentions
                    variants = replace(variants, given_attention=maps)
                logits = forward_variants(models[checkpoint], encoded, variants)
                parts.append((logits if units is None else units(encoded, logits)).cpu())
                progress.update(len(encoded.items) * count)
        return torch.cat(parts, dim=1)

    return score


def stream_source(
    source: Source,
    works: list[AnalysisWork],
    checkpoints: list[Checkpoint],
    shared: AnalysisContext,
    store: ResultStore,
    what: str = "",
) -> SourceNotes:
    """Stream one source through the checkpoints into the analyses with missing results, each
    given ``shared`` with its own checkpoints (and a way to score variants if it intervenes);
    store those results; return the source's notes. ``what`` ends the progress bar's label (the
    steps of a trajectory)."""
    stream = source.stream()
    instances = []
    needs: dict[str, frozenset[str]] = {}
    for item in works:
        measured = item.to_measure(checkpoints)
        if not measured:
            continue
        scorer = variant_scorer(source, checkpoints) if INTERVENES in item.analysis.needs else None
        instances.append((item, item.analysis(replace(shared, checkpoints=measured, score_variants=scorer))))
        for name in measured:
            needs[name] = needs.get(name, frozenset()) | item.analysis.needs
    targets = GradientTargets(source.context.tokenizer, shared.settings.analysis_seed)
    names = [item.analysis.name for item, _ in instances]
    label = (
        source.name if names == [source.name] else f"{source.name}: {', '.join(names)}"
    ) + what  # not "coreference: coreference"
    with progress_bar(total=stream.num_items, desc=label, unit="ex") as progress:
        for encoded in stream.batches:
            batch = run_checkpoints(encoded, checkpoints, needs, targets)
            for _, instance in instances:
                instance.update(batch)
            progress.update(len(encoded.items))
    for item, instance in instances:
        result = plain(instance.result())
        for name in item.missing:
            stored = result if item.analysis.joint else result[name]
            store.save(item.identities[name], stored)
            item.stored[name] = stored
    return stream.notes


def summary_entry(
    item: AnalysisWork,
    inputs: SourceIdentity,
    notes: SourceNotes,
    settings: Settings,
    checkpoints: list[Checkpoint],
    pairs: list[tuple[str, str]],
) -> AnyEntry:
    """The analysis's entry in summary.json, from stored results only; one schema for all."""
    analysis = item.analysis
    if analysis.joint:
        result = item.stored[JOINT]
    else:
        per_checkpoint = {c.name: item.stored[c.name] for c in checkpoints}
        result = {"per_checkpoint": per_checkpoint, "per_pair": analysis.compare(per_checkpoint, pairs)}
    return {
        "analysis": analysis.name,
        "version": analysis.version,
        "joint": analysis.joint,
        "checkpoints": [c.name for c in checkpoints],
        "pairs": [list(p) for p in pairs],
        "pair_names": [pair_name(p) for p in pairs],
        "keys": {name: identity.key for name, identity in item.identities.items()},
        "source": {"identity": inputs, "notes": notes},
        "settings": settings,
        "result": result,
        "reference": analysis.reference,
    }


def renamed_entry(entry: AnyEntry, names: dict[str, str], pairs: list[tuple[str, str]]) -> AnyEntry:
    """A summary entry of checkpoints measured together, as if only ``names`` had been (``{measured
    name: name in the new entry}``) and only ``pairs`` (in the new names) compared: a checkpoint
    part-way through fine-tuning said as "finetuned" beside the pre-trained model, so every view
    reads it as it reads a run. A per-checkpoint analysis compares the pairs anew (`Analysis.compare`);
    a joint one keeps the pairs it measured under their new names."""
    analysis = ANALYSES[entry["analysis"]]
    back = {new: old for old, new in names.items()}
    if analysis.joint:
        measured = entry["result"]["per_pair"]
        result = {
            **entry["result"],
            "per_pair": {pair_name(pair): measured[pair_name((back[pair[0]], back[pair[1]]))] for pair in pairs},
        }
    else:
        per_checkpoint = {new: entry["result"]["per_checkpoint"][old] for old, new in names.items()}
        result = {"per_checkpoint": per_checkpoint, "per_pair": analysis.compare(per_checkpoint, pairs)}
    return {
        **entry,
        "checkpoints": list(names.values()),
        "pairs": [list(pair) for pair in pairs],
        "pair_names": [pair_name(pair) for pair in pairs],
        "result": result,
    }


def shared_context(
    checkpoints: list[Checkpoint], pairs: list[tuple[str, str]], source_context: SourceContext
) -> AnalysisContext:
    """What every analysis instance of a run shares (each then gets its own checkpoints)."""
    model_config = checkpoints[0].model.config
    return AnalysisContext(
        checkpoints=(),
        num_layers=model_config.num_hidden_layers,
        num_heads=model_config.num_attention_heads,
        settings=source_context.settings,
        tokenizer=source_context.tokenizer,
        pairs=tuple(pairs),
        device=checkpoint_device(checkpoints),
        task=source_context.task,
        max_length=source_context.max_length,
        trained=frozenset(c.name for c in checkpoints if c.head_trained),
    )


def sources_to_stream(
    classes: list[type[Analysis]], source_context: SourceContext
) -> dict[str, tuple[Source, list[type[Analysis]]]]:
    """Each source streamed, built once, with the analyses that read it (an analysis whose
    source rides on another's pass, `Source.streams_as`, is read from that one)."""
    built: dict[str, Source] = {}
    grouped: dict[str, tuple[Source, list[type[Analysis]]]] = {}
    for analysis in classes:
        if analysis.source not in SOURCES:
            raise InputError(
                f"analysis {analysis.name!r} reads unknown source {analysis.source!r}; "
                f"registered sources: {', '.join(SOURCES)}"
            )
        own = built.setdefault(analysis.source, SOURCES[analysis.source](source_context))
        streamed = built.setdefault(own.streams_as(), SOURCES[own.streams_as()](source_context))
        grouped.setdefault(streamed.name, (streamed, []))[1].append(analysis)
    return grouped


def analyse(
    classes: list[type[Analysis]],
    checkpoints: list[Checkpoint],
    pairs: list[tuple[str, str]],
    source_context: SourceContext,
    store: ResultStore,
    on_source_done: Callable[[str, float], None] | None = None,
    what: str = "",
) -> dict[str, AnyEntry]:
    """Summary entries of ``classes`` for ``checkpoints``: stored results reused, the rest computed.

    Each source with missing work is streamed once (``what`` ends its progress bar's label);
    ``on_source_done(source, seconds)`` is called after each.
    """
    shared = shared_context(checkpoints, pairs, source_context)
    entries: dict[str, AnyEntry] = {}
    for source_name, (source, group) in sources_to_stream(classes, source_context).items():
        inputs = {**source.identity(), "tokenizer": source_context.tokenizer_name}
        settings = {a.name: a.settings_identity(source_context.settings, source_context.hashes) for a in group}
        works = [look_up(a, checkpoints, inputs, settings[a.name], store) for a in group]
        notes_path = store.root / "sources" / f"{ResultIdentity(source_name, 1, (), inputs, {}).key}.json"
        notes = store_notes = read_sealed(notes_path)
        if any(item.missing for item in works) or notes is None:
            start = time.perf_counter()
            notes = stream_source(source, works, checkpoints, shared, store, what)
            if store_notes != notes:
                write_sealed(notes_path, notes)
            if on_source_done is not None:
                on_source_done(source_name, time.perf_counter() - start)
        for item in works:
            entries[item.analysis.name] = summary_entry(
                item, inputs, notes, settings[item.analysis.name], checkpoints, pairs
            )
    return entries
