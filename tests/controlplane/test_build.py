"""The control-plane build planner and runner: command lines, stamps, failures, no Go.

A fake `go` (a small Python script on PATH) stands in for the toolchain, so these tests check what
`lwsconf controlplane build` would run and what it does with the outcome without compiling anything;
`test_binaries.py` runs the real binaries when a build is in the cache.
"""

from __future__ import annotations

import io
import json
import stat
import sys
from pathlib import Path

import pytest

from lwsconf.controlplane import build, cli, versions

FAKE_GO = """#!{python}
import os, sys
args = sys.argv[1:]
if args == ["env", "GOVERSION"]:
    print(os.environ.get("FAKE_GO_VERSION", "go1.26.8"))
    sys.exit(0)
assert args[0] == "build", args
with open(os.environ["FAKE_GO_CALLS"], "a") as calls:
    calls.write(" ".join(args) + " cwd=" + os.getcwd() + " cgo=" + os.environ.get("CGO_ENABLED", "") + "\\n")
package = args[-1]
if package in os.environ.get("FAKE_GO_FAIL", "").split(","):
    print("compile error in " + package, file=sys.stderr)
    sys.exit(1)
with open(args[args.index("-o") + 1], "w") as out:
    out.write("binary of " + package)
"""


@pytest.fixture
def fake_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH holding only the fake `go`; returns the file listing the builds it was asked for."""
    bindir = tmp_path / "gobin"
    bindir.mkdir()
    go = bindir / "go"
    go.write_text(FAKE_GO.format(python=sys.executable))
    go.chmod(go.stat().st_mode | stat.S_IEXEC)
    calls = tmp_path / "calls.txt"
    calls.touch()
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setenv("FAKE_GO_CALLS", str(calls))
    monkeypatch.setenv(build.CACHE_ENV, str(tmp_path / "cache"))
    return calls


@pytest.fixture
def module_copy(tmp_path: Path) -> Path:
    """A copy of the repo's controlplane/ folder (go.mod and go.sum), which a test may change."""
    root = tmp_path / "src"
    for release in versions.RELEASES:
        target = root / release.module_dir
        target.mkdir(parents=True)
        for name in ("go.mod", "go.sum"):
            (target / name).write_bytes((versions.source_root() / release.module_dir / name).read_bytes())
    return root


def test_resolve_accepts_release_minor_and_v_prefix() -> None:
    assert versions.resolve(None) == versions.DEFAULT
    assert versions.resolve("1.36").kubernetes == "1.36.3"
    assert versions.resolve("v1.37.2").kubernetes == "1.37.2"
    with pytest.raises(versions.UnknownVersion, match=r"'1\.35' is not pinned here; choose one of 1\.37\.2, 1\.36\.3"):
        versions.resolve("1.35")


def test_releases_under_test_follow_the_env_in_pinned_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(versions.UNDER_TEST_ENV, raising=False)
    assert versions.under_test() == versions.RELEASES
    monkeypatch.setenv(versions.UNDER_TEST_ENV, "")
    assert versions.under_test() == versions.RELEASES
    monkeypatch.setenv(versions.UNDER_TEST_ENV, "1.36.3")
    assert [r.kubernetes for r in versions.under_test()] == ["1.36.3"]
    monkeypatch.setenv(versions.UNDER_TEST_ENV, "1.36, v1.37.2")
    assert versions.under_test() == versions.RELEASES
    monkeypatch.setenv(versions.UNDER_TEST_ENV, "1.37.2 1.20")
    with pytest.raises(versions.UnknownVersion, match="'1.20' is not pinned here"):
        versions.under_test()


@pytest.mark.parametrize(("value", "prefix"), [
    (None, ("/usr/bin/nice", "-n", "19")), ("", ("/usr/bin/nice", "-n", "19")), ("10", ("/usr/bin/nice", "-n", "10")),
    ("0", ())])
def test_the_builds_niceness_is_a_setting(value: str | None, prefix: tuple[str, ...]) -> None:
    environ = {} if value is None else {build.NICE_ENV: value}
    assert build.nice_prefix("/usr/bin/nice", environ) == prefix
    assert build.nice_prefix(None, environ) == ()  # no nice on PATH: none


@pytest.mark.parametrize("value", ["20", "-1", "low"])
def test_a_bad_niceness_says_what_to_give(value: str) -> None:
    with pytest.raises(build.BuildError, match=r"LWSCONF_BUILD_NICE=.*: give a niceness from 0 \(none\) to 19"):
        build.nice_prefix("/usr/bin/nice", {build.NICE_ENV: value})


def test_plan_command_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(build.NICE_ENV, raising=False)  # .ci/run sets it
    release = versions.resolve("1.37")
    plan = build.plan(release, go="/usr/bin/go", go_version="go1.26.8", cache=tmp_path, nice="/usr/bin/nice")
    bin_dir = tmp_path / "controlplane" / "1.37.2" / "bin"
    assert plan.bin_dir == bin_dir
    assert plan.module == versions.source_root() / "k8s-1.37"
    assert dict(plan.env) == {"CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOWORK": "off"}
    assert [s.component.name for s in plan.steps] == ["etcd", "kube-apiserver", "kube-controller-manager",
                                                       "kube-scheduler", "kubectl"]
    etcd, apiserver = plan.steps[0], plan.steps[1]
    assert etcd.argv == ("/usr/bin/nice", "-n", "19", "/usr/bin/go", "build", "-trimpath", "-ldflags=-s -w",
                         "-o", str(bin_dir / ".etcd.partial"), "go.etcd.io/etcd/server/v3")
    assert apiserver.argv[:6] == ("/usr/bin/nice", "-n", "19", "/usr/bin/go", "build", "-trimpath")
    flags = apiserver.argv[6]
    assert flags.startswith("-ldflags=-s -w ")
    assert "-X k8s.io/component-base/version.gitVersion=v1.37.2" in flags
    assert "-X k8s.io/component-base/version.gitMinor=37" in flags
    assert apiserver.argv[-3:] == ("-o", str(bin_dir / ".kube-apiserver.partial"),
                                   "k8s.io/kubernetes/cmd/kube-apiserver")
    assert apiserver.output == bin_dir / "kube-apiserver"
    no_nice = build.plan(release, go="go", go_version="go1.26.8", cache=tmp_path, nice=None)
    assert no_nice.steps[0].argv[:2] == ("go", "build")


