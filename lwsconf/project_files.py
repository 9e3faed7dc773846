"""Where the top-level folders of the lwsconf source tree are, in a checkout and in an installed wheel.

`manifests/` (our CRD and policies, the device plugin DaemonSet), `controlplane/`, `nodes/` and `upstream/` (the
pinned go.mod/go.sum the real components are built from) sit beside the `lwsconf` package in a checkout.
A wheel carries them in `lwsconf/_suite/` with the suite (setup.py), so the same code finds them both ways.
"""

from __future__ import annotations

from pathlib import Path

import lwsconf

SHIPPED = ("manifests", "controlplane", "nodes", "upstream")
"""The folders setup.py copies into the wheel besides the suite itself."""


INSTALLED_SUITE = "_suite"
"""The folder of the `lwsconf` package that holds these folders and the suite in a wheel (setup.py)."""


def roots(package_dir: Path | None = None) -> tuple[Path, Path]:
    """Where the source tree's top-level folders may be, in the order they are looked for: the checkout around
    the package, then the wheel's `lwsconf/_suite/`."""
    package = package_dir or Path(lwsconf.__file__).resolve().parent
    return package.parent, package / INSTALLED_SUITE


def project_dir(name: str, package_dir: Path | None = None) -> Path:
    """The folder `name` of the source tree: the checkout's, else the wheel's copy; when neither exists,
    the checkout path, so the caller's "missing file" error names where it looked."""
    checkout, installed = roots(package_dir)
    for base in (checkout, installed):
        if (base / name).is_dir():
            return base / name
    return checkout / name
