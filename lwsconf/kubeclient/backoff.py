"""Capped exponential backoff: the one retry-delay policy of the sim's clients. No I/O here."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Delays `initial`, `initial*factor`, ... up to `cap`; `reset()` after a success.

    Used by the informer between relists and (per key) by the work queue, so a failing server or a
    failing reconcile costs a bounded request rate instead of a hot loop.
    """

    initial: float = 0.05
    factor: float = 2.0
    cap: float = 5.0
    failures: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.initial < 0 or self.factor < 1 or self.cap < self.initial:
            raise ValueError(
                f"Backoff needs initial >= 0, factor >= 1 and cap >= initial, got initial={self.initial}, "
                f"factor={self.factor}, cap={self.cap}")

    def delay_for(self, failures: int) -> float:
        """The delay after `failures` consecutive failures (1 gives `initial`)."""
        if failures <= 0:
            return 0.0
        # Cap the exponent too: factor ** 1000 would overflow a float long before the cap matters.
        exponent = min(failures - 1, 64)
        return float(min(self.cap, self.initial * self.factor ** exponent))

    def next(self) -> float:
        """Record one more failure and return how long to wait before retrying."""
        self.failures += 1
        return self.delay_for(self.failures)

    def reset(self) -> None:
        self.failures = 0
