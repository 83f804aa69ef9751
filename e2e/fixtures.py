"""Fixtures of the scheduler e2e tests (loaded with `pytest_plugins = ["e2e.fixtures"]`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from e2e.harness import Nodes, Rest, create_namespace, delete_namespace, install_crds, token


@pytest.fixture(scope="session")
def rest(kube: Any) -> Rest:
    """Plain-dict REST on the test cluster, with the Volcano CRDs installed and Established."""
    client = Rest(kube)
    install_crds(client)
    return client


@pytest.fixture
def namespace(rest: Rest) -> Iterator[str]:
    """A fresh namespace, deleted (and waited for) afterwards."""
    name = create_namespace(rest, token("e2e"))
    yield name
    delete_namespace(rest, name)


@pytest.fixture
def scheduler_name() -> str:
    """A scheduler name of this test's own."""
    return token("pv")


@pytest.fixture
def nodes(rest: Rest) -> Iterator[Nodes]:
    """Create kwok fake nodes for one test; they are deleted afterwards."""
    created = Nodes(rest)
    yield created
    created.delete_all()
