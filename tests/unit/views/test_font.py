"""The figures' reduced copy of DejaVu Sans: the same drawing, a faster PDF."""

import re
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

import harness.views.canvas  # noqa: F401  (the house's figures draw in the reduced copy once it is set up)
from harness.views.font import FAMILY, LEAN_FAMILY, lean_copy

KERNED_AND_SYMBOLS = "AVAWAY To Ty fine-tuned ffi −0.25 ≥ Δ ± → α β Dušek"
FALLBACK = "Ա Ֆ Ж"  # Armenian and Cyrillic: in DejaVu Sans, not in the reduced copy


def drawn(text: str, family: str | list[str], path=None) -> np.ndarray:
    figure = plt.figure(figsize=(5, 1), dpi=200)
    figure.text(0.02, 0.4, text, family=family, fontsize=11)
    figure.text(0.02, 0.7, text, family=family, fontsize=11, weight="bold", style="italic")
    figure.canvas.draw()
    pixels = np.asarray(figure.canvas.buffer_rgba()).copy()
    if path is not None:
        figure.savefig(path, format="pdf")
    plt.close(figure)
    return pixels


def test_figures_draw_in_the_reduced_copy_with_dejavu_sans_behind_it():
    assert matplotlib.rcParams["font.family"] == [LEAN_FAMILY, FAMILY]


def test_the_reduced_copy_draws_pixel_for_pixel_as_dejavu_sans_and_falls_back_to_it():
    for text in (KERNED_AND_SYMBOLS, FALLBACK):
        assert np.array_equal(drawn(text, [LEAN_FAMILY, FAMILY]), drawn(text, FAMILY)), text
    assert not np.array_equal(drawn(KERNED_AND_SYMBOLS, [LEAN_FAMILY, FAMILY]), drawn("AVAWAY", FAMILY))


def test_the_pdf_embeds_the_reduced_copy_as_truetype(tmp_path):
    drawn(KERNED_AND_SYMBOLS, [LEAN_FAMILY, FAMILY], tmp_path / "text.pdf")
    pdf = (tmp_path / "text.pdf").read_bytes()
    assert re.search(rb"/FontName /[A-Z]{6}\+DejaVuSansLean", pdf) and b"/FontFile2" in pdf


def test_a_copy_is_made_once_and_named_by_its_source(tmp_path):
    face = Path(matplotlib.font_manager.findfont(FAMILY))
    copy = lean_copy(face, tmp_path)
    written = copy.stat().st_mtime_ns
    assert lean_copy(face, tmp_path) == copy and copy.stat().st_mtime_ns == written
    assert copy.stat().st_size < 0.5 * face.stat().st_size
