"""`lwsconf WORDS... ARGS`: the subcommands with their own parsers are one table (lwsconf/cli.py, PROGRAMS)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from lwsconf import cli


def test_every_program_names_a_module_with_main_and_no_two_overlap() -> None:
    for program in cli.PROGRAMS:
        assert callable(importlib.import_module(program.module).main), program
    words = [p.words for p in cli.PROGRAMS]
    assert len(set(words)) == len(words)


@pytest.mark.parametrize(("argv", "module", "rest"), [
    (["sim", "chaos", "crash-container", "ns/pod"], "lwsconf.sim.chaos_cli", ["crash-container", "ns/pod"]),
    (["run", "-k", "x"], "lwsconf.suite_run", ["-k", "x"]),
    (["doctor"], "lwsconf.doctor", [])])
def test_the_first_words_choose_the_program_and_the_rest_is_its_own(argv: list[str], module: str,
                                                                    rest: list[str]) -> None:
    chosen = cli.program_for(argv)
    assert chosen is not None and (chosen[0].module, chosen[1]) == (module, rest)


@pytest.mark.parametrize("argv", [["sim", "up"], ["reconciler"], ["report", "show", "x"], []])
def test_commands_parsed_here_are_not_programs(argv: list[str]) -> None:
    assert cli.program_for(argv) is None


def test_main_hands_the_arguments_over_and_returns_the_programs_status(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    doctor = importlib.import_module("lwsconf.doctor")
    monkeypatch.setattr(doctor, "main", lambda args: seen.append(args) or 3)
    assert cli.main(["doctor", "--node-image", "x"]) == 3
    assert seen == [["--node-image", "x"]]


def test_the_help_lists_every_program() -> None:
    out = subprocess.run([sys.executable, "-m", "lwsconf", "-h"], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    for program in cli.PROGRAMS:
        assert program.words[0] in out
    sim = subprocess.run([sys.executable, "-m", "lwsconf", "sim", "-h"], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    assert "chaos" in sim and "openapi" in sim and "up" in sim
