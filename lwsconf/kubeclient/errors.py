"""The sim client's exceptions: one family, `KubeClientError`, in two kinds.

`ApiError` means the server answered with a failure `Status` (with helpers for the cases controllers
branch on); `TransportError` means there was no usable answer at all. No I/O here.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


class KubeClientError(Exception):
    """Anything that went wrong talking to the API server."""


class TransportError(KubeClientError):
    """No HTTP answer: connection refused or dropped, timeout, or an unreadable response."""


class ApiError(KubeClientError):
    """The server answered with a failure (its `Status` body is kept in `body`)."""

    def __init__(self, status: int, reason: str, body: Obj) -> None:
        self.status = status
        self.reason = reason
        self.body = body
        super().__init__(f"{status} {reason}: {body.get('message') or '(no message)'}")

    @classmethod
    def from_status(cls, status: int, body: Obj) -> ApiError:
        """Build from an HTTP status and the (possibly non-Status) JSON body."""
        reason = str(body.get("reason") or ("Gone" if status == 410 else "Unknown"))
        return cls(int(body.get("code") or status), reason, body)

    @property
    def is_not_found(self) -> bool:
        return self.status == 404

    @property
    def is_conflict(self) -> bool:
        """409 other than AlreadyExists: a stale resourceVersion or a failed precondition."""
        return self.status == 409 and self.reason != "AlreadyExists"

    @property
    def is_already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def is_gone(self) -> bool:
        """410 Expired/Gone: the resourceVersion is too old to watch from; relist."""
        return self.status == 410
