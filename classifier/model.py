"""The pattern classifier (`load_classifier`) around one of two networks: the shipped boosted trees
on the map's measurements (`classifier.trees`), or the CNN below, after Kovaleva et al., kept
as the paper's baseline (`python -m classifier crossval --kind cnn`).

Kovaleva et al. used 8 convolutional layers; this network is cut to 4 (3x3 convolutions,
8/16/32/32 channels, batch norm, ReLU, max pooling between them) on the 4-channel 32 x 32
input of `classifier.resize` (three views of the map and the input's segment structure),
because it classifies every head of every example next to the forward passes and must stay
cheap (about 1 M multiply-adds per map). It keeps the spatial layout to the end (no global
pooling): *where* the mass is (first column, main diagonal, two squares on the diagonal) is
what separates the classes. The map's measurements (`classifier.features`: the guideline's
lines are drawn on them), with whether the input is a pair and its length, join the
convolutional features before the hidden layer and feed a head of their own whose logits are
added. Batch norm is folded into the convolutions for inference.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

from classifier.data import CLASSES
from classifier.features import NO_SECOND_SEGMENT
from classifier.resize import CHANNELS, INPUT_MEASURES, INPUT_SIZE, MapInputs, normalise_list, normalise_padded
from classifier.trees import MeasuredTrees
from tasks.files import atomic_path

WEIGHTS_FILE = Path(__file__).resolve().parent / "weights.pt"
STAGE_WIDTHS = (8, 16, 32, 32)
BLOCK = CLASSES.index("block")


class PatternCNN(nn.Module):
    """(count, 4, 32, 32) normalised maps and input structure and (count, 16) measurements
    (`classifier.resize.MapInputs`) -> (count, 5) class logits."""

    uses_images = True
    chunk = 256  # maps per call: the feature maps stay in cache (measured fastest on CPU)

    def __init__(
        self,
        widths: Sequence[int] = STAGE_WIDTHS,
        size: int = INPUT_SIZE,
        num_classes: int = len(CLASSES),
        in_channels: int = CHANNELS,
        measures: int = INPUT_MEASURES,
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width_in = in_channels
        for index, width in enumerate(widths):
            layers += [nn.Conv2d(width_in, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU()]
            if index < len(widths) - 1:
                layers.append(nn.MaxPool2d(2))
            width_in = width
        self.features = nn.Sequential(*layers)
        side = size // 2 ** (len(widths) - 1)
        self.dropout = nn.Dropout(0.3)  # on the convolutional features only: the measurements are few and exact
        self.head = nn.Sequential(
            nn.Linear(width_in * side * side + measures, 64), nn.ReLU(), nn.Linear(64, num_classes)
        )
        # the measurements alone, added to the logits: the guideline's lines are drawn on them
        self.measured = nn.Sequential(
            nn.Linear(measures, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, num_classes)
        )

    def forward(self, images: torch.Tensor, measures: torch.Tensor, features: nn.Module | None = None) -> torch.Tensor:
        """Logits; ``features`` replaces the convolutions (the batch-norm-folded copy at inference)."""
        convolved = self.dropout((features or self.features)(images).flatten(1))
        measures = measures.to(convolved.dtype)
        return self.head(torch.cat([convolved, measures], dim=1)) + self.measured(measures)


def fold_batch_norm(network: PatternCNN) -> nn.Module:
    """An inference copy of ``network``'s convolutions with each batch norm folded into its convolution."""
    layers, modules = [], list(network.eval().features)
    for index, module in enumerate(modules):
        if isinstance(module, nn.BatchNorm2d):
            continue
        if isinstance(module, nn.Conv2d) and isinstance(modules[index + 1], nn.BatchNorm2d):
            norm = modules[index + 1]
            module = fuse_conv_bn_eval(module, norm) if isinstance(norm, nn.BatchNorm2d) else module
        layers.append(module)
    return nn.Sequential(*layers).eval()


def allowed_logits(logits: torch.Tensor, two_segments: torch.Tensor) -> torch.Tensor:
    """The logits with the classes a map's input rules out set to -inf: (..., classes) logits and
    (...) bool, whether the map's input has two segments (`block` needs two) -> (..., classes)."""
    impossible = torch.zeros(len(CLASSES), dtype=torch.bool, device=logits.device)
    impossible[BLOCK] = True
    single = ~two_segments.to(device=logits.device, dtype=torch.bool)
    return logits.masked_fill(single[..., None] & impossible, float("-inf"))


def possible_classes(logits: torch.Tensor, two_segments: torch.Tensor) -> torch.Tensor:
    """The most likely class of each map that its input allows (`allowed_logits`) -> (...) indices."""
    return allowed_logits(logits, two_segments).argmax(dim=-1)


