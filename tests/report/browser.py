"""Headless Chromium for the report tests: find it, install Debian's package if missing, run it.

Only where it cannot be installed (not root, no apt-get, no package source) do callers skip, with
the reason. Installs are serialized with a file lock so parallel test workers do not fight over dpkg.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

LOCK = Path("/tmp/lwsconf-chromium-install.lock")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--hide-scrollbars"]


def _apt(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(["apt-get", *args], capture_output=True, text=True, timeout=900, env=env)


def chromium() -> str:
    """The chromium binary; installs Debian's `chromium` package when missing, or skips saying why not."""
    found = shutil.which("chromium")
    if found:
        return found
    if not shutil.which("apt-get"):
        pytest.skip("chromium is not installed and this machine has no apt-get to install it; "
                    "install Chromium to run the report rendering test")
    if os.geteuid() != 0:
        pytest.skip("chromium is not installed and installing it needs root: run `sudo apt-get install -y chromium`")
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not shutil.which("chromium"):
            done = _apt("install", "-y", "-q", "chromium")
            if done.returncode != 0:
                _apt("update", "-q")
                done = _apt("install", "-y", "-q", "chromium")
            if done.returncode != 0:
                pytest.skip(f"chromium could not be installed with apt-get: {done.stderr.strip()[-300:]}")
    return shutil.which("chromium") or pytest.fail("apt-get installed chromium but it is not on PATH")


def run(url: str, *, user_data: Path, extra: list[str]) -> subprocess.CompletedProcess[str]:
    cmd = [chromium(), *FLAGS, f"--user-data-dir={user_data}", *extra, url]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"chromium exited {proc.returncode}: {proc.stderr[-1500:]}"
    return proc


def dump_dom(url: str, *, user_data: Path) -> str:
    """The DOM after the page's scripts ran."""
    return run(url, user_data=user_data, extra=["--dump-dom", "--virtual-time-budget=2000"]).stdout


def screenshot(url: str, out: Path, *, user_data: Path, size: tuple[int, int] = (1280, 1600)) -> Path:
    run(url, user_data=user_data, extra=[f"--screenshot={out}", f"--window-size={size[0]},{size[1]}"])
    assert out.is_file(), f"chromium wrote no screenshot at {out}"
    return out


def png_facts(path: Path) -> tuple[int, int, int]:
    """(width, height, distinct byte values in the pixel data): a blank page has very few."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    return width, height, len(set(zlib.decompress(idat)))
