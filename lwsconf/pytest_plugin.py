"""`pytest -p lwsconf.pytest_plugin --pyargs lwsconf._suite.conformance`: the installed suite under plain pytest.

`lwsconf run` is the usual way to run a wheel's suite. A gate that already drives pytest (its own plugins,
its own options files) can instead name the suite's package with `--pyargs`, from any directory. pytest
then finds the tests, but it reads the command-line options before it collects them, and the suite's
options (`--cluster`, `--lws-impl`, `--lwsconf-reports`...) come from the plugin that the suite's root
`conftest.py` loads at collection time, too late. Loading this module with `-p` makes the suite's folder
importable and loads that same plugin up front, so the options parse; the root conftest's own request for
the plugin is then a no-op (pytest registers a plugin module once).

Not an entry point on purpose: an entry point loads in every pytest run of the environment, and a checkout
(whose root conftest loads the plugin) would register its options twice.
"""

from __future__ import annotations

import sys

from lwsconf import suite_run

SUITE_PLUGIN = "fixtures.plugin"
"""The suite's pytest plugin module, importable once the suite's folder is on sys.path."""


def _suite_on_path() -> None:
    root = suite_run.suite_root()
    if root is None:
        raise ImportError("lwsconf.pytest_plugin: this lwsconf installation carries no conformance suite (no "
                          "lwsconf/_suite/ and no source checkout around the package); reinstall lwsconf from a "
                          "wheel built with `python -m build`")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))


_suite_on_path()
pytest_plugins = [SUITE_PLUGIN]
