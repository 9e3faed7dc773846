"""The Kubernetes protobuf schema at run time: message classes from the committed descriptor set.

`schema/k8s.binpb` and `schema/gofields.json` are written by `lwsconf protobuf generate` (see `generate`);
this module only reads them, so serving protobuf needs neither Go nor protoc. Message classes are built
from the descriptors (`message_factory`), not from generated Python modules: the codec walks descriptors,
so one generic walk serves every kind.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import descriptor, descriptor_pb2, descriptor_pool, message, message_factory

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
META = "k8s.io.apimachinery.pkg.apis.meta.v1"
RUNTIME = "k8s.io.apimachinery.pkg.runtime"


@dataclass(frozen=True)
class FieldInfo:
    """What the Go struct says of one proto field (`gostructs.GoField`)."""

    json: str
    """JSON name; "" when inlined into the parent's JSON object."""
    pointer: bool
    omitempty: bool
    omitzero: bool = False
    gotype: str = ""
    """reflect's name of the Go type (`gostructs.GoField.gotype`); "" when unknown."""


class Schema:
    """Descriptors, Go field facts and the (apiVersion, kind) -> message index."""

    def __init__(self, schema_dir: Path = SCHEMA_DIR) -> None:
        files = descriptor_pb2.FileDescriptorSet.FromString((schema_dir / "k8s.binpb").read_bytes())
        self.pool = descriptor_pool.DescriptorPool()
        for file in files.file:
            self.pool.Add(file)
        facts = json.loads((schema_dir / "gofields.json").read_text())
        self.module_version: str = facts["moduleVersion"]
        self.fields: dict[str, dict[int, FieldInfo]] = {
            name: {int(number): FieldInfo(*row) for number, row in rows.items()}
            for name, rows in facts["messages"].items()}
        self.lists: frozenset[str] = frozenset(facts["lists"])
        self._by_group_version: dict[tuple[str, str], list[str]] = {}
        self._names: set[str] = set()
        self._found: dict[tuple[str, str], str | None] = {}
        for file in files.file:
            parts = file.package.split(".")
            self._by_group_version.setdefault((parts[-2], parts[-1]), []).append(file.package)
            self._names.update(f"{file.package}.{m.name}" for m in file.message_type)

    def descriptor(self, full_name: str) -> descriptor.Descriptor:
        return self.pool.FindMessageTypeByName(full_name)

    def new(self, full_name: str) -> message.Message:
        return message_factory.GetMessageClass(self.descriptor(full_name))()

    def field_info(self, field: Any) -> FieldInfo:
        """The Go facts of a field; a message with no Go struct (none in practice) reads as all pointers."""
        found = self.fields.get(field.containing_type.full_name, {}).get(field.number)
        return found if found is not None else FieldInfo(field.name, True, True)

    def message_name(self, api_version: str, kind: str) -> str | None:
        """The message of a kind served at `api_version` (`apps/v1`, `v1`), or None when Kubernetes has none.

        The proto package ends in `<group's first label>.<version>` (`k8s.io.api.apps.v1`,
        `k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1`); the core group is `core`. Kinds every
        group version serves from meta.k8s.io (Status, DeleteOptions, WatchEvent, ...) fall back to meta/v1.
        """
        key = (api_version, kind)
        if key not in self._found:
            self._found[key] = self._find(api_version, kind)
        return self._found[key]

    def _find(self, api_version: str, kind: str) -> str | None:
        group, _, version = api_version.rpartition("/")
        short = group.split(".")[0] if group else "core"
        for package in self._by_group_version.get((short, version), []):
            if f"{package}.{kind}" in self._names:
                return f"{package}.{kind}"
        if version == "v1" and f"{META}.{kind}" in self._names:
            return f"{META}.{kind}"
        return None


@functools.cache
def load() -> Schema:
    """The one schema of the process (reading and indexing it takes a few hundred milliseconds)."""
    return Schema()
