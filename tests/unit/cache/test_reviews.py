"""The secure /metrics endpoint's reviews: answers cached for their TTL, bounded, failures never cached."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from py_volcano.cache import ApiClient
from py_volcano.cache.reviews import AccessReviewer, Decision, DecisionCache, ReviewTTLs, User
from py_volcano.errors import ApiError


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_answer_lasts_its_ttl() -> None:
    clock = Clock()
    cache: DecisionCache[str, bool] = DecisionCache(clock=clock)
    cache.put("a", True, ttl=10)
    clock.now += 9.9
    assert cache.get("a") is True
    clock.now += 0.1
    assert cache.get("a") is None
    assert len(cache) == 0, "an expired answer is forgotten"


def test_a_zero_ttl_stores_nothing() -> None:
    cache: DecisionCache[str, bool] = DecisionCache()
    cache.put("a", True, ttl=0)
    assert cache.get("a") is None


def test_the_least_recently_stored_answer_goes_first() -> None:
    """Made-up tokens cannot grow the cache past its bound."""
    cache: DecisionCache[str, int] = DecisionCache(max_entries=2)
    cache.put("a", 1, ttl=10)
    cache.put("b", 2, ttl=10)
    cache.put("a", 3, ttl=10)
    cache.put("c", 4, ttl=10)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (3, None, 4)


class FakeApi:
    """Answers TokenReviews and SubjectAccessReviews as told; counts them."""

    def __init__(self) -> None:
        self.tokens = {"good": {"username": "system:serviceaccount:mon:prom", "uid": "u1", "groups": ["g"]}}
        self.allowed = {"system:serviceaccount:mon:prom"}
        self.calls: list[tuple[str, Any]] = []
        self.fail: tuple[int, Any] | ApiError | None = None

    async def request(self, method: str, path: str, *, body: Any = None) -> tuple[int, Any]:
        self.calls.append((path.rsplit("/", 1)[1], body))
        if isinstance(self.fail, ApiError):
            raise self.fail
        if self.fail is not None:
            return self.fail
        spec = body["spec"]
        if body["kind"] == "TokenReview":
            user = self.tokens.get(spec["token"])
            status = {"authenticated": True, "user": user} if user else {"authenticated": False, "error": "bad"}
            return 201, {**body, "status": status}
        return 201, {**body, "status": {"allowed": spec["user"] in self.allowed, "reason": "rbac"}}


def reviewer(api: FakeApi, clock: Clock) -> AccessReviewer:
    return AccessReviewer(cast(ApiClient, api), ttls=ReviewTTLs(authenticated=10, allowed=10, denied=5), clock=clock)


def test_a_valid_token_is_reviewed_once_per_ttl() -> None:
    api, clock = FakeApi(), Clock()
    reviews = reviewer(api, clock)
    expected = User(name="system:serviceaccount:mon:prom", uid="u1", groups=("g",))
    assert asyncio.run(reviews.authenticate("good")) == expected
    assert asyncio.run(reviews.authenticate("good")) == expected
    assert [name for name, _ in api.calls] == ["tokenreviews"]
    assert api.calls[0][1]["spec"] == {"token": "good"}
    clock.now += 10
    asyncio.run(reviews.authenticate("good"))
    assert len(api.calls) == 2


def test_an_invalid_token_is_none_and_cached_too() -> None:
    api, clock = FakeApi(), Clock()
    reviews = reviewer(api, clock)
    assert asyncio.run(reviews.authenticate("forged")) is None
    assert asyncio.run(reviews.authenticate("forged")) is None
    assert len(api.calls) == 1


def test_authorization_asks_for_the_non_resource_url_and_caches_by_outcome() -> None:
    """Allowed answers last `allowed` seconds, denied ones `denied`."""
    api, clock = FakeApi(), Clock()
    reviews = reviewer(api, clock)
    prom = User(name="system:serviceaccount:mon:prom", uid="u1", groups=("g",), extra=(("scopes", ("a",)),))
    other = User(name="system:serviceaccount:mon:other")
    assert asyncio.run(reviews.authorize(prom, path="/metrics", verb="get")) == Decision(allowed=True, reason="rbac")
    assert api.calls[0] == (
        "subjectaccessreviews",
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": prom.name,
                "uid": "u1",
                "groups": ["g"],
                "extra": {"scopes": ["a"]},
                "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
            },
        },
    )
    assert not asyncio.run(reviews.authorize(other, path="/metrics", verb="get")).allowed
    clock.now += 5
    asyncio.run(reviews.authorize(prom, path="/metrics", verb="get"))
    asyncio.run(reviews.authorize(other, path="/metrics", verb="get"))
    assert len(api.calls) == 3, "the denial expired after 5 s, the permission did not"


@pytest.mark.parametrize(
    ("failure", "status"),
    [
        pytest.param(ApiError("POST: no answer", status=None), None, id="no-answer"),
        pytest.param((403, {"kind": "Status", "message": "cannot create tokenreviews"}), 403, id="forbidden"),
        pytest.param((201, {"kind": "TokenReview"}), 201, id="no-status"),
    ],
)
def test_a_failed_review_raises_and_is_not_cached(failure: tuple[int, Any] | ApiError, status: int | None) -> None:
    api, clock = FakeApi(), Clock()
    reviews = reviewer(api, clock)
    api.fail = failure
    with pytest.raises(ApiError) as raised:
        asyncio.run(reviews.authenticate("good"))
    assert raised.value.status == status
    api.fail = None
    assert asyncio.run(reviews.authenticate("good")) is not None
    assert len(api.calls) == 2
