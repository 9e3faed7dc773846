"""`lwsconf protobuf generate`: the Kubernetes protobuf schema the sim API server speaks, from the Go modules.

Writes two files into `schema/` beside this module, both committed so that the sim needs neither Go nor
protoc at run time (`make conformance` works on a machine without Go):

* `k8s.binpb` - a `FileDescriptorSet` compiled by grpcio-tools' protoc from the official `generated.proto`
  of `k8s.io/api` (every group), `k8s.io/apiextensions-apiserver` (apiextensions/v1) and, through their
  imports, `k8s.io/apimachinery`, at `MODULE_VERSION`; the `.proto` sources themselves are not copied;
* `gofields.json` - per message, what only the Go struct tags say (`gostructs`): JSON names, inlining,
  pointers and omitempty, which the codec needs to give protobuf objects their JSON shape.

Needs Go (for `go mod download -json`, which finds or fetches the modules) and grpcio-tools
(`pip install 'grpcio-tools>=1.85,<2'`). Run it again after moving `MODULE_VERSION`, and commit both files.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from google.protobuf import descriptor_pb2

from lwsconf.sim.apiserver.protobuf import gostructs

MODULE_VERSION = "v0.37.2"
"""The k8s.io staging modules' version: that of the Kubernetes release the sim answers as (1.37)."""
MODULES = ("k8s.io/api", "k8s.io/apimachinery", "k8s.io/apiextensions-apiserver")
EXTRA_PROTOS = ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/generated.proto",)
SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
GO_DOWNLOAD_TIMEOUT_SECONDS = 600.0
"""`go mod download` of the three modules on a cold cache."""
PROTOC_TIMEOUT_SECONDS = 300.0


class GenerateError(RuntimeError):
    """A missing tool or module, worded with what to do."""


def module_dirs(go: str, version: str = MODULE_VERSION) -> dict[str, Path]:
    """Module path -> its extracted folder in the Go module cache (downloaded when absent)."""
    with tempfile.TemporaryDirectory(prefix="lwsconf-protobuf-") as scratch:
        env = {**os.environ, "GOFLAGS": "-mod=mod", "GO111MODULE": "on"}
        result = subprocess.run([go, "mod", "download", "-json", *(f"{m}@{version}" for m in MODULES)],
                                cwd=scratch, env=env, capture_output=True, text=True,
                                timeout=GO_DOWNLOAD_TIMEOUT_SECONDS, check=False)
    decoder = json.JSONDecoder()
    text, found = result.stdout.strip(), {}
    while text:
        record, end = decoder.raw_decode(text)
        text = text[end:].strip()
        if record.get("Error") or not record.get("Dir"):
            raise GenerateError(f"go mod download {record.get('Path')}@{version}: {record.get('Error')}")
        found[record["Path"]] = Path(record["Dir"])
    missing = [m for m in MODULES if m not in found]
    if missing:
        raise GenerateError(f"go mod download gave no folder for {missing}: {result.stderr.strip()}")
    return found


def compile_descriptors(dirs: dict[str, Path]) -> bytes:
    """The serialized FileDescriptorSet of every k8s.io/api generated.proto plus apiextensions/v1."""
    with tempfile.TemporaryDirectory(prefix="lwsconf-protoc-") as scratch:
        root = Path(scratch)
        (root / "k8s.io").mkdir()
        for module, folder in dirs.items():
            (root / module).symlink_to(folder, target_is_directory=True)
        protos = sorted(str(p.relative_to(root)) for p in (root / "k8s.io/api").glob("**/generated.proto"))
        out = root / "k8s.binpb"
        result = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{root}", "--include_imports",
                                 f"--descriptor_set_out={out}", *protos, *EXTRA_PROTOS],
                                cwd=root, capture_output=True, text=True, timeout=PROTOC_TIMEOUT_SECONDS,
                                check=False)
        if result.returncode != 0 or not out.exists():
            raise GenerateError(f"protoc failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
        return out.read_bytes()


def go_fields(descriptors: bytes, dirs: dict[str, Path]) -> dict[str, object]:
    """gofields.json: per message full name, field number -> [json name, pointer, omitempty, omitzero, Go type]."""
    files = descriptor_pb2.FileDescriptorSet.FromString(descriptors).file
    messages: dict[str, dict[str, list[object]]] = {}
    lists: list[str] = []
    for file in files:
        module = next((m for m in MODULES if file.name.startswith(m + "/")), None)
        if module is None:
            continue
        package_dir = dirs[module] / Path(file.name).parent.relative_to(module)
        structs: dict[str, list[gostructs.GoField]] = {}
        slices: set[str] = set()
        for source in sorted(package_dir.glob("*.go")):
            if source.name.endswith("_test.go") or source.name.startswith(("generated.", "zz_generated")):
                continue
            text = source.read_text()
            structs.update(gostructs.parse_structs(text))
            slices |= gostructs.named_slices(text)
        for message in file.message_type:
            full = f"{file.package}.{message.name}"
            if message.name in slices:
                lists.append(full)
            fields = structs.get(message.name)
            if fields:
                messages[full] = {str(f.number): [f.json, f.pointer, f.omitempty, f.omitzero, f.gotype]
                                  for f in fields}
    return {"moduleVersion": MODULE_VERSION, "modules": list(MODULES), "messages": messages,
            "lists": sorted(lists)}


def generate(go: str, out_dir: Path = SCHEMA_DIR) -> list[Path]:
    if shutil.which("protoc", path=str(Path(sys.executable).parent)) is None:
        try:
            import grpc_tools  # noqa: F401
        except ImportError:
            raise GenerateError(f"grpcio-tools is missing: {sys.executable} -m pip install "
                                "'grpcio-tools>=1.85,<2'") from None
    dirs = module_dirs(go)
    descriptors = compile_descriptors(dirs)
    out_dir.mkdir(parents=True, exist_ok=True)
    binpb, fields = out_dir / "k8s.binpb", out_dir / "gofields.json"
    binpb.write_bytes(descriptors)
    fields.write_text(json.dumps(go_fields(descriptors, dirs), indent=0, sort_keys=True) + "\n")
    return [binpb, fields]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lwsconf protobuf", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="regenerate schema/k8s.binpb and schema/gofields.json")
    gen.add_argument("--go", default=shutil.which("go") or "go", help="the go command (default: go on PATH)")
    gen.add_argument("--out", type=Path, default=SCHEMA_DIR, help="output folder (default: the committed one)")
    args = parser.parse_args(argv)
    try:
        written = generate(args.go, args.out)
    except (GenerateError, FileNotFoundError, subprocess.TimeoutExpired) as exc:
        print(f"lwsconf protobuf generate: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0
