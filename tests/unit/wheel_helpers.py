"""A local wheel folder that pip reads offline, and nothing else."""

from __future__ import annotations

import os
from pathlib import Path


def local_wheels_only(folder: Path) -> dict[str, str]:
    """The variables that make pip read ``folder`` and nothing else: no index, and no configuration
    file of the machine (which may add its own wheel folders, indexes and constraints)."""
    return {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(folder)}
