"""One exception type for every user-facing failure.

It lives in `tasks`, the lowest layer, so that the data readers, the pattern classifier
and the harness all raise the same type without importing each other. The CLI prints it
as a single line (no traceback unless ``--debug``), so each message must name what went
wrong, where (the file, and its line when there is one) and the fix.
"""


class InputError(Exception):
    """A problem with the user's input (flags, files, data) or environment, reported as one clear line."""


QUOTED_MAX = 200  # characters of a value an error message quotes: a file can hold megabytes in one value


def clipped(text: str, limit: int = QUOTED_MAX) -> str:
    """``text`` as a message quotes it: cut to ``limit`` characters, saying how long it was, so a
    huge value from a file or the command line leaves the message one short line."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"
