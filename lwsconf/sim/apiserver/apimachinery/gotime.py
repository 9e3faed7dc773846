"""Go's `time.Parse` for the two layouts Kubernetes' JSON times use, as far as a client can see: which strings
parse, and the error text of those that do not.

metav1.Time's UnmarshalJSON parses with `time.RFC3339` ("2006-01-02T15:04:05Z07:00") and metav1.MicroTime's with
RFC3339Micro ("2006-01-02T15:04:05.000000Z07:00"); a failure becomes kube-apiserver's 400, `Lease in version "v1"
cannot be handled as a Lease: parsing time "2026-01-01T00:00:00+00:00" as "2006-01-02T15:04:05.000000Z07:00":
cannot parse "+00:00" as ".000000"` (recorded from the official Python client, which writes datetimes that way).

The walk follows Go's `time.parse` (src/time/format.go) element by element for these layouts only: a literal that
does not match, or a number that does not parse, reports the value from that element on against the element
(`cannot parse "<rest>" as "<element>"`); a number out of range reports `<what> out of range`; text left over is
`extra text`. A fraction right after the seconds is read even where the layout has none (Go's special case), and
where the layout has `.000000` it must have exactly six digits. Pure: no I/O.
"""

from __future__ import annotations

import calendar
import json

RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"

_ELEMENTS = {
    RFC3339: ["2006", "-", "01", "-", "02", "T", "15", ":", "04", ":", "05", "Z07:00"],
    RFC3339_MICRO: ["2006", "-", "01", "-", "02", "T", "15", ":", "04", ":", "05", ".000000", "Z07:00"],
}
_NUMBERS = {"01": ("month", 1, 12), "02": ("day", 1, 31), "15": ("hour", 0, 23), "04": ("minute", 0, 59),
            "05": ("second", 0, 59)}


class _Bad(Exception):
    """Go's errBad at one element: `cannot parse "<value>" as "<element>"`."""

    def __init__(self, value: str, element: str) -> None:
        super().__init__(value, element)
        self.value, self.element = value, element


def _quote(text: str) -> str:
    """Go's time.quote for ASCII text: double quotes, backslash and quote escaped."""
    return json.dumps(text)


def _number(value: str, fixed: bool) -> tuple[int, str] | None:
    """Go's getnum: two digits (one when not `fixed` and the second is no digit); None is errBad."""
    if not value[:1].isdigit():
        return None
    if not value[1:2].isdigit():
        return None if fixed else (int(value[0]), value[1:])
    return int(value[:2]), value[2:]


def _zone(value: str) -> str:
    """stdISO8601ColonTZ: `Z`, or `+hh:mm` / `-hh:mm`; the rest of the value."""
    if value[:1] == "Z":
        return value[1:]
    if len(value) < 6 or value[3] != ":":
        raise _Bad(value, "Z07:00")
    hours, minutes = _number(value[1:3], True), _number(value[4:6], True)
    if hours is not None and minutes is not None:  # Go tests the ranges before the sign
        if minutes[0] > 60:
            raise ValueError("time zone offset minute")
        if hours[0] > 24:
            raise ValueError("time zone offset hour")
    if hours is None or minutes is None or value[0] not in "+-":
        raise _Bad(value, "Z07:00")
    return value[6:]


def _fraction(value: str) -> str:
    """Go's special case: `.ddd` or `,ddd` right after the seconds, any number of digits, in any layout."""
    if len(value) >= 2 and value[0] in ".," and value[1].isdigit():
        end = 1
        while end < len(value) and value[end].isdigit():
            end += 1
        return value[end:]
    return value


def parse_error(layout: str, value: str) -> str | None:
    """Go's `time.Parse(layout, value)` error text, or None when it parses (`layout` is RFC3339 or RFC3339_MICRO)."""
    head = f"parsing time {_quote(value)}"
    rest, numbers = value, {}
    elements = _ELEMENTS[layout]
    try:
        for i, element in enumerate(elements):
            if element == "2006":
                if len(rest) < 4 or not rest[:4].isdigit():
                    raise _Bad(rest, element)
                numbers["year"], rest = int(rest[:4]), rest[4:]
            elif element in _NUMBERS:
                what, low, high = _NUMBERS[element]
                got = _number(rest, fixed=element != "15")
                if got is None:
                    raise _Bad(rest, element)
                numbers[what], rest = got
                if what != "day" and not low <= numbers[what] <= high:
                    return f"{head}: {what} out of range"
                if element == "05" and (i + 1 == len(elements) or elements[i + 1] != ".000000"):
                    rest = _fraction(rest)
            elif element == ".000000":
                if len(rest) < 7 or rest[0] not in ".," or not rest[1:7].isdigit():
                    raise _Bad(rest, element)
                rest = rest[7:]
            elif element == "Z07:00":
                rest = _zone(rest)
            elif not rest.startswith(element):
                raise _Bad(rest, element)
            else:
                rest = rest[len(element):]
    except _Bad as bad:
        return f"{head} as {_quote(layout)}: cannot parse {_quote(bad.value)} as {_quote(bad.element)}"
    except ValueError as out_of_range:
        return f"{head}: {out_of_range} out of range"
    if rest:
        return f"{head}: extra text: {_quote(rest)}"
    if not 1 <= numbers["day"] <= calendar.monthrange(numbers["year"], numbers["month"])[1]:
        return f"{head}: day out of range"
    return None