class PatternClassifier:
    """Classifies attention maps into `CLASSES` with trained `MeasuredTrees` or a `PatternCNN` (eval mode)."""

    classes = CLASSES

    # info: any JSON, kept with the weights (`save`)
    def __init__(self, network: MeasuredTrees | PatternCNN, info: dict[str, Any] | None = None) -> None:
        self.network = network.eval()
        # channels-last runs the small convolutions 2-3x faster on CPU (oneDNN); torch's stub of
        # Module.to omits the memory_format keyword its implementation takes
        self.folded = (
            fold_batch_norm(network).to(memory_format=torch.channels_last)  # type: ignore[call-overload]
            if isinstance(network, PatternCNN)
            else None
        )
        self.info = info or {}

    @property
    def kind(self) -> str:
        """``"cnn"`` or ``"trees"``: which network classifies."""
        return "cnn" if isinstance(self.network, PatternCNN) else "trees"

    def to(self, device: torch.device | str) -> PatternClassifier:
        """Move the network (in place) to where the attention maps are; returns self."""
        self.network.to(device)
        if self.folded is not None:
            self.folded.to(device)
        return self

    @torch.inference_mode()
    def logits(self, inputs: MapInputs) -> torch.Tensor:
        """Class logits of ``count`` maps' inputs -> (count, 5), in the network's chunks."""
        if not len(inputs):
            return torch.empty(0, len(CLASSES), device=inputs.measures.device)
        chunk = self.network.chunk
        return torch.cat(
            [self._chunk_logits(inputs.take(slice(start, start + chunk))) for start in range(0, len(inputs), chunk)]
        )

    def _chunk_logits(self, inputs: MapInputs) -> torch.Tensor:
        if self.folded is None:
            return self.network(inputs.measures)
        return self.network(inputs.images.contiguous(memory_format=torch.channels_last), inputs.measures, self.folded)

    def predict_proba(self, maps: Sequence[np.ndarray], second_segments: Sequence[int] | None = None) -> np.ndarray:
        """Class probabilities (len(maps), 5), columns in the order of `CLASSES`.

        ``maps``: square 2-D arrays (rows summing to 1), any size from 2 to 512;
        ``second_segments``: where each map's input has its second segment
        (`NO_SECOND_SEGMENT`, the default, for a single-segment input, which never gets `block`).
        """
        segments = list(second_segments) if second_segments is not None else [NO_SECOND_SEGMENT] * len(maps)
        two_segments = torch.tensor(segments) != NO_SECOND_SEGMENT
        logits = allowed_logits(
            self.logits(normalise_list(maps, segments, images=self.network.uses_images)), two_segments
        )
        return torch.softmax(logits, dim=-1).numpy()

    def predict(self, maps: Sequence[np.ndarray], second_segments: Sequence[int] | None = None) -> list[str]:
        """The class name of each map (arguments as `predict_proba`)."""
        return [CLASSES[index] for index in self.predict_proba(maps, second_segments).argmax(axis=1)]

    def predict_batch(
        self,
        attentions: Sequence[torch.Tensor],
        lengths: torch.Tensor,
        second_segments: torch.Tensor,
        row_entropies: Sequence[torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """Class indices of every head of padded batches of maps (e.g. both checkpoints), in one CNN call.

        ``attentions``: tensors of shape (batch, layers, heads, seq, seq) on the same inputs;
        ``lengths``: (batch,) real tokens; ``second_segments``: (batch,) first token of each
        input's second segment, `NO_SECOND_SEGMENT` for a single-segment input. `block`
        (attention within each of two segments) cannot exist in a single-segment input, so it
        is never predicted there. Returns (len(attentions), batch, layers, heads) int64
        indices into `CLASSES`. ``row_entropies``: each tensor's row entropies where already
        computed ((batch, layers, heads, seq), `harness.inputs.batches.AttentionBatch.row_entropy`).
        """
        batch, layers, heads = attentions[0].shape[:3]
        entropies = row_entropies if row_entropies is not None else [None] * len(attentions)
        inputs = MapInputs.cat(
            [
                normalise_padded(maps, lengths, second_segments, images=self.network.uses_images, row_entropy=entropy)
                for maps, entropy in zip(attentions, entropies)
            ]
        )
        logits = self.logits(inputs).view(len(attentions), batch, layers, heads, len(CLASSES))
        two_segments = second_segments != NO_SECOND_SEGMENT
        return possible_classes(logits, two_segments[None, :, None, None])

    def save(self, path: Path = WEIGHTS_FILE) -> None:
        """Write the weights, the classes and input layout they expect, and ``info`` to ``path`` atomically;
        `load_classifier` reads them back."""
        stored = {
            "kind": self.kind,
            "state_dict": self.network.state_dict(),
            "classes": list(CLASSES),
            "widths": list(STAGE_WIDTHS),
            "input_size": INPUT_SIZE,
            "channels": CHANNELS,
            "measures": INPUT_MEASURES,
            "info": self.info,
        }
        with atomic_path(path) as temporary:
            torch.save(stored, temporary)


def load_classifier(path: str | Path = WEIGHTS_FILE) -> PatternClassifier:
    """The shipped (or a given) trained pattern classifier, on the CPU."""
    stored = torch.load(path, map_location="cpu", weights_only=True)
    shape = (stored.get("channels", 3), stored["input_size"], stored.get("measures", 0))
    if tuple(stored["classes"]) != CLASSES or shape != (CHANNELS, INPUT_SIZE, INPUT_MEASURES):
        raise ValueError(
            f"{path} was trained for classes {stored['classes']} on {shape[0]} x {shape[1]} x {shape[1]} "
            f"images and {shape[2]} measures, not this version's {CHANNELS} x {INPUT_SIZE} x {INPUT_SIZE} "
            f"and {INPUT_MEASURES}; retrain it with `python -m classifier train`"
        )
    if stored.get("kind", "cnn") == "trees":
        return PatternClassifier(MeasuredTrees.from_state_dict(stored["state_dict"]), stored.get("info", {}))
    network = PatternCNN(stored["widths"], stored["input_size"])
    network.load_state_dict(stored["state_dict"])
    return PatternClassifier(network, stored.get("info", {}))
