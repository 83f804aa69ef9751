"""py-volcano: a Kubernetes batch scheduler with Volcano's semantics."""

__all__ = ["__version__"]

__version__ = "0.1.0"
