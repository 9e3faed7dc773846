"""Kubelet timings that belong to a stage set (restart back-off, lease and node-status intervals).

A set may carry one `kind: KubeletSettings` document (`stages/<set>/settings.yaml`); a later set in
the list overrides an earlier one field by field, and missing fields keep the defaults below. No I/O
here except reading those files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from lwsconf.sim.nodes.stages import lifecycle

_FIELDS = {
    "restartBackoffInitialMilliseconds": "restart_backoff_initial",
    "restartBackoffMaxMilliseconds": "restart_backoff_max",
    "leaseDurationSeconds": "lease_duration",
    "leaseRenewIntervalSeconds": "lease_renew_interval",
    "nodeStatusReportSeconds": "node_status_report_interval",
}
_MS_FIELDS = {"restartBackoffInitialMilliseconds", "restartBackoffMaxMilliseconds"}


@dataclass(frozen=True)
class KubeletSettings:
    """Seconds, all of them."""

    restart_backoff_initial: float = 0.05
    restart_backoff_max: float = 1.0
    lease_duration: int = 40
    lease_renew_interval: float = 10.0
    node_status_report_interval: float = 60.0

    def restart_delay(self, restarts_so_far: int) -> float:
        """Back-off before restarting a container that already restarted `restarts_so_far` times."""
        return float(min(self.restart_backoff_max, self.restart_backoff_initial * 2 ** min(restarts_so_far, 32)))


def load_settings(set_names: Sequence[str]) -> KubeletSettings:
    """Defaults, overridden by each named set's settings.yaml in order.

    Raises:
        lifecycle.StageError: an unknown field or a non-positive number, naming the file.
    """
    settings = KubeletSettings()
    for name in set_names:
        path = lifecycle.STAGES_DIR / name / "settings.yaml"
        if path.exists():
            try:
                doc = yaml.safe_load(path.read_text()) or {}
            except yaml.YAMLError as exc:
                raise lifecycle.StageError(f"{path}: cannot read: {exc}") from None
            settings = apply(settings, doc, where=str(path))
    return settings


def apply(settings: KubeletSettings, doc: dict[str, Any], *, where: str) -> KubeletSettings:
    """`settings` with the fields of one KubeletSettings document applied."""
    changes: dict[str, float] = {}
    for key, value in doc.items():
        if key in ("apiVersion", "kind"):
            continue
        if key not in _FIELDS:
            raise lifecycle.StageError(f"{where}: unknown KubeletSettings field {key!r}; allowed: {sorted(_FIELDS)}")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise lifecycle.StageError(f"{where}: {key} must be a non-negative number, got {value!r}")
        changes[_FIELDS[key]] = value / 1000.0 if key in _MS_FIELDS else value
    return dataclasses.replace(settings, **changes)  # type: ignore[arg-type]
