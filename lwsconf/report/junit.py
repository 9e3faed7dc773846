"""Annotate pytest's `junit.xml` with each conformance test's feature, profile and result.

pytest writes the file; CI systems read it. This adds a `<properties>` block to each matching
`<testcase>` (merging with properties a test recorded itself), so a CI test view can group and
filter by `lwsconf.feature` or `lwsconf.profile` and shows the five-state lwsconf result next to
pytest's pass/skip. Test cases are matched to report entries by pytest's own name mangling
(`conformance/test_x.py::test_a[p]` -> classname `conformance.test_x`, name `test_a[p]`). Only
renders a `schema.Report` into existing XML; decides nothing.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from lwsconf.report import schema

__all__ = ["annotate", "annotate_file", "junit_names"]

PREFIX = "lwsconf."


def junit_names(node_id: str) -> tuple[str, str]:
    """(classname, name) pytest's junitxml gives a node id (without a junit_prefix)."""
    path, _, rest = node_id.partition("::")
    names = [re.sub(r"\.py$", "", path.replace("/", ".")), *rest.split("::")]
    return ".".join(names[:-1]), names[-1]


def _properties(test: schema.TestReport) -> list[tuple[str, str]]:
    props = [("shortName", test.short_name)]
    props += [("caseId", test.case_id), ("name", test.name)] if test.case_id else []
    props += [("result", test.result.value), ("core", str(test.core).lower())]
    props += [("feature", f) for f in test.features]
    props += [("profile", p) for p in test.profiles]
    if test.message:
        props.append(("message", test.message))
    props += [("artifact", a) for a in test.artifacts]
    return [(PREFIX + k, v) for k, v in props]


def _annotate_case(case: ET.Element, test: schema.TestReport) -> None:
    props = case.find("properties")
    if props is None:
        props = ET.Element("properties")
        case.insert(0, props)  # JUnit schemas want <properties> first
    for old in [p for p in props if p.get("name", "").startswith(PREFIX)]:
        props.remove(old)  # idempotent: annotating twice gives the same file
    for name, value in _properties(test):
        ET.SubElement(props, "property", name=name, value=value)


def annotate(xml_text: str, report: schema.Report) -> str:
    """The junit XML with lwsconf properties on every test case the report knows.

    Raises:
        ValueError: the text is not XML.
    """
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise ValueError(f"junit.xml is not valid XML ({exc}); was the run interrupted while writing it?") from None
    by_name = {junit_names(t.node_id): t for t in report.tests}
    for case in root.iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        test = by_name.get((classname, name))
        if test is None:  # a --junit-prefix was used: match the classname's tail
            test = next((t for (c, n), t in by_name.items() if n == name and classname.endswith("." + c)), None)
        if test is not None:
            _annotate_case(case, test)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def annotate_file(path: Path, report: schema.Report) -> bool:
    """Rewrite `path` in place; False when there is no such file (pytest ran with --junit-xml elsewhere)."""
    if not path.is_file():
        return False
    path.write_text(annotate(path.read_text(), report))
    return True
