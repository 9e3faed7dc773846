"""Every repository path ARCHITECTURE.md names exists (issue 35, item 6).

A map that names a moved or renamed module sends a reader to nothing, and nobody notices while the code
still runs: ARCHITECTURE.md had `Implementation` in `fixtures/implementations.py` after it moved to
`fixtures/implementation.py`. This reads every backticked name and every link target of the document and
checks the ones that name the repository:

* a path from a top-level entry (`fixtures/implementation.py`, `lwsconf/sim/nodes/`) exists as written;
* a dotted module (`lwsconf.sim.nodes.fleet`) is a module or package, and what follows it
  (`lwsconf.upstream.run.Upgrade`, `lwsconf/sim/cluster.default_controllers()`) is a name the module defines;
* a path written relative to the folder its section is about (`http/reviews.py`, `runtime/runtime.py`,
  `storage/resources.BUILTINS`) exists under some folder of the repository, with the same rule for names.

Where the document places a class or function in a module, "`Implementation` (`fixtures/implementation.py`"
or "(`cluster.py`: `LocalCluster`", the module defines it (a re-export does not count: that is how
`fixtures/implementations.py` passed for `Implementation`).

What is not a repository path is left alone: commands (a space), placeholders (`<run-id>`, `*.yaml`),
absolute paths (`/etc/hosts`, the kubelet's `/exec`), addresses, and the API's own slashed names, listed in
NOT_PATHS with what each is.
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "ARCHITECTURE.md"
PACKAGES = ("lwsconf", "fixtures", "conformance", "tests", "bench")
FILE_SUFFIXES = (".py", ".yaml", ".yml", ".md", ".json", ".toml", ".c", ".go", ".mod", ".html", ".txt", ".cfg")
NOT_PATHS = {
    "pods/binding": "an API subresource",
    "pods/eviction": "an API subresource",
    "nodes/proxy": "the RBAC resource a kubelet authorises",
    "admissionregistration.k8s.io/v1": "an API group version",
    "application/vnd.kubernetes.protobuf": "a media type",
    "config/": "the folder of upstream LWS's Go module that its CRDs are read from",
    "lwsconf/plugin/": "where the document says the plugin is not (Departures from the style guide)",
}
GENERATED = {"bench/results.json": "written by make bench", "reports/": "git-ignored run output",
             "timeline.json": "written by each run into its report folder",
             "lwsconf/_suite/": "made only in a wheel: setup.py copies the suite there"}


def names_in(text: str) -> list[str]:
    """The backticked names and link targets of a Markdown text, in order."""
    ticks = re.findall(r"`([^`\n]+)`", text)
    links = [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t and not t.startswith("#")]
    return ticks + links


def is_repository_name(name: str) -> bool:
    if re.search(r"[\s<>*{}$=|\\]", name) or name.startswith(("/", "-", "~", ".")) or name[0].isdigit():
        return False
    if name.rstrip("/") in {n.rstrip("/") for n in NOT_PATHS} or ".k8s.io" in name or "x-k8s.io" in name:
        return False
    if "/" in name:
        return True
    return name.endswith(FILE_SUFFIXES) or bool(re.match(rf"^({'|'.join(PACKAGES)})\.[a-z_]", name))


@functools.cache
def tracked(root: Path) -> frozenset[str]:
    """Every file and folder of the checkout (`git ls-files`, plus each file's folders)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=root,
                         capture_output=True, text=True, check=True).stdout.split()
    folders = {str(Path(f).parents[i]) + "/" for f in out for i in range(len(Path(f).parents) - 1)}
    return frozenset(out) | frozenset(folders)


