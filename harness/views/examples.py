"""The attention maps of a few dev examples, every layer and head, per checkpoint: what the
report's per-example view shows (`harness.present.report`), from stored results like every figure.

Nothing is drawn, tabled or logged from it here: the report embeds the stored maps as they are
(each weight in thousandths as two base-64 digits) with each example's most changed head,
and its script draws them in the browser.
"""

from __future__ import annotations

from harness.views.base import View, register_view


@register_view
class ExamplesView(View):
    name = "examples"
    version = 2  # 2: GLUE from the hub names its examples by their TSV line, as the TSV loader does
