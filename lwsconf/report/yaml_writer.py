"""`conformance-report.yaml`: the report as the YAML document implementations publish.

Keys keep the order of `schema.Report.to_dict` (identity first, tests last), so the file reads
top-down like Gateway API's reports. Only renders and parses; results are decided in build.py.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from lwsconf.report import schema

__all__ = ["FILENAME", "dump", "load", "read", "write"]

FILENAME = "conformance-report.yaml"
HEADER = "# LeaderWorkerSet conformance report written by lwsconf; schema: lwsconf/report/report.schema.json\n"


def dump(report: schema.Report) -> str:
    return HEADER + yaml.safe_dump(report.to_dict(), sort_keys=False, allow_unicode=True, width=110)


def load(text: str, *, where: str = "report") -> schema.Report:
    """Parse YAML text; ValueError says which file and field is wrong."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{where}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a YAML mapping (an LWSConformanceReport), got {type(data).__name__}")
    try:
        return schema.Report.from_dict(data)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def write(report: schema.Report, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump(report))
    return path


def read(path: Path) -> schema.Report:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"cannot read report {path}: {exc.strerror}") from None
    return load(text, where=str(path))