def defined_names(path: Path, *, imported: bool = True) -> set[str]:
    """The names a module defines at its top level (classes, functions, assignments; imports unless not
    `imported`)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif imported and isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _candidates(root: Path, rel: str, anywhere: bool) -> list[str]:
    """The repository entries `rel` names (a folder with or without its slash): itself, or when `anywhere`
    (a path relative to the folder its section is about) every entry ending in /rel."""
    entries = tracked(root)
    forms = {rel, rel.rstrip("/") + "/"} if not rel.endswith(FILE_SUFFIXES) else {rel}
    return sorted(e for e in entries for form in forms if e == form or (anywhere and e.endswith("/" + form)))


def _modules(root: Path, module: str, anywhere: bool) -> list[str]:
    return _candidates(root, module + ".py", anywhere) + _candidates(root, module + "/__init__.py", anywhere)


def problem(root: Path, name: str) -> str | None:
    """Why `name` names nothing in the repository at `root`, or None when it does."""
    name = name.removesuffix("()").rstrip(":,")
    if name in GENERATED or name.split("/")[0] + "/" in GENERATED:
        return None
    if "/" not in name and not name.endswith(FILE_SUFFIXES):  # a dotted module, then names it defines
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            found = _modules(root, "/".join(parts[:cut]), False)
            if found:
                if cut == len(parts) or parts[cut] in defined_names(root / found[0]):
                    return None
                return f"{name}: {found[0]} defines no {parts[cut]}"
        return f"{name}: no such module"
    anywhere = name.split("/")[0] not in {p.name for p in root.iterdir()}
    if _candidates(root, name, anywhere):
        return None
    stem, dot, attr = name.rpartition(".")
    if dot and "/" not in attr and not name.endswith(FILE_SUFFIXES):  # a module path, then a name it defines
        found = _modules(root, stem, anywhere)
        if any(attr.split(".")[0] in defined_names(root / f) for f in found):
            return None
        if found:
            return f"{name}: {found[0]} defines no {attr.split('.')[0]}"
    return f"{name}: no such file or folder"


PLACED = (re.compile(r"`(?P<name>[A-Z][A-Za-z0-9_]+)` \(`(?P<path>[^`\s]+\.py)`"),
          re.compile(r"\(`(?P<path>[^`\s]+\.py)`: `(?P<name>[A-Z][A-Za-z0-9_]+)`"))
"""Where the document places a name in a module: "`Name` (`path.py`" and "(`path.py`: `Name`"."""


def misplaced(root: Path, text: str) -> list[str]:
    out = []
    for pattern in PLACED:
        for match in pattern.finditer(text):
            path, name = match["path"], match["name"]
            found = _candidates(root, path, path.split("/")[0] not in {p.name for p in root.iterdir()})
            if found and not any(name in defined_names(root / f, imported=False) for f in found):
                out.append(f"{name} is not defined in {path} ({', '.join(found)})")
    return out


def problems(root: Path, text: str) -> list[str]:
    return sorted({p for n in names_in(text) if is_repository_name(n) and (p := problem(root, n))}
                  | set(misplaced(root, text)))


def test_every_path_architecture_md_names_exists() -> None:
    if not (REPO / ".git").exists():
        pytest.skip("needs the git checkout (git ls-files) to tell repository paths apart")
    assert problems(REPO, DOC.read_text()) == [], "ARCHITECTURE.md names these; fix the document (or the code)"


def test_the_check_finds_a_wrong_path_module_and_name() -> None:
    if not (REPO / ".git").exists():
        pytest.skip("needs the git checkout")
    text = ("`Implementation` (`fixtures/implementations/bundled.py`), not `fixtures/nowhere.py`; nodes: "
            "`lwsconf.sim.nodes.fleet`, `lwsconf.sim.nodes.nofleet`, `lwsconf.sim.nodes.fleet.NoSuchName`; "
            "relative: `http/reviews.py`, `http/noreviews.py`, `storage/resources.BUILTINS`, "
            "`storage/resources.NOPE`; [link](docs/nosuch.md); not paths: `make test`, `pods/binding`, "
            "`/etc/hosts`, `reports/<run-id>/`, `127.X.0.0/16`")
    assert problems(REPO, text) == [
        "Implementation is not defined in fixtures/implementations/bundled.py (fixtures/implementations/bundled.py)",
        "docs/nosuch.md: no such file or folder",
        "fixtures/nowhere.py: no such file or folder",
        "http/noreviews.py: no such file or folder",
        "lwsconf.sim.nodes.fleet.NoSuchName: lwsconf/sim/nodes/fleet.py defines no NoSuchName",
        "lwsconf.sim.nodes.nofleet: lwsconf/sim/nodes/__init__.py defines no nofleet",
        "storage/resources.NOPE: lwsconf/sim/apiserver/storage/resources.py defines no NOPE",
    ]
