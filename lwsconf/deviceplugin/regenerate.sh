#!/usr/bin/env bash
# Regenerates the Python modules for lwsconf/deviceplugin/{v1beta1,pluginregistration}.proto.
#
# Development-only tools (the runtime needs just grpcio and protobuf):
#   .venv/bin/python -m pip install 'grpcio-tools>=1.85,<2' 'mypy-protobuf>=5.1,<6'
# grpcio-tools writes the message and service modules; mypy-protobuf writes typed stubs (.pyi) so
# that our own modules stay `mypy --strict` clean. Run from anywhere; commit the eight files it writes.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-$root/.venv/bin/python}"
bindir="$(dirname "$python")"
if ! "$python" -c 'import grpc_tools' 2>/dev/null || [ ! -x "$bindir/protoc-gen-mypy_grpc" ]; then
  echo "grpcio-tools or mypy-protobuf is missing for $python: install them with" >&2
  echo "  $python -m pip install 'grpcio-tools>=1.85,<2' 'mypy-protobuf>=5.1,<6'" >&2
  exit 1
fi
cd "$root"
# The include root is the repository root, so the generated code imports
# "lwsconf.deviceplugin.v1beta1_pb2" instead of a top-level "v1beta1_pb2".
PATH="$bindir:$PATH" "$python" -m grpc_tools.protoc -I. \
  --python_out=. --grpc_python_out=. --mypy_out=. --mypy_grpc_out=. \
  lwsconf/deviceplugin/v1beta1.proto lwsconf/deviceplugin/pluginregistration.proto
# Generated code follows neither our lint rules nor strict typing: exempt those files only.
for stem in v1beta1 pluginregistration; do
  for f in "${stem}_pb2.py" "${stem}_pb2_grpc.py" "${stem}_pb2.pyi" "${stem}_pb2_grpc.pyi"; do
    path="lwsconf/deviceplugin/$f"
    { printf '# ruff: noqa\n# mypy: ignore-errors\n'; cat "$path"; } >"$path.tmp"
    mv "$path.tmp" "$path"
  done
done
echo "regenerated lwsconf/deviceplugin/{v1beta1,pluginregistration}_pb2{,_grpc}.py{,i}"
