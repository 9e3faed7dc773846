"""The channel protocol and stream options, checked against how client-go reads them."""

from __future__ import annotations

import json

import pytest

from lwsconf.streaming import channels, options


def client_go_exit(message: bytes) -> int | str:
    """What client-go's errorDecoderV4 makes of an error-channel message: 0, an exit code, or an error text."""
    status = json.loads(message)
    if status["status"] == "Success":
        return 0
    if status.get("reason") == "NonZeroExitCode":
        causes = [c for c in status["details"]["causes"] if c["reason"] == "ExitCode"]
        return int(causes[0]["message"])
    return str(status["message"])


def test_frames_carry_their_channel_first() -> None:
    assert channels.frame(channels.STDOUT, b"hi") == b"\x01hi"
    assert channels.parse(b"\x00abc", channels.V5) == channels.Data(channels.STDIN, b"abc")
    assert channels.parse("\x04{}", channels.V4) == channels.Data(channels.RESIZE, b"{}")
    with pytest.raises(channels.ProtocolError, match="no channel byte"):
        channels.parse(b"", channels.V5)
    with pytest.raises(ValueError, match="not a byte"):
        channels.frame(256, b"")


def test_close_signal_exists_only_in_v5() -> None:
    signal = channels.close_signal(channels.STDIN)
    assert signal == b"\xff\x00"
    assert channels.parse(signal, channels.V5) == channels.Closed(channels.STDIN)
    assert channels.parse(signal, channels.V4) == channels.Data(255, b"\x00")
    with pytest.raises(channels.ProtocolError, match="one channel"):
        channels.parse(b"\xff\x00\x01", channels.V5)


@pytest.mark.parametrize("code", [0, 1, 3, 127, 137])
def test_exit_status_decodes_as_client_go_does(code: int) -> None:
    assert client_go_exit(channels.exit_status(code)) == code


def test_failure_is_printed_as_its_message() -> None:
    assert client_go_exit(channels.failure("container is emulated")) == "container is emulated"


def test_resize_events_one_json_object_per_line() -> None:
    data = b'{"Width":100,"Height":40}\n{"Width":80,"Height":24}\nnot json\n{"Width":1}\n'
    assert channels.resize_events(data) == [(100, 40), (80, 24)]


def test_api_options_become_the_kubelet_query() -> None:
    query = [("command", "python"), ("command", "-c"), ("command", "print(1)"), ("stdin", "true"),
             ("stdout", "true"), ("stderr", "true"), ("tty", "false"), ("container", "main")]
    opts = options.from_api_query(query, exec_=True)
    assert opts == options.StreamOptions(True, True, True, False, ("python", "-c", "print(1)"))
    assert opts.kubelet_query() == [("input", "1"), ("output", "1"), ("error", "1"), ("command", "python"),
                                    ("command", "-c"), ("command", "print(1)")]
    back = options.from_kubelet_query(opts.kubelet_query())
    assert back == opts


def test_api_options_refused_as_the_api_server_refuses_them() -> None:
    with pytest.raises(options.BadOptions, match="at least one command"):
        options.from_api_query([("stdout", "true")], exec_=True)
    with pytest.raises(options.BadOptions, match="at least 1 of stdin, stdout, stderr"):
        options.from_api_query([("command", "ls")], exec_=True)
    assert options.from_api_query([("stdout", "true")], exec_=False).command == ()


def test_kubelet_drops_stderr_under_a_tty_and_needs_a_stream() -> None:
    opts = options.from_kubelet_query([("output", "1"), ("error", "1"), ("tty", "1"), ("command", "sh")])
    assert (opts.stdout, opts.stderr, opts.tty) == (True, False, True)
    with pytest.raises(options.BadOptions, match="at least 1"):
        options.from_kubelet_query([("tty", "1"), ("error", "1"), ("command", "sh")])
