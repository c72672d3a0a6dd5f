"""Kovaleva et al.'s attention-pattern classes: a classifier labelling a map as one of vertical,
diagonal, vertical+diagonal, block or heterogeneous (boosted trees on the map's measurements,
which hold on unseen tasks better than the paper's small CNN, kept as a baseline).

    from classifier import load_classifier
    labels = load_classifier().predict(maps)  # maps: square 2-D arrays, rows summing to 1
"""

from classifier.data import CLASSES
from classifier.model import PatternClassifier, load_classifier

__all__ = ["CLASSES", "PatternClassifier", "load_classifier"]
