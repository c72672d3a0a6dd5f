"""Text sources the analyses read; importing this package registers all of them in `SOURCES`.

Adding one: subclass `Source` (``name``, ``identity()``, ``stream()``), decorate it with
`register_source`, and import its module here.
"""

from harness.inputs.sources import coreference, corpus, dev, running_text, task, treebank
from harness.inputs.sources.base import SOURCES, Source, SourceContext, SourceStream, register_source

__all__ = ["SOURCES", "Source", "SourceContext", "SourceStream", "corpus", "coreference", "dev", "register_source",
           "running_text", "task", "treebank"]
