"""Delegated authentication and authorization against the API server, for the secure /metrics endpoint.

A bearer token is checked with a TokenReview, the user it names with a SubjectAccessReview for a
non-resource URL and verb, as kube-scheduler's and controller-runtime's secure serving do. Answers
(a valid or invalid token, an allowed or denied request) are cached for a few seconds
(kube-scheduler's delegated defaults: 10 s each), so a Prometheus scraping every few seconds costs
the API server two requests per TTL, not two per scrape; a failed review is never cached.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from py_volcano.cache.client import ApiClient, api_failure
from py_volcano.errors import ApiError

__all__ = ["AccessReviewer", "Decision", "DecisionCache", "ReviewTTLs", "User"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(slots=True, frozen=True)
class User:
    """Who a token belongs to, as the TokenReview answered."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(slots=True, frozen=True)
class Decision:
    """A SubjectAccessReview's answer."""

    allowed: bool
    reason: str = ""


@dataclass(slots=True, frozen=True)
class ReviewTTLs:
    """Seconds each kind of answer is reused (kube-scheduler's delegated authentication and
    authorization defaults)."""

    authenticated: float = 10.0
    """A token the API server accepted, or refused."""

    allowed: float = 10.0
    """A request the API server allowed."""

    denied: float = 10.0
    """A request the API server denied."""


class DecisionCache(Generic[K, V]):
    """Answers kept for a TTL each; at most `max_entries`, the least recently stored dropped first, so a
    stream of made-up tokens cannot grow it."""

    __slots__ = ("_clock", "_entries", "max_entries")

    def __init__(self, *, max_entries: int = 4096, clock: Callable[[], float] = time.monotonic) -> None:
        """An empty cache; `clock` is monotonic seconds (tests pass a fake one)."""
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> V | None:
        """Return the answer stored for `key` while its TTL lasts, else None (and forget it)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if self._clock() >= expires:
            del self._entries[key]
            return None
        return value

    def put(self, key: K, value: V, *, ttl: float) -> None:
        """Store `value` for `ttl` seconds (a TTL of 0 stores nothing)."""
        if ttl <= 0:
            return
        self._entries[key] = (self._clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


#: What the token cache holds for a token the API server refused (None means "not cached").
_INVALID = User(name="")


class AccessReviewer:
    """TokenReviews and SubjectAccessReviews through the scheduler's API client, cached."""

    def __init__(
        self,
        client: ApiClient,
        *,
        ttls: ReviewTTLs | None = None,
        max_entries: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Review with `client`'s credentials, which need `create` on tokenreviews and subjectaccessreviews
        (the `system:auth-delegator` ClusterRole)."""
        self.client = client
        self.ttls = ttls or ReviewTTLs()
        self._tokens: DecisionCache[str, User] = DecisionCache(max_entries=max_entries, clock=clock)
        self._decisions: DecisionCache[tuple[User, str, str], Decision] = DecisionCache(
            max_entries=max_entries, clock=clock
        )

    async def authenticate(self, token: str) -> User | None:
        """Return the user `token` belongs to, None when the API server says it is not valid.

        ApiError when the review got no usable answer (no connection, refused, malformed).
        """
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._tokens.get(key)
        if cached is not None:
            return None if cached is _INVALID else cached
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        status = await self._create("/apis/authentication.k8s.io/v1/tokenreviews", body, what="TokenReview")
        user = _user(status) if status.get("authenticated") is True else None
        self._tokens.put(key, user or _INVALID, ttl=self.ttls.authenticated)
        return user

    async def authorize(self, user: User, *, path: str, verb: str) -> Decision:
        """Return whether `user` may `verb` the non-resource URL `path`. ApiError when the review got no
        usable answer."""
        key = (user, path, verb)
        cached = self._decisions.get(key)
        if cached is not None:
            return cached
        spec: dict[str, Any] = {
            "user": user.name,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {name: list(values) for name, values in user.extra}
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        status = await self._create(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews", body, what="SubjectAccessReview"
        )
        decision = Decision(allowed=status.get("allowed") is True, reason=str(status.get("reason") or ""))
        self._decisions.put(key, decision, ttl=self.ttls.allowed if decision.allowed else self.ttls.denied)
        return decision

    async def _create(self, path: str, body: Mapping[str, Any], *, what: str) -> Mapping[str, Any]:
        """POST a review; return its `status`. ApiError unless the API server created it."""
        code, answer = await self.client.request("POST", path, body=body)
        if code not in (200, 201):
            raise api_failure(ApiError, f"create {what}", status=code, body=answer)
        status = answer.get("status") if isinstance(answer, Mapping) else None
        if not isinstance(status, Mapping):
            raise ApiError(f"create {what}: the answer has no status: {str(answer)[:200]}", status=code)
        return status


def _user(status: Mapping[str, Any]) -> User:
    info = status.get("user")
    info = info if isinstance(info, Mapping) else {}
    groups = info.get("groups")
    extra = info.get("extra")
    extra = extra if isinstance(extra, Mapping) else {}
    return User(
        name=str(info.get("username") or ""),
        uid=str(info.get("uid") or ""),
        groups=tuple(str(group) for group in groups) if isinstance(groups, list) else (),
        extra=tuple(
            sorted((str(key), tuple(map(str, values))) for key, values in extra.items() if isinstance(values, list))
        ),
    )
