"""Whether the Hugging Face hub can be reached, and what to do when it cannot: read the local caches
at once. Unreachable, huggingface_hub retries each file with backoff (about 23 s per GLUE split,
a minute per model file) before `datasets` or transformers falls back to what is cached; the
harness probes once and puts both in their offline mode instead."""

from __future__ import annotations

import os
import socket
from functools import cache
from urllib.parse import urlparse

import datasets
from huggingface_hub import constants as hub_constants

HUB_PROBE_SECONDS = 3.0
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


@cache
def hub_unreachable() -> str | None:
    """Why the Hugging Face hub cannot be reached, or None when it can (or cannot be told: behind
    a proxy); probed once per process with one TCP connection, a few seconds at most."""
    if hub_constants.is_offline_mode():
        return "HF_HUB_OFFLINE is set"
    if any(os.environ.get(name) for name in PROXY_VARIABLES):
        return None
    endpoint = urlparse(hub_constants.ENDPOINT)
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        socket.create_connection((endpoint.hostname, port), timeout=HUB_PROBE_SECONDS).close()
    except OSError as error:
        return f"{endpoint.hostname}:{port}: {error.strerror or error}"
    return None


def read_cache_only_if_unreachable() -> None:
    """With the hub unreachable, every later hub access of huggingface_hub and `datasets` reads the
    local caches at once (their offline modes) instead of retrying the network."""
    if hub_unreachable() is not None:
        hub_constants.HF_HUB_OFFLINE = True
        datasets.config.HF_HUB_OFFLINE = True
