"""vGPU fits over the session's node rows, per task shape: computed for a row only when its cards changed.

A fit depends on the node's cards and on the task's signature (`vgpu.signature`), so the predicate
and the score of one task, and every task asking alike (the pods of one job), share one computation
per node until a placement there changes its cards.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from py_volcano.api import MaskArray, TaskID, TaskInfo
from py_volcano.plugins.deviceshare import vgpu
from py_volcano.plugins.deviceshare.vgpu import VGpuNode

__all__ = ["ShapeFits", "VGpuFits"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class ShapeFits:
    """Per node row, for one task shape: fits, the weighted device score, and the card version seen."""

    __slots__ = ("ok", "score", "seen")

    def __init__(self, size: int) -> None:
        self.ok: MaskArray = np.ones(size, dtype=bool)
        self.score: FloatArray = np.zeros(size)
        self.seen: IntArray = np.full(size, -1, dtype=np.int64)


class VGpuFits:
    """The fits of the session's task shapes; rows without vGPU cards always fit and score 0."""

    __slots__ = ("by_shape", "cards", "policy", "shapes", "versions", "weight")

    def __init__(self, size: int, cards: dict[int, VGpuNode], *, policy: str, weight: int) -> None:
        self.cards = cards
        self.policy = policy
        self.weight = weight
        self.versions: IntArray = np.full(size, -1, dtype=np.int64)
        for row, node in cards.items():
            self.versions[row] = node.version
        self.by_shape: dict[tuple[object, ...], ShapeFits] = {}
        self.shapes: dict[TaskID, tuple[object, ...]] = {}

    def touch(self, row: int) -> None:
        """Note that the cards of `row` changed."""
        self.versions[row] = self.cards[row].version

    def of(self, task: TaskInfo) -> ShapeFits:
        """The task shape's fits, brought up to date for the rows whose cards changed."""
        shape = self.shapes.get(task.uid)
        if shape is None:
            shape = self.shapes[task.uid] = vgpu.signature(task)
        fits = self.by_shape.get(shape)
        if fits is None:
            fits = self.by_shape[shape] = ShapeFits(len(self.versions))
        for row in np.flatnonzero(fits.seen != self.versions):
            fit = self.cards[int(row)].fit(task, self.policy)
            fits.ok[row] = not isinstance(fit, str)
            fits.score[row] = 0.0 if isinstance(fit, str) else math.floor(fit[1] + 0.5) * self.weight
            fits.seen[row] = self.versions[row]
        return fits
