"""Differences judged acceptable, by interaction id, each with its reason (printed on the page).

An entry here does not count as identical: the page's percentage counts only identical answers. An
entry is for a difference that is not the sim being wrong in a way a client can notice, or that
depends on something the sim deliberately does not have; the reason says which.
"""

from __future__ import annotations

ACCEPTED: dict[str, str] = {}
