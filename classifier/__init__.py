"""Kovaleva et al.'s attention-pattern classes: a classifier labelling a map as one of vertical,
diagonal, vertical+diagonal, block or heterogeneous (boosted trees on the map's measurements,
which hold on unseen tasks better than the paper's small CNN, kept as a baseline).

    from classifier.model import load_classifier
    labels = load_classifier().predict(maps)  # maps: square 2-D arrays, rows summing to 1

Importing the package gives the class names only (`CLASSES`), without torch, so what draws
or reports the classes starts fast; the classifier itself is in `classifier.model`.
"""

from classifier.data import CLASSES

__all__ = ["CLASSES"]
