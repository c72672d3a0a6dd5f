"""One exception type for every user-facing failure.

The CLI prints ``HarnessError`` as a single line (no traceback unless ``--debug``), so
each message must name what went wrong, where (file and line when there is one) and the fix.
"""


class HarnessError(Exception):
    """A problem with the user's input or environment, reported as one clear line."""
