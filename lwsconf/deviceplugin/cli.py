"""`lwsconf deviceplugin`: run the fake GPU device plugin against a kubelet until SIGTERM/SIGINT.

Why a command: on a real node (the kind backend's DaemonSet) the plugin is its own process next to
the kubelet, started as `python -m lwsconf.deviceplugin.cli` or through `lwsconf deviceplugin`.
It serves its socket, registers with kubelet.sock, re-registers after kubelet restarts, and on a
signal stops serving and removes its socket so the kubelet marks the devices unhealthy. Errors a
user can fix (a bad flag, an unusable socket directory) print one line and exit with status 2.

With `--registration registry --registry-dir <root-dir>/plugins_registry` it registers through that kubelet's
plugin watcher instead (how real nodes sharing one host each get their own plugin: `plugin` module docstring);
the plugin's socket then defaults to `<root-dir>/plugins/lwsconf/`, beside the registry, since every kubelet start
clears the sockets in the shared /var/lib/kubelet/device-plugins.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from lwsconf import deviceplugin as dp
from lwsconf.deviceplugin import plugin as plugin_mod


def build_parser(prog: str = "lwsconf deviceplugin") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Fake GPU (or TPU, --resource google.com/tpu) device "
                                     "plugin for the kubelet (API v1beta1).")
    parser.add_argument("--registration", choices=plugin_mod.REGISTRATIONS, default=plugin_mod.KUBELET_REGISTRATION,
                        help="kubelet: call Register on <socket-dir>/kubelet.sock; registry: serve a registration "
                             "socket in --registry-dir for that kubelet's plugin watcher (default: %(default)s)")
    parser.add_argument("--registry-dir", default=None,
                        help="with --registration registry: the kubelet's plugin registry, <root-dir>/plugins_registry")
    parser.add_argument("--socket-dir", default=None,
                        help="where the plugin serves its socket: the kubelet's device-plugin directory holding "
                             f"kubelet.sock (default: {dp.DEFAULT_SOCKET_DIR}); with --registration registry any "
                             "other directory (default: <registry-dir>/../plugins/lwsconf)")
    parser.add_argument("--count", type=int, default=8, help="number of fake devices (default: %(default)s)")
    parser.add_argument("--resource", default="nvidia.com/gpu", help="extended resource name (default: %(default)s)")
    parser.add_argument("--product", default=None,
                        help="value of LWSCONF_FAKE_GPU_PRODUCT (LWSCONF_FAKE_TPU_PRODUCT, ...) in allocated "
                             f"containers (default: {plugin_mod.DEFAULT_PRODUCT} for GPUs, "
                             f"{plugin_mod.DEFAULT_TPU_PRODUCT} for TPUs)")
    parser.add_argument("--env-prefix", default="MOCK_",
                        help="prefix of <prefix>NVIDIA_VISIBLE_DEVICES (<prefix>TPU_VISIBLE_DEVICES for TPUs); an "
                             "empty prefix would trigger a real NVIDIA runtime hook (default: %(default)s)")
    parser.add_argument("--node-name", default=None, help="node name used to derive stable device ids "
                        "(default: $NODE_NAME, else the host name)")
    parser.add_argument("--socket-name", default=None, help="the plugin's socket file name in --socket-dir")
    parser.add_argument("--poll-interval", type=float, default=1.0,
                        help="seconds between checks for a re-created kubelet.sock (default: %(default)s)")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = "lwsconf deviceplugin") -> int:
    """Parse `argv` (without the program name), run the plugin, return the exit code."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error(f"--count must be at least 1, got {args.count}")
    if args.poll_interval <= 0:
        parser.error(f"--poll-interval must be positive, got {args.poll_interval}")
    registry = args.registration == plugin_mod.REGISTRY_REGISTRATION
    if registry != (args.registry_dir is not None):
        parser.error("--registry-dir goes with --registration registry, and only with it")
    socket_dir = args.socket_dir or (
        str(Path(args.registry_dir).absolute().parent / "plugins" / "lwsconf") if registry else dp.DEFAULT_SOCKET_DIR)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        plugin = plugin_mod.FakeGPUPlugin(
            socket_dir, args.resource, args.count, product=args.product, env_prefix=args.env_prefix,
            node_name=args.node_name, socket_name=args.socket_name, poll_interval=args.poll_interval,
            registration=args.registration, registry_dir=args.registry_dir)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        asyncio.run(_serve_until_signalled(plugin))
    except (OSError, RuntimeError) as exc:  # e.g. an unwritable or missing --socket-dir
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    return 0


async def _serve_until_signalled(plugin: plugin_mod.FakeGPUPlugin) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await plugin.run(stop)
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


if __name__ == "__main__":
    sys.exit(main(prog="python -m lwsconf.deviceplugin.cli"))
