"""Fixtures of the parity suite: the vc-scheduler binary and a `Parity` player on the test cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from e2e.harness import Rest
from e2e.parity.volcano import Parity, binary, install_volcano_crds


@pytest.fixture
def parity(control_plane: Any, rest: Rest, tmp_path: Path) -> Parity:
    """Both schedulers on the test cluster, with Volcano's own CRDs installed beside ours."""
    vc_binary = binary()
    install_volcano_crds(rest, vc_binary)
    return Parity(control_plane, rest, tmp_path, vc_binary)
