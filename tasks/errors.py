"""One exception type for every user-facing failure.

It lives in `tasks`, the lowest layer, so that the data readers, the pattern classifier
and the harness all raise the same type without importing each other. The CLI prints it
as a single line (no traceback unless ``--debug``), so each message must name what went
wrong, where (the file, and its line when there is one) and the fix.
"""


class InputError(Exception):
    """A problem with the user's input (flags, files, data) or environment, reported as one clear line."""
