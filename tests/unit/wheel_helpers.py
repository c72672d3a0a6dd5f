"""Tiny wheels written as the wheel format lays them out (PEP 427: a zip of the packages and a
``.dist-info`` folder with METADATA, WHEEL and RECORD), for a local wheel folder pip reads offline
(``PIP_NO_INDEX``, ``PIP_FIND_LINKS``)."""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile
from pathlib import Path


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}\n"


def write_wheel(
    folder: Path,
    name: str,
    version: str,
    requires: tuple[str, ...] = (),
    files: dict[str, bytes] | None = None,
    tag: str = "py3-none-any",
) -> Path:
    """The wheel of project ``name`` at ``version`` in ``folder``: ``files`` (default: a package of
    the project's name whose ``__init__`` holds its version), ``requires`` as its Requires-Dist."""
    module = name.replace("-", "_")
    dist_info = f"{module}-{version}.dist-info"
    contents = dict(files or {f"{module}/__init__.py": f"VERSION = {version!r}\n".encode()})
    contents[f"{dist_info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {requirement}\n" for requirement in requires)
    ).encode()
    wheel_file = f"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: {tag}\n"
    contents[f"{dist_info}/WHEEL"] = wheel_file.encode()
    record = "".join(record_line(path, data) for path, data in contents.items()) + f"{dist_info}/RECORD,,\n"
    contents[f"{dist_info}/RECORD"] = record.encode()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{module}-{version}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in contents.items():
            archive.writestr(path, data)
    return wheel


def local_wheels_only(folder: Path) -> dict[str, str]:
    """The variables that make pip read ``folder`` and nothing else: no index, and no configuration
    file of the machine (which may add its own wheel folders, indexes and constraints)."""
    return {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(folder)}
