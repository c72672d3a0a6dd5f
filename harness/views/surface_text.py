"""Clark et al.'s surface analyses on Clark's kind of input: segments of running text, for both checkpoints.

The statistics, per-layer figures (each head a point) and tables of `harness.views.surface`,
measured on segments ``[CLS] p1 [SEP] p2 [SEP]`` of two consecutive paragraphs of one document
(UD English EWT by default, ``--corpus`` text when given), as Clark et al. measured BERT-base
on 1000 Wikipedia segments: these are the numbers set beside Clark's Figures 2 and 4, every
title naming the text they were measured on. The claims are Clark's,
judged on resamples of the segments: in the pre-trained model attention to [CLS] peaks in an
earlier layer than attention to [SEP], and over half of some layer's attention goes to [SEP].
What still differs from Clark's setting is the model: Clark's BERT-base was pre-trained as a
masked language model, while a run's model may not be (all-MiniLM-L6-v2 is a sentence encoder
trained contrastively); the papers' text says so.
"""

from __future__ import annotations

from harness.results.checkpoints import PRETRAINED
from harness.views.base import Claim, Entry, PaperPoint, register_view
from harness.views.samples import running_text_sample
from harness.views.surface import SurfaceView, cls_peaks_before_sep, sep_takes_half_a_layer

RUNNING_TEXT = "two-paragraph segments of running text"
# What Clark's Figure 2 was measured on, and what of a run may still differ from it.
CLARK_SETTING = (
    "BERT-base pre-trained as a masked language model, on 1000 Wikipedia segments of two consecutive "
    "paragraphs; here the same kind of input, with the run's model, which may be trained otherwise "
    "(all-MiniLM-L6-v2 is a contrastively trained sentence encoder)"
)


@register_view
class SurfaceTextView(SurfaceView):
    name = "surface_text"
    samples = running_text_sample
    order = 70
    version = 1
    inputs = RUNNING_TEXT
    study_key = "special_tokens_on_running_text"
    paper_row = "[SEP] dominates layers 6-10"
    heatmaps = ()  # each head is a point of the per-layer figures; the grids, seconds each, are the task view's
    claims = {
        "cls_peaks_before_sep": Claim(
            "on running text, attention to [CLS] peaks in an earlier layer than attention to [SEP] in the "
            "pre-trained model",
            cls_peaks_before_sep(PRETRAINED),
        ),
        "sep_takes_half_a_layer": Claim(
            "on running text, over half of some layer's attention goes to [SEP] in the pre-trained model",
            sep_takes_half_a_layer(PRETRAINED),
        ),
    }
    papers = {
        "cls_peaks_before_sep": PaperPoint(
            "Clark et al. 2019, Fig. 2",
            f"early layers attend to [CLS], layers 6-10 to [SEP] ({CLARK_SETTING})",
            "holds",
        ),
        "sep_takes_half_a_layer": PaperPoint(
            "Clark et al. 2019, Fig. 2",
            f"over half of the attention of layers 6-10 of BERT-base (12 layers) goes to [SEP] ({CLARK_SETTING})",
            "holds",
        ),
    }

    @classmethod
    def input_title(cls, entry: Entry) -> str:
        """``two-paragraph segments of UD English EWT r2.16`` (or of the ``--corpus`` file), from the
        notes its source kept; without them, of running text."""
        notes = entry.get("source", {}).get("notes", {})
        text = notes.get("text") or notes.get("corpus")
        return f"two-paragraph segments of {text}" if text else cls.inputs
