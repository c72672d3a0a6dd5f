"""Clark et al.'s surface analyses on Clark's kind of input: segments of running text.

The statistics of `harness.analyses.surface`, measured on segments ``[CLS] p1 [SEP] p2 [SEP]``
of two consecutive paragraphs of one document (the ``"running-text"`` source: UD English EWT,
or ``--corpus`` text), each segment's attention to [CLS] and to [SEP] per layer kept for the
claims, which are judged on resamples of the segments: the numbers Clark's Figures 2 and 4 are
set beside.
"""

from __future__ import annotations

from harness.analyses.base import register_analysis
from harness.analyses.surface import CLARK_BERT_BASE, THRESHOLDS, Surface
from harness.inputs.sources.running_text import RunningTextSource
from harness.views.surface_text import SurfaceTextView


@register_analysis
class SurfaceText(Surface):
    """`Surface` on the running-text source, with Clark's BERT-base numbers as its reference."""

    view = SurfaceTextView
    source = RunningTextSource.name
    unit = "segments"
    reference = {**THRESHOLDS, "clark_bert_base": CLARK_BERT_BASE}