def test_cache_root_honours_env_then_xdg(tmp_path: Path) -> None:
    assert build.cache_root({build.CACHE_ENV: str(tmp_path)}) == tmp_path
    assert build.cache_root({"XDG_CACHE_HOME": "/x"}) == Path("/x/lwsconf")
    assert build.cache_root({}) == Path.home() / ".cache" / "lwsconf"


def test_build_then_skip_then_rebuild_when_go_sum_changes(fake_go: Path, module_copy: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    release = versions.resolve("1.36")
    go, go_version = build.find_go()
    first = build.plan(release, go=go, go_version=go_version, source=module_copy)
    result = build.execute(first, sys.stdout)
    assert not result.skipped
    assert sorted(result.components) == ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                                        "kubectl"]
    assert (first.bin_dir / "kube-scheduler").read_text() == "binary of k8s.io/kubernetes/cmd/kube-scheduler"
    assert not list(first.bin_dir.glob(".*.partial"))
    calls = fake_go.read_text().splitlines()
    assert len(calls) == 5
    assert all(f"cwd={module_copy / 'k8s-1.36'} cgo=0" in line for line in calls)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("controlplane 1.36.3: [1/5] etcd ... built in ")
    assert lines[0].endswith(" MiB")
    assert json.loads(first.stamp_path.read_text())["kubernetes"] == "1.36.3"

    again = build.execute(build.plan(release, go=go, go_version=go_version, source=module_copy), sys.stdout)
    assert again.skipped
    assert len(fake_go.read_text().splitlines()) == 5
    assert "up to date" in capsys.readouterr().out

    with open(module_copy / "k8s-1.36" / "go.sum", "a") as go_sum:
        go_sum.write("example.com/changed v1.0.0 h1:AAAA=\n")
    changed = build.plan(release, go=go, go_version=go_version, source=module_copy)
    assert not build.up_to_date(changed)
    assert not build.execute(changed, sys.stdout).skipped
    assert len(fake_go.read_text().splitlines()) == 10


def test_missing_binary_or_other_go_version_is_not_up_to_date(fake_go: Path, module_copy: Path) -> None:
    release = versions.DEFAULT
    plan = build.plan(release, go="go", go_version="go1.26.8", source=module_copy)
    build.execute(plan, io.StringIO())
    assert build.up_to_date(plan)
    assert build.installed(release) == {s.component.name: s.output for s in plan.steps}
    assert not build.up_to_date(build.plan(release, go="go", go_version="go1.27.0", source=module_copy))
    (plan.bin_dir / "etcd").unlink()
    assert not build.up_to_date(plan)
    assert build.installed(release) is None


def test_failed_build_keeps_no_partial_binary_and_no_stamp(fake_go: Path, module_copy: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_GO_FAIL", "k8s.io/kubernetes/cmd/kube-apiserver")
    plan = build.plan(versions.DEFAULT, go="go", go_version="go1.26.8", source=module_copy)
    with pytest.raises(build.BuildError) as failure:
        build.execute(plan, io.StringIO())
    message = str(failure.value)
    assert message.startswith("building kube-apiserver failed (exit status 1): go build -trimpath")
    assert "compile error in k8s.io/kubernetes/cmd/kube-apiserver" in message
    assert str(plan.log_path) in message
    assert (plan.bin_dir / "etcd").is_file()
    assert not (plan.bin_dir / "kube-apiserver").exists()
    assert not list(plan.bin_dir.glob(".*.partial"))
    assert not plan.stamp_path.exists()


def test_missing_module_folder_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(build.BuildError, match="LWSCONF_CONTROLPLANE_SRC"):
        build.plan(versions.DEFAULT, go="go", go_version="go1.26.8", source=tmp_path)


def test_no_go_on_path_is_one_line_naming_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a folder with no `go` in it
    monkeypatch.setenv(build.CACHE_ENV, str(tmp_path / "cache"))
    assert cli.main(["build"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert "\n" not in err
    assert "needs Go >= 1.26 (no `go` on PATH; install it" in err
    assert "--cluster=sim" in err
    assert not (tmp_path / "cache").exists()


def test_too_old_go_is_refused_naming_its_version(fake_go: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_GO_VERSION", "go1.22.1")
    with pytest.raises(build.GoMissing, match=r"found .*/go reporting go1\.22\.1"):
        build.find_go()


def test_cli_unknown_version_and_where(fake_go: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["build", "--kubernetes-version", "1.30"]) == 2
    assert "choose one of 1.37.2, 1.36.3" in capsys.readouterr().err
    assert cli.main(["where", "--kubernetes-version", "1.36"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "cache" / "controlplane" / "1.36.3" / "bin")


def test_main_command_dispatches_to_controlplane(fake_go: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from lwsconf import cli as main_cli

    assert main_cli.main(["controlplane", "where"]) == 0
    assert capsys.readouterr().out.strip().endswith("controlplane/1.37.2/bin")
