"""Kovaleva et al.'s Section 4.4: how much attention each head gives to linguistic features.

For a sentence and a head, the attention a word receives is averaged over all rows of the
word-level map ([CLS] and [SEP] rows included, i.e. normalised by sequence length); a
feature's value is the maximum over the sentence's words that carry it, and sentences
without the feature are skipped. The features come from the treebank's gold annotation
(Kovaleva et al. tagged with spaCy): nouns, verbs, pronouns (Penn tags), subjects and
objects (dependency relations), negation words, plus [CLS] and [SEP] for scale. Values of
both checkpoints and their change are running means over sentences.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from harness.analyses.base import AnalysisContext, register_analysis
from harness.attention import CHECKPOINTS, FINETUNED, PRETRAINED, AttentionBatch
from harness.treebank_sources import syntax_source  # noqa: F401  (registers the "syntax" source)
from harness.wordlevel import WordLevelAnalysis, word_maps
from tasks.treebank import Sentence

# Kovaleva et al.'s spaCy labels and their UD counterparts (UD splits "don't" into "do n't").
SUBJECT_RELATIONS = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass", "agent", "expl"})
OBJECT_RELATIONS = frozenset({"dobj", "obj", "iobj", "dative", "attr", "oprd"})
NEGATION_WORDS = frozenset({
    "neither", "nor", "not", "never", "none", "nothing", "nowhere", "n't", "don't", "won't", "didn't", "hadn't",
    "haven't", "can't", "isn't", "wasn't", "shouldn't", "couldn't",
})
UPOS_FALLBACK = {"nouns": {"NOUN", "PROPN"}, "verbs": {"VERB", "AUX"}, "pronouns": {"PRON"}}


def _tagged(prefixes: tuple[str, ...], exact: frozenset[str], fallback: str) -> Callable[[Sentence, int], bool]:
    """Penn-tag test, falling back to UPOS where the treebank has no Penn tags."""
    def test(sentence: Sentence, i: int) -> bool:
        xpos = sentence.xpos[i]
        if xpos in ("_", ""):
            return sentence.upos[i] in UPOS_FALLBACK[fallback]
        return xpos.startswith(prefixes) or xpos in exact
    return test


def _relation(names: frozenset[str]) -> Callable[[Sentence, int], bool]:
    return lambda sentence, i: sentence.relations[i] in names or sentence.relations[i].split(":")[0] in names


FEATURES: dict[str, Callable[[Sentence, int], bool]] = {
    "nouns": _tagged(("NN",), frozenset(), "nouns"),
    "verbs": _tagged(("VB",), frozenset(), "verbs"),
    "pronouns": _tagged((), frozenset({"PRP", "PRP$"}), "pronouns"),
    "subjects": _relation(SUBJECT_RELATIONS),
    "objects": _relation(OBJECT_RELATIONS),
    "negation": lambda sentence, i: sentence.words[i].lower().replace("\u2019", "'") in NEGATION_WORDS,
}
SPECIAL = ("[CLS]", "[SEP]")
NAMES = (*FEATURES, *SPECIAL)


def feature_positions(sentence: Sentence, num_words: int) -> dict[str, list[int]]:
    """Word positions (among the first ``num_words``) carrying each linguistic feature."""
    return {name: [i for i in range(num_words) if test(sentence, i)] for name, test in FEATURES.items()}


def feature_attention(maps: torch.Tensor, positions: dict[str, list[int]]) -> dict[str, torch.Tensor]:
    """Per feature present, (layers, heads): max over its words of the mean attention they receive.

    ``maps``: (layers, heads, words + 2, words + 2) with [CLS] first and [SEP] last.
    """
    received = maps.mean(dim=-2)  # (layers, heads, words + 2): attention received, averaged over rows
    values = {name: received[..., [1 + i for i in words]].amax(dim=-1) for name, words in positions.items() if words}
    values["[CLS]"] = received[..., 0]
    values["[SEP]"] = received[..., -1]
    return values


@register_analysis
class LinguisticFeatures(WordLevelAnalysis):
    """Mean over sentences of each feature's per-head attention, for both checkpoints."""

    name = "features"
    source = "syntax"

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        shape = (context.num_layers, context.num_heads)
        self.totals = {c: {name: torch.zeros(shape, dtype=torch.float64) for name in NAMES} for c in CHECKPOINTS}
        self.sentences = dict.fromkeys(NAMES, 0)
        self.words_cut = 0

    def update_words(self, batch: AttentionBatch) -> None:
        rows = {c: word_maps(batch, c, self.from_mode, keep_special=True) for c in CHECKPOINTS}
        for per_checkpoint in zip(*rows.values()):
            aligned = per_checkpoint[0][0]
            self.words_cut += aligned.words_cut
            positions = feature_positions(aligned.item, aligned.num_words)
            for checkpoint, (_, maps) in zip(rows, per_checkpoint):
                values = feature_attention(maps, positions)
                for name, value in values.items():
                    self.totals[checkpoint][name] += value.double()
            for name in values:  # only the features this sentence has
                self.sentences[name] += 1

    def result(self) -> dict[str, Any]:
        means = {c: {n: self.totals[c][n] / max(self.sentences[n], 1) for n in NAMES} for c in CHECKPOINTS}
        change = {n: means[FINETUNED][n] - means[PRETRAINED][n] for n in NAMES}
        return {"features": {
            "names": list(NAMES),
            "per_head": {c: {n: means[c][n].tolist() for n in NAMES} for c in CHECKPOINTS},
            "change_per_head": {n: change[n].tolist() for n in NAMES},
            "per_layer": {c: {n: means[c][n].mean(dim=1).tolist() for n in NAMES} for c in CHECKPOINTS},
            "max_head": {c: {n: _max_head(means[c][n]) for n in NAMES} for c in CHECKPOINTS},
            "sentences_with_feature": dict(self.sentences),
            "word_attention_from": self.from_mode, "words_cut": self.words_cut,
            "normalisation": "attention received, averaged over all rows of the word-level map "
                             "([CLS]/[SEP] rows included); max over the sentence's words with the feature",
        }}

    @staticmethod
    def metrics(summary: dict[str, Any]) -> list[tuple[str, float]]:
        """Scalars for MLflow: per feature and checkpoint, the largest per-head value."""
        stored = summary["features"]
        return [(f"features_{_slug(n)}_max_{c}", stored["max_head"][c][n]["value"])
                for c in CHECKPOINTS for n in stored["names"]]

    @staticmethod
    def draw(summary: dict[str, Any], out_dir: Path) -> list[Path]:
        from harness.figures import draw_layer_lines

        stored = summary["features"]
        title = f"{summary.get('model', 'model')} on {summary.get('task', 'task')}"
        paths = [draw_feature_panels(stored, name, out_dir / f"features_{_slug(name)}.png", title=title)
                 for name in stored["names"]]
        layers_change = {name: [f - p for p, f in zip(stored["per_layer"][PRETRAINED][name],
                                                       stored["per_layer"][FINETUNED][name])]
                         for name in stored["names"] if name not in SPECIAL}
        paths.append(draw_layer_lines(layers_change, out_dir / "features_change_per_layer.png",
                                      title=f"{title}: change in attention to linguistic features after fine-tuning",
                                      ylabel="fine-tuned minus pre-trained (mean over heads)"))
        return paths


