"""Credentials read from kubeconfigs: every auth flavour reaches the Authorization header."""

from __future__ import annotations

from pathlib import Path

import yaml

from py_volcano.cache.client import load_credentials


def kubeconfig(tmp_path: Path, user: dict[str, object]) -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "team"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_bearer_token_becomes_the_authorization_header(tmp_path: Path) -> None:
    """A ServiceAccount token kubeconfig authenticates (it was silently anonymous before)."""
    credentials = load_credentials(kubeconfig(tmp_path, {"token": "abc.def"}))
    assert credentials.authorization == "Bearer abc.def"
    assert credentials.server == "https://127.0.0.1:6443"
    assert credentials.default_namespace == "team"


def test_basic_auth_becomes_the_authorization_header(tmp_path: Path) -> None:
    """Username and password give a Basic header."""
    credentials = load_credentials(kubeconfig(tmp_path, {"username": "ann", "password": "pw"}))
    assert credentials.authorization == "Basic YW5uOnB3"
