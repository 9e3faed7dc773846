"""The WebSocket channel protocol of exec and attach (`v4.channel.k8s.io`, `v5.channel.k8s.io`).

Every binary message starts with one byte naming its channel: 0 stdin, 1 stdout, 2 stderr, 3 the
error channel (one JSON `Status` when the command ends), 4 terminal resize events (JSON
`{"Width":W,"Height":H}`, one per line). Version 5 adds the close signal, a message `[255, channel]`
by which the client half-closes stdin (client-go tools/remotecommand/websocket.go, `stream.Close`);
version 4 has no way to end stdin but closing the connection. The client decides how the command
ended from the error channel: `Success`, or `Failure` with reason `NonZeroExitCode` and a cause of
type `ExitCode` whose message is the code (client-go tools/remotecommand/v4.go, `errorDecoderV4`);
any other `Failure` is printed as its message. Text messages are taken as UTF-8 bytes (some clients
send them), whatever their protocol.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
PROTOCOLS = (V5, V4)
"""What we serve, preferred first; kubectl 1.37 offers only v5, the Python client only v4."""

STDIN, STDOUT, STDERR, ERROR, RESIZE = 0, 1, 2, 3, 4
CLOSE = 255
"""v5 only: `[CLOSE, channel]` half-closes that channel."""

NON_ZERO_EXIT = "NonZeroExitCode"
EXIT_CODE_CAUSE = "ExitCode"


@dataclass(frozen=True)
class Data:
    """Bytes for one channel."""

    channel: int
    data: bytes


@dataclass(frozen=True)
class Closed:
    """The peer half-closed `channel` (v5 close signal)."""

    channel: int


Message = Data | Closed


class ProtocolError(ValueError):
    """A message that is not a channel-protocol message."""


def frame(channel: int, data: bytes) -> bytes:
    """One message: the channel byte, then the data."""
    if not 0 <= channel <= 255:
        raise ValueError(f"channel {channel} is not a byte")
    return bytes((channel,)) + data


def close_signal(channel: int) -> bytes:
    return bytes((CLOSE, channel))


def parse(message: bytes | str, protocol: str) -> Message:
    """A received message as Data or, under v5, Closed; ProtocolError when it is empty."""
    raw = message.encode() if isinstance(message, str) else message
    if not raw:
        raise ProtocolError("an empty message carries no channel byte")
    channel, data = raw[0], raw[1:]
    if channel == CLOSE and protocol == V5:
        if len(data) != 1:
            raise ProtocolError(f"a close signal names one channel, got {len(data)} bytes")
        return Closed(data[0])
    return Data(channel, data)


def success() -> bytes:
    """The error-channel message of a command that exited 0."""
    return json.dumps({"metadata": {}, "status": "Success"}).encode()


def exit_status(code: int) -> bytes:
    """The error-channel message of a command that exited `code` (0: `success()`)."""
    if code == 0:
        return success()
    return json.dumps({
        "metadata": {}, "status": "Failure", "reason": NON_ZERO_EXIT,
        "message": f"command terminated with non-zero exit code: exit status {code}",
        "details": {"causes": [{"reason": EXIT_CODE_CAUSE, "message": str(code)}]},
    }).encode()


def failure(message: str, reason: str = "InternalError", code: int = 500) -> bytes:
    """An error-channel message for a command that could not run; kubectl prints `message`."""
    return json.dumps({"metadata": {}, "status": "Failure", "message": message, "reason": reason,
                       "code": code}).encode()


def resize_events(data: bytes) -> list[tuple[int, int]]:
    """(width, height) of each JSON object in a resize message; malformed ones are skipped."""
    sizes = []
    for line in data.decode(errors="replace").splitlines():
        try:
            event = json.loads(line)
            sizes.append((int(event["Width"]), int(event["Height"])))
        except (ValueError, KeyError, TypeError):
            continue
    return sizes
