"""A ``RunReport`` as JUnit XML, the format CI systems show test results in.

One ``testsuite`` named ``fusecli``; one ``testcase`` per fusion (``classname`` the file,
``name`` the fusion); a mismatch is a ``failure`` and an error an ``error``, each with the
one-line summary as ``message`` and the details as text. Failures of one signature share it
in ``type``, so CI views can group them. Every name, path and message goes through
``xml_text``: a control character or a byte of a file name that is not UTF-8 would make the
file invalid XML.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from fusecli.app.pipeline import FusionOutcome, RunReport
from fusecli.textsafe import xml_text


def junit_xml(report: RunReport, suite: str = "fusecli") -> str:
    from fusecli.app.corpus import failure_signature

    cases = [_testcase(outcome, failure_signature(outcome)) for outcome in report.fusions]
    failures = sum(1 for o in report.fusions if o.status == "mismatch")
    errors = sum(1 for o in report.fusions if o.status == "error")
    seconds = sum(o.seconds for o in report.fusions)
    attributes = {
        "name": suite, "tests": str(len(cases)), "failures": str(failures),
        "errors": str(errors), "skipped": "0", "time": f"{seconds:.3f}",
    }
    root = ET.Element("testsuites", attributes)
    suite_element = ET.SubElement(root, "testsuite", attributes)
    suite_element.extend(cases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def write_junit(report: RunReport, path: str | Path, suite: str = "fusecli") -> Path:
    """Write ``report`` as JUnit XML to ``path`` (folders created as needed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit_xml(report, suite), encoding="utf-8")
    return path


def _testcase(outcome: FusionOutcome, signature: str | None) -> ET.Element:
    case = ET.Element("testcase", {
        "classname": xml_text(outcome.path), "name": xml_text(outcome.name),
        "time": f"{outcome.seconds:.3f}",
    })
    if outcome.status == "pass":
        return case
    lines = [f"{outcome.path}: {outcome.name}: {outcome.status}"]
    if outcome.error:
        lines.append(outcome.error)
    for index, diff in enumerate(outcome.outputs):
        if not diff.ok:
            lines.append(f"output {index}: {diff.summary()}")
    tag = "failure" if outcome.status == "mismatch" else "error"
    message = lines[1] if len(lines) > 1 else lines[0]
    element = ET.SubElement(case, tag, {"message": xml_text(message),
                                        "type": xml_text(signature or outcome.status)})
    element.text = xml_text("\n".join(lines))
    if outcome.notices:
        ET.SubElement(case, "system-out").text = xml_text("\n".join(outcome.notices))
    if outcome.detail:
        ET.SubElement(case, "system-err").text = xml_text(outcome.detail)
    return case
