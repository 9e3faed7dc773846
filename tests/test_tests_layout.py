"""The tests of the sim API server and the sim controllers mirror their packages (issue 35, item 3).

`tests/sim/apiserver/<package>/` holds the tests of `lwsconf/sim/apiserver/<package>/`, and
`tests/sim/controllers/<package>/` those of `lwsconf/sim/controllers/<package>/`, as `tests/sim/nodes/` mirrors
`lwsconf/sim/nodes/`: a reader looking for the tests of a module finds them in the folder of its package. A test
module in a folder no package is named after, or at the top of a tree without a reason listed in TOP_LEVEL, fails.
Helper modules (not `test_*.py`) may sit at the top when several packages' tests share them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MIRRORS = {"tests/sim/apiserver": "lwsconf/sim/apiserver", "tests/sim/controllers": "lwsconf/sim/controllers"}
TOP_LEVEL = {
    "tests/sim/apiserver": {
        "test_kubectl.py": "kubectl against the whole server end to end, no one package; its `kubectl` fixture "
                           "is shared by admission/test_batch.py and http/test_reviews.py",
    },
    "tests/sim/controllers": {},
}


def misplaced(tests: Path, package: Path, top_level: dict[str, str]) -> list[str]:
    """The test modules under `tests` (relative to it) in no folder named after a package of `package`."""
    allowed = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    wrong = []
    for module in sorted(tests.rglob("test_*.py")):
        relative = module.relative_to(tests)
        if len(relative.parts) == 1 and relative.name not in top_level:
            wrong.append(f"{relative}: at the top, not in the folder of a package of {package.name}")
        elif len(relative.parts) > 1 and relative.parts[0] not in allowed:
            wrong.append(f"{relative}: {relative.parts[0]}/ is no package of {package.name}")
    return wrong


@pytest.mark.parametrize("tests", sorted(MIRRORS))
def test_every_test_module_sits_in_the_folder_of_the_package_it_tests(tests: str) -> None:
    assert misplaced(REPO / tests, REPO / MIRRORS[tests], TOP_LEVEL[tests]) == []


@pytest.mark.parametrize("tests", sorted(MIRRORS))
def test_every_listed_exception_is_a_test_module_at_the_top(tests: str) -> None:
    assert [name for name in TOP_LEVEL[tests] if not (REPO / tests / name).is_file()] == []


def test_the_check_finds_a_module_in_a_wrong_folder_or_loose_at_the_top(tmp_path: Path) -> None:
    package = tmp_path / "lwsconf" / "apiserver"
    for name in ("storage", "helpers_without_init"):
        (package / name).mkdir(parents=True)
    (package / "storage" / "__init__.py").touch()
    tests = tmp_path / "tests"
    for name in ("storage/test_store.py", "strorage/test_typo.py", "helpers_without_init/test_h.py",
                 "test_loose.py", "test_listed.py", "storage_sim.py"):
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).touch()
    assert misplaced(tests, package, {"test_listed.py": "a reason"}) == [
        "helpers_without_init/test_h.py: helpers_without_init/ is no package of apiserver",
        "strorage/test_typo.py: strorage/ is no package of apiserver",
        "test_loose.py: at the top, not in the folder of a package of apiserver"]
