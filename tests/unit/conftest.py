"""Fixtures of the unit tests: each encoder family's tiny checkpoint (`tests.unit.model.architectures`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.model.architectures import ARCHITECTURES, architecture_folder


@pytest.fixture(params=list(ARCHITECTURES))
def architecture(request: pytest.FixtureRequest) -> str:
    """Each architecture's name in turn; a test narrows it with ``parametrize("architecture", [...])``
    (function-scoped, as such a parameter is: the folder behind it is made once all the same)."""
    return request.param


@pytest.fixture
def architecture_dir(tmp_path_factory: pytest.TempPathFactory, architecture: str) -> Path:
    """The folder of ``architecture``'s tiny checkpoint."""
    return architecture_folder(tmp_path_factory, architecture)
