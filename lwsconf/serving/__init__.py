"""Serving workloads as the suite deploys and drives them: the `ServingServer` interface (`servers`), real vLLM
and the emulator in vLLM's manifest (`vllm`), and traffic through a Service (`traffic`).

The emulated server itself is a program of its own, `lwsconf.emulator` (mounted into pods like the probe); this
package builds on `lwsconf.workloads`, which builds the emulator's ConfigMap, and nothing below imports it back.
"""
