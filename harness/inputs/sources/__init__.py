"""Text sources the analyses read; importing this package registers every one in `SOURCES`.

Adding one is one module here (or in a package of its own, named under the entry-point group
``harness.inputs.sources``: `harness.registry.discover`): a subclass of `Source` (``name``,
``identity()``, ``stream()``) decorated with `register_source`.
"""

from harness.inputs.sources.base import SOURCES, Source, SourceContext, SourceStream, register_source
from harness.registry import discover


def discover_sources() -> None:
    """Register the sources of this package and of the installed extensions."""
    discover(__name__, SOURCES)


discover_sources()

__all__ = ["SOURCES", "Source", "SourceContext", "SourceStream", "discover_sources", "register_source"]
