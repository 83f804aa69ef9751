"""HyperNodes (topology.volcano.sh/v1alpha1) and a PodGroup's `networkTopology`: parsing, and the topology tree.

`parse_hyper_node` reads one HyperNode at the edge; `HyperNodeTopology.resolve` turns all of them and
the nodes into the tree a snapshot carries: each hypernode's tier, parent and children, and its leaf
nodes as row indices into the snapshot's node list (sorted, so set operations are numpy calls). A
virtual top hypernode one tier above the highest holds every node and adopts every root, as Volcano's
session adds `<cluster-top-hypernode>`. The store resolves the tree only when HyperNodes or nodes change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from py_volcano.api.selectors import match_label_selector
from py_volcano.api.shapes import ShapeError, check_selector
from py_volcano.errors import InvalidHyperNode, InvalidPodGroup

__all__ = [
    "CLUSTER_TOP_HYPER_NODE",
    "HyperNodeSpec",
    "HyperNodeTopology",
    "MemberSpec",
    "NetworkTopologySpec",
    "parse_hyper_node",
    "parse_network_topology",
]

CLUSTER_TOP_HYPER_NODE = "<cluster-top-hypernode>"
"""The virtual hypernode above every other, holding every node (Volcano's `ClusterTopHyperNode`)."""

HARD, SOFT = "hard", "soft"
NODE_MEMBER, HYPER_NODE_MEMBER = "Node", "HyperNode"

IndexArray = npt.NDArray[np.intp]


class LabelledNode(Protocol):
    """A node as HyperNode members select it (a NodeSpec or a NodeInfo)."""

    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> Mapping[str, str]: ...


_NONE: IndexArray = np.zeros(0, dtype=np.intp)


@dataclass(slots=True, frozen=True)
class NetworkTopologySpec:
    """A PodGroup's `spec.networkTopology`: `mode` hard or soft, and the highest tier it may span."""

    mode: str = HARD
    highest_tier_allowed: int | None = None
    highest_tier_name: str = ""

    @property
    def is_hard(self) -> bool:
        """True for `mode: hard` (Volcano's default)."""
        return self.mode == HARD


def parse_network_topology(value: object, name: str) -> NetworkTopologySpec | None:
    """Read `spec.networkTopology` of PodGroup `name`; None when absent. InvalidPodGroup names the field."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidPodGroup(name, "spec.networkTopology", "expected a map")
    mode = value.get("mode") or HARD
    if mode not in (HARD, SOFT):
        raise InvalidPodGroup(name, "spec.networkTopology.mode", f"must be hard or soft, got {mode!r:.60}")
    tier = value.get("highestTierAllowed")
    if tier is not None and (isinstance(tier, bool) or not isinstance(tier, int) or tier < 0):
        raise InvalidPodGroup(
            name, "spec.networkTopology.highestTierAllowed", f"expected an integer >= 0, got {tier!r:.60}"
        )
    tier_name = value.get("highestTierName") or ""
    if not isinstance(tier_name, str):
        raise InvalidPodGroup(name, "spec.networkTopology.highestTierName", f"expected a string, got {tier_name!r:.60}")
    if tier is not None and tier_name:
        raise InvalidPodGroup(name, "spec.networkTopology", "highestTierAllowed and highestTierName cannot both be set")
    return NetworkTopologySpec(mode=str(mode), highest_tier_allowed=tier, highest_tier_name=tier_name)


@dataclass(slots=True, frozen=True)
class MemberSpec:
    """One `spec.members[i]`: a Node or HyperNode member chosen by exact name, name regex or node labels."""

    type: str
    exact: str = ""
    regex: re.Pattern[str] | None = None
    labels: Mapping[str, Any] | None = None

    def nodes(self, nodes: Sequence[LabelledNode]) -> list[int]:
        """Return the positions in `nodes` of the nodes this Node member selects."""
        if self.exact:
            return [i for i, node in enumerate(nodes) if node.name == self.exact]
        if self.regex is not None:
            search = self.regex.search  # Go's MatchString: a match anywhere in the name
            return [i for i, node in enumerate(nodes) if search(node.name)]
        selector = self.labels or {}
        if not selector.get("matchLabels") and not selector.get("matchExpressions"):
            return []  # Volcano: an empty labelMatch selects no node
        return [i for i, node in enumerate(nodes) if match_label_selector(selector, node.labels)]


@dataclass(slots=True, frozen=True)
class HyperNodeSpec:
    """What the scheduler reads from a HyperNode: name, `spec.tier`, `spec.tierName`, `spec.members`."""

    name: str
    tier: int
    tier_name: str = ""
    members: tuple[MemberSpec, ...] = ()


def _member(raw: object, name: str, path: str) -> MemberSpec:
    if not isinstance(raw, Mapping):
        raise InvalidHyperNode(name, path, "expected a map")
    kind = raw.get("type")
    if kind not in (NODE_MEMBER, HYPER_NODE_MEMBER):
        raise InvalidHyperNode(name, f"{path}.type", f"must be Node or HyperNode, got {kind!r:.60}")
    selector = raw.get("selector")
    if not isinstance(selector, Mapping):
        raise InvalidHyperNode(name, f"{path}.selector", "expected a map")
    chosen = [key for key in ("exactMatch", "regexMatch", "labelMatch") if selector.get(key) is not None]
    if len(chosen) != 1:
        raise InvalidHyperNode(name, f"{path}.selector", "set exactly one of exactMatch, regexMatch, labelMatch")
    key = chosen[0]
    where = f"{path}.selector.{key}"
    if kind == HYPER_NODE_MEMBER and key != "exactMatch":
        raise InvalidHyperNode(name, where, "a HyperNode member is selected by exactMatch only")
    value = selector[key]
    if not isinstance(value, Mapping):
        raise InvalidHyperNode(name, where, "expected a map")
    if key == "exactMatch":
        exact = value.get("name")
        if not isinstance(exact, str) or not exact:
            raise InvalidHyperNode(name, f"{where}.name", "expected a non-empty string")
        return MemberSpec(type=str(kind), exact=exact)
    if key == "regexMatch":
        pattern = value.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise InvalidHyperNode(name, f"{where}.pattern", "expected a non-empty string")
        try:
            return MemberSpec(type=str(kind), regex=re.compile(pattern))
        except re.error as exc:
            raise InvalidHyperNode(name, f"{where}.pattern", f"not a valid regular expression: {exc}") from None
    try:
        check_selector(value, where)
    except ShapeError as exc:
        raise InvalidHyperNode(name, exc.field, exc.reason) from None
    return MemberSpec(type=str(kind), labels=value)


def parse_hyper_node(obj: Mapping[str, Any]) -> HyperNodeSpec:
    """Parse a HyperNode; InvalidHyperNode names the object and the field."""
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        raise InvalidHyperNode("<unnamed>", "metadata.name", "missing")
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise InvalidHyperNode(name, "spec", "expected a map")
    tier = spec.get("tier")
    if isinstance(tier, bool) or not isinstance(tier, int) or tier < 0:
        raise InvalidHyperNode(name, "spec.tier", f"expected an integer >= 0, got {tier!r:.60}")
    tier_name = spec.get("tierName") or ""
    if not isinstance(tier_name, str):
        raise InvalidHyperNode(name, "spec.tierName", f"expected a string, got {tier_name!r:.60}")
    members = spec.get("members")
    members = [] if members is None else members
    if not isinstance(members, list):
        raise InvalidHyperNode(name, "spec.members", "expected a list")
    parsed = tuple(_member(raw, name, f"spec.members[{i}]") for i, raw in enumerate(members))
    return HyperNodeSpec(name=name, tier=tier, tier_name=tier_name, members=parsed)


class HyperNodeTopology:
    """The resolved tree over one node list: hypernode `i` has `names[i]`, `tiers[i]`, `parents[i]`
    (-1 for the top), `children[i]` and `rows[i]`, its leaf nodes as sorted rows of `node_names`.

    `at_tier[t][row]` is the hypernode of tier `t` holding node `row` (-1: none); `lowest[row]` the
    lowest-tier hypernode holding it. `problems` says why the tree is not usable (a member claimed by
    two parents, a cycle): then, as in Volcano, jobs with a network topology wait (`ready` is False).
    """

    __slots__ = (
        "_above",
        "_ancestors",
        "at_tier",
        "children",
        "index",
        "lowest",
        "names",
        "node_names",
        "parents",
        "problems",
        "rows",
        "tier_names",
        "tiers",
        "top",
    )

    def __init__(self, node_names: Sequence[str]) -> None:
        self.node_names = tuple(node_names)
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.tiers: list[int] = []
        self.parents: list[int] = []
        self.children: list[list[int]] = []
        self.rows: list[IndexArray] = []
        self.tier_names: dict[str, int] = {}
        self.problems: list[str] = []
        self.at_tier: dict[int, IndexArray] = {}
        self.lowest: IndexArray = np.full(len(self.node_names), -1, dtype=np.intp)
        self._ancestors: list[tuple[int, ...]] = []
        self._above: list[frozenset[int]] = []
        self.top = -1

    @property
    def ready(self) -> bool:
        """Whether jobs with a network topology can be scheduled on this tree."""
        return not self.problems

    @property
    def real_tiers(self) -> list[int]:
        """The tiers of the HyperNode objects (not the virtual top), ascending."""
        return sorted(self.at_tier)

    @classmethod
    def resolve(cls, specs: Iterable[HyperNodeSpec], nodes: Sequence[LabelledNode]) -> HyperNodeTopology:
        """Build the tree of `specs` over `nodes` (in snapshot order); problems are recorded, never raised."""
        topology = cls([node.name for node in nodes])
        ordered = sorted(specs, key=lambda spec: spec.name)
        for spec in ordered:
            topology._add(spec.name, spec.tier)
            if spec.tier_name:
                topology.tier_names.setdefault(spec.tier_name, spec.tier)
        own_rows = [topology._link(spec, nodes) for spec in ordered]
        top_tier = max(topology.tiers, default=0) + 1
        topology.top = topology._add(CLUSTER_TOP_HYPER_NODE, top_tier)
        for i in range(topology.top):
            if topology.parents[i] == -1:
                topology.parents[i] = topology.top
                topology.children[topology.top].append(i)
        topology._find_cycles()
        topology._gather_rows(own_rows)
        topology._index_nodes()
        return topology

    def _add(self, name: str, tier: int) -> int:
        i = len(self.names)
        self.names.append(name)
        self.index[name] = i
        self.tiers.append(tier)
        self.parents.append(-1)
        self.children.append([])
        self.rows.append(_NONE)
        return i

    def _link(self, spec: HyperNodeSpec, nodes: Sequence[LabelledNode]) -> list[int]:
        """Adopt `spec`'s HyperNode members; return the rows its Node members select."""
        parent = self.index[spec.name]
        rows: list[int] = []
        for member in spec.members:
            if member.type == NODE_MEMBER:
                rows.extend(member.nodes(nodes))
                continue
            child = self.index.get(member.exact)
            if child is None:
                continue  # Volcano waits for it too: a member not (yet) created holds no node
            held = self.parents[child]
            if held not in (-1, parent):
                self.problems.append(
                    f"HyperNode {spec.name}: field spec.members: HyperNode {member.exact} already belongs to "
                    f"{self.names[held]}; a hypernode has one parent"
                )
                continue
            if held == -1:
                self.parents[child] = parent
                self.children[parent].append(child)
        return rows

    def _find_cycles(self) -> None:
        for start in range(len(self.names)):
            seen = {start}
            at = self.parents[start]
            while at != -1:
                if at in seen:
                    self.problems.append(f"HyperNode {self.names[start]}: field spec.members: members form a cycle")
                    self.parents[start] = -1
                    break
                seen.add(at)
                at = self.parents[at]

    def _gather_rows(self, own_rows: list[list[int]]) -> None:
        """Each hypernode's rows: its own Node members and its children's rows, children first."""
        done: set[int] = set()

        def gather(i: int) -> IndexArray:
            if i in done:
                return self.rows[i]
            done.add(i)
            if i == self.top:
                self.rows[i] = np.arange(len(self.node_names), dtype=np.intp)
                for child in self.children[i]:
                    gather(child)
                return self.rows[i]
            parts = [np.asarray(own_rows[i], dtype=np.intp), *(gather(child) for child in self.children[i])]
            self.rows[i] = np.unique(np.concatenate(parts)) if parts else _NONE
            return self.rows[i]

        for i in range(len(self.names)):
            gather(i)
        self._ancestors = [self._chain(i) for i in range(len(self.names))]
        self._above = [frozenset(chain) for chain in self._ancestors]

    def _chain(self, i: int) -> tuple[int, ...]:
        chain = [i]
        while self.parents[chain[-1]] != -1 and len(chain) <= len(self.names):
            chain.append(self.parents[chain[-1]])
        return tuple(chain)

    def _index_nodes(self) -> None:
        """Fill `at_tier` and `lowest`: higher tiers written first, so the lowest tier wins."""
        for i in sorted(range(self.top), key=lambda i: -self.tiers[i]):
            tier = self.tiers[i]
            column = self.at_tier.get(tier)
            if column is None:
                column = self.at_tier[tier] = np.full(len(self.node_names), -1, dtype=np.intp)
            column[self.rows[i]] = i
            self.lowest[self.rows[i]] = i

    def highest_tier(self, spec: NetworkTopologySpec) -> int | None:
        """The highest tier a job may span: hard mode's `highestTierAllowed` (or the tier its
        `highestTierName` names), soft mode's the top's (Volcano turns soft into hard up to the top);
        None when hard mode names no known tier (Volcano then schedules it as a job without one)."""
        if not spec.is_hard:
            return self.tiers[self.top]
        if spec.highest_tier_allowed is not None:
            return spec.highest_tier_allowed
        return self.tier_names.get(spec.highest_tier_name) if spec.highest_tier_name else None

    def ancestors(self, i: int) -> tuple[int, ...]:
        """Return `i` and its ancestors, lowest first, ending at the top."""
        return self._ancestors[i]

    def lca(self, a: int, b: int) -> int:
        """Return the lowest common ancestor of hypernodes `a` and `b` (-1 stands for none: returns the other)."""
        if a == -1:
            return b
        if b == -1 or a == b:
            return a
        above_a = self._above[a]
        return next((i for i in self._ancestors[b] if i in above_a), self.top)

    def highest_allowed(self, i: int, tier: int) -> int:
        """Return the highest ancestor of `i` (itself included) whose tier is <= `tier`, or -1."""
        found = -1
        for ancestor in self._ancestors[i]:
            if self.tiers[ancestor] > tier:
                break
            found = ancestor
        return found

    def subtree(self, root: int) -> list[int]:
        """Return `root` and every hypernode below it, breadth first."""
        found, at = [root], 0
        while at < len(found):
            found.extend(self.children[found[at]])
            at += 1
        return found

    def hyper_node_of(self, rows: Iterable[int]) -> int:
        """Return the lowest hypernode holding every node of `rows` (the LCA of their lowest ones); -1 for none."""
        lca = -1
        for row in rows:
            leaf = int(self.lowest[row])
            lca = self.lca(lca, leaf if leaf != -1 else self.top)
        return lca