def _max_head(grid: torch.Tensor) -> dict[str, Any]:
    layer, head = divmod(int(grid.argmax()), grid.shape[1])
    return {"layer": layer + 1, "head": head + 1, "value": float(grid[layer, head])}


def _slug(name: str) -> str:
    return name.strip("[]").lower()


def draw_feature_panels(stored: dict[str, Any], name: str, path: Path, *, title: str) -> Path:
    """Pre-trained, fine-tuned (shared colour scale) and change (diverging) per head for one feature."""
    import numpy as np
    from harness.figures import plt, save, style_head_axes

    grids = [np.asarray(stored["per_head"][c][name]) for c in CHECKPOINTS]
    change = np.asarray(stored["change_per_head"][name])
    layers, heads = change.shape
    top = max(g.max() for g in grids)
    limit = float(np.abs(change).max()) or 1e-9
    figure, axes = plt.subplots(1, 3, figsize=(3 * (0.32 * heads + 1.6), 0.32 * layers + 1.8))
    panels = [(grids[0], "pre-trained", "viridis", 0, top), (grids[1], "fine-tuned", "viridis", 0, top),
              (change, "fine-tuned minus pre-trained", "RdBu_r", -limit, limit)]
    for ax, (grid, label, cmap, vmin, vmax) in zip(axes, panels):
        image = ax.imshow(grid, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
        style_head_axes(ax, layers, heads, label, tick_size=6, title_size=8)
        figure.colorbar(image, ax=ax, label="attention (row mean, max over words)" if cmap == "viridis" else "change")
    figure.suptitle(f"{title}: attention to {name} "
                    f"({stored['sentences_with_feature'][name]} sentences)", fontsize=9)
    return save(figure, path)
