"""Kovaleva et al.'s attention-pattern classifier: a small CNN labelling a map as one of
vertical, diagonal, vertical+diagonal, block or heterogeneous.

    from classifier import load_classifier
    labels = load_classifier().predict(maps)  # maps: square 2-D arrays, rows summing to 1
"""

from classifier.data import CLASSES
from classifier.model import PatternClassifier, load_classifier

__all__ = ["CLASSES", "PatternClassifier", "load_classifier"]
