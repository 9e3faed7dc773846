"""Options of the node tests: `--update-golden` rewrites the stage golden outputs (also LWSCONF_UPDATE_GOLDEN=1).

pytest reads this option only when this folder is on the command line
(`pytest tests/sim/nodes --update-golden`); the environment variable works from anywhere.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/sim/nodes/stages/golden/**/*.output.yaml from the current stages")
