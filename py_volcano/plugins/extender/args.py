"""The extender's arguments, under Volcano's names (`extender.urlPrefix`, `extender.<point>Verb`, ...)."""

from __future__ import annotations

from dataclasses import dataclass

from py_volcano.framework import Arguments

__all__ = ["VERBS", "ExtenderArgs"]

#: Each verb argument and the field of ExtenderArgs holding it; an empty verb leaves its point alone.
VERBS = {
    "extender.onSessionOpenVerb": "on_session_open",
    "extender.onSessionCloseVerb": "on_session_close",
    "extender.predicateVerb": "predicate",
    "extender.prioritizeVerb": "prioritize",
    "extender.preemptableVerb": "preemptable",
    "extender.reclaimableVerb": "reclaimable",
    "extender.queueOverusedVerb": "queue_overused",
    "extender.jobEnqueueableVerb": "job_enqueueable",
    "extender.jobEnqueuedVerb": "job_enqueued",
    "extender.jobReadyVerb": "job_ready",
    "extender.allocateFuncVerb": "allocate_func",
    "extender.deallocateFuncVerb": "deallocate_func",
}


@dataclass(slots=True, frozen=True)
class ExtenderArgs:
    """Where the extender listens, how long a call may take, which points it serves and what a failure means."""

    url_prefix: str = ""
    """`extender.urlPrefix`: each call POSTs JSON to `<urlPrefix>/<verb>`."""
    http_timeout: float = 1.0
    """`extender.httpTimeout` (a Go duration, default 1s): how long one call may take."""
    ignorable: bool = False
    """`extender.ignorable`: a failed call lets the point pass (true) or refuses (false)."""
    managed_resources: frozenset[str] = frozenset()
    """`extender.managedResources` (a list): only tasks requesting one of these are sent; empty: every task."""
    on_session_open: str = ""
    on_session_close: str = ""
    predicate: str = ""
    prioritize: str = ""
    preemptable: str = ""
    reclaimable: str = ""
    queue_overused: str = ""
    job_enqueueable: str = ""
    job_enqueued: str = ""
    job_ready: str = ""
    allocate_func: str = ""
    deallocate_func: str = ""

    @classmethod
    def parse(cls, args: Arguments) -> ExtenderArgs:
        """Read the arguments; ConfigError on a value of the wrong type."""
        managed = args.get_value("extender.managedResources")
        if managed is not None and not (isinstance(managed, list) and all(isinstance(m, str) for m in managed)):
            raise args.error("extender.managedResources", f"{managed!r} is not a list of resource names")
        verbs = {field: args.get_str(key, "") for key, field in VERBS.items()}
        return cls(
            url_prefix=args.get_str("extender.urlPrefix", ""),
            http_timeout=args.get_duration("extender.httpTimeout", 1.0),
            ignorable=args.get_bool("extender.ignorable", False),
            managed_resources=frozenset(managed or ()),
            **verbs,
        )
