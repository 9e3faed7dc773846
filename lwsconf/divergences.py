"""The known-divergence table's model: which test fails on which implementation versions, why, and since when.

One reader for conformance/divergences.yaml, used by the suite (which marks the rows that apply to the
version under test as strict expected failures) and by `lwsconf report compare` (which links a known
divergence to its row). A row covers a range of versions, not one string: from `since` (the oldest version
known to depart) up to, not including, `fixed.in` (the first version that no longer does, with the upstream
commit and pull request that fixed it); without `fixed` it covers every later version this harness knows.
Versions are placed by `lwsconf.upstream.versions.order_key` (releases by number, a snapshot of main right
after the release it follows), so the same row applies to v0.9.0 and main-060ab4d alike when both still
depart. Each row keeps its evidence in the file: the upstream source that explains it and, under `seen`, the
failure line a real run printed for a version and cluster (never a run id only a machine knew).

Pure: text in, rows out; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import yaml

from lwsconf.upstream import versions

CLASSES = ("c", "version")
"""c: upstream departs from its own documented API or behaviour; version: the behaviour came with a later
upstream release than the one under test."""


@dataclass(frozen=True)
class Fix:
    """The first version without the divergence and what changed there upstream."""

    version: str
    commit: str | None
    """The upstream commit of the fix (None when only the pull request is known)."""
    pr: int


@dataclass(frozen=True)
class Seen:
    """A failure a real run printed: the version and cluster it ran on, and its first line."""

    version: str
    cluster: str
    message: str


@dataclass(frozen=True)
class Divergence:
    id: str
    implementation: str
    test: str
    """The test's short name (@conformance short_name), or ShortName[case-id] for one parametrised case."""
    klass: str
    since: str
    fixed: Fix | None
    evidence: str
    seen: tuple[Seen, ...]
    line: int = 0
    """The 1-based line the row starts on in its file (for links to it)."""

    def applies_to(self, implementation: str, version: str) -> bool:
        """Whether `version` of `implementation` lies in [since, fixed.in); False for a version that cannot
        be placed in order (a checkout)."""
        at = versions.order_key(version)
        if implementation != self.implementation or at is None:
            return False
        since = versions.order_key(self.since)
        if since is None or at < since:
            return False
        end = versions.order_key(self.fixed.version) if self.fixed else None
        return end is None or at < end

    def describe_range(self) -> str:
        """`v0.9.0 until v0.10.0 (68cee20, kubernetes-sigs/lws#896)` or `v0.9.0 and later (not fixed)`."""
        if self.fixed is None:
            return f"{self.since} and later (no fix known)"
        commit = f"{self.fixed.commit}, " if self.fixed.commit else ""
        return f"{self.since} until {self.fixed.version} ({commit}kubernetes-sigs/lws#{self.fixed.pr})"


def _one_line(value: object) -> str:
    return " ".join(str(value).split())


def _row(item: dict[str, object], line: int, where: str) -> Divergence:
    fixed_raw = item.get("fixed")
    fixed = None
    if fixed_raw is not None:
        if not isinstance(fixed_raw, dict):
            raise ValueError(f"{where}: fixed must be a mapping with in, commit and pr")
        commit = fixed_raw.get("commit")
        fixed = Fix(str(fixed_raw["in"]), str(commit) if commit else None, int(fixed_raw["pr"]))
    seen_raw = item.get("seen") or []
    if not isinstance(seen_raw, list):
        raise ValueError(f"{where}: seen must be a list of {{version, cluster, message}}")
    seen = tuple(Seen(str(s["version"]), str(s["cluster"]), _one_line(s["message"])) for s in seen_raw)
    return Divergence(str(item["id"]), str(item["implementation"]), str(item["test"]), str(item["class"]),
                      str(item["since"]), fixed, _one_line(item["evidence"]), seen, line)


def read(text: str, name: str = "divergences.yaml") -> list[Divergence]:
    """Every row of the table's text; ValueError naming the row and what is wrong with it."""
    root = yaml.compose(text)
    data = yaml.safe_load(text) or {}
    items = (data.get("divergences") or []) if isinstance(data, dict) else []
    nodes: list[yaml.Node] = []
    if isinstance(root, yaml.MappingNode):
        nodes = next((v.value for k, v in root.value if k.value == "divergences" and isinstance(v, yaml.SequenceNode)),
                     [])
    rows: list[Divergence] = []
    for n, item in enumerate(items):
        where = f"{name}: divergences[{n}]"
        line = nodes[n].start_mark.line + 1 if n < len(nodes) else 0
        try:
            row = _row(item, line, where)
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, ValueError) and str(exc).startswith(where):
                raise
            raise ValueError(f"{where}: missing or malformed field {exc}") from None
        _check(row, where)
        rows.append(row)
    ids = [r.id for r in rows]
    if len(ids) != len(set(ids)):
        raise ValueError(f"{name}: row ids must be unique: {sorted({i for i in ids if ids.count(i) > 1})}")
    return rows


def _check(row: Divergence, where: str) -> None:
    if row.klass not in CLASSES:
        raise ValueError(f"{where}: class must be one of {CLASSES}")
    if len(row.evidence) < 40:
        raise ValueError(f"{where}: evidence must say why (the upstream source that explains it)")
    if versions.order_key(row.since) is None:
        raise ValueError(f"{where}: since {row.since!r} is not a version this harness can place "
                         f"(known: {', '.join(versions.known_versions())})")
    if row.fixed is not None:
        end = versions.order_key(row.fixed.version)
        start = versions.order_key(row.since)
        if end is None or start is None or end <= start:
            raise ValueError(f"{where}: fixed.in {row.fixed.version!r} must be a version after since {row.since!r}")
    if not row.seen:
        raise ValueError(f"{where}: seen must keep at least one failure a real run printed (version, cluster, "
                         f"message)")
    for s in row.seen:
        if not row.applies_to(row.implementation, s.version):
            raise ValueError(f"{where}: seen on {s.version}, which the row's range ({row.describe_range()}) "
                             f"does not cover")


def applicable(table: Sequence[Divergence], implementation: str, version: str) -> dict[str, Divergence]:
    """The rows that apply to this implementation version, by test name."""
    return {d.test: d for d in table if d.applies_to(implementation, version)}
