"""The known-divergence table (conformance/divergences.yaml): which tests fail, with evidence, for which
implementation version. Read by conformance/conftest.py, which marks those tests strict xfail."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

TABLE = Path(__file__).with_name("divergences.yaml")
CLASSES = ("c", "version")


@dataclass(frozen=True)
class Divergence:
    implementation: str
    versions: tuple[str, ...]
    test: str
    """The test's short name (@conformance short_name), or ShortName[case-id] for one parametrised case."""
    klass: str
    evidence: str


def load(path: Path = TABLE) -> list[Divergence]:
    """Every row; ValueError naming the row and field when the table is malformed."""
    rows = (yaml.safe_load(path.read_text()) or {}).get("divergences") or []
    out = []
    for n, row in enumerate(rows):
        where = f"{path.name}: divergences[{n}]"
        try:
            item = Divergence(str(row["implementation"]), tuple(str(v) for v in row["versions"]), str(row["test"]),
                              str(row["class"]), " ".join(str(row["evidence"]).split()))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{where}: missing or malformed field {exc}") from None
        if item.klass not in CLASSES or not item.evidence or not item.versions:
            raise ValueError(f"{where}: class must be one of {CLASSES}, with versions and evidence")
        out.append(item)
    return out


def implementation_version(lws_impl: str, default_upstream: str) -> tuple[str, str] | None:
    """(implementation, version) that --lws-impl names a release of, or None (reference, installed, a checkout)."""
    kind, _, rest = lws_impl.strip().partition(":")
    rest = rest.strip()
    if kind == "upstream-local":
        if rest.startswith(("/", ".", "~")):
            return None
        version = rest or default_upstream
    elif kind == "upstream" and rest:
        version = rest
    else:
        return None
    return "upstream", version if version.startswith("v") else f"v{version}"


def expected(table: list[Divergence], implementation: str, version: str) -> dict[str, Divergence]:
    """The rows that apply to this implementation version, by test short name."""
    return {d.test: d for d in table if d.implementation == implementation and version in d.versions}
