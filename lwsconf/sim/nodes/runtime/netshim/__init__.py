"""The network interposer (`netshim.c`: binds of all addresses to the pod IP, no connection or datagram to an
address off the machine's loopback), compiled on first use with the machine's C compiler and cached.

Why a C library: native code calls libc directly, past the Python shim; LD_PRELOAD is the one way to reach it
without changing the program. The build is one `cc -shared` call (about 0.1 s), keyed by the source's hash, so
an edited source is rebuilt and concurrent builds never see a half-written file (write, then rename).

It may import no other node package: the runtime preloads it (`runtime.ProcessRuntime`), for mapped images only
(`imageruntimes`); of lwsconf only `lwsconf.controlplane.build`'s cache folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from lwsconf.controlplane.build import cache_root

SOURCE = Path(__file__).resolve().parent / "netshim.c"


class NetShimError(OSError):
    """The interposer cannot be built; the message says what to install. An OSError, so the container that needed
    it fails to start (StartError) with this message in its status, as the runtime's other start failures do."""


def cache_dir() -> Path:
    return cache_root() / "netshim"


def library() -> Path:
    """The compiled interposer's path, built now if this source has not been built before.

    Raises:
        NetShimError: no C compiler, or the compile failed (its output in the message).
    """
    source = SOURCE.read_bytes()
    target = cache_dir() / f"netshim-{hashlib.sha256(source).hexdigest()[:16]}.so"
    if target.is_file():
        return target
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise NetShimError("no C compiler to build the network interposer for mapped images (apt-get install gcc, "
                            "or set CC)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        built = Path(tmp) / target.name
        done = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(built), str(SOURCE), "-ldl"],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise NetShimError(f"building the network interposer failed ({compiler}, exit {done.returncode}): "
                                f"{done.stderr.strip()}")
        os.replace(built, target)
    return target
