"""Building upstream's manager: sources resolved through `go`, command lines, stamps, one-line errors.

A fake `go` (a Python script on PATH) answers `go env GOVERSION`, `go mod download -json` and `go build`,
so these tests check what `lwsconf upstream build` asks of Go and what it does with the answers without
compiling; `test_real_go.py` uses the real toolchain and module cache.
"""

from __future__ import annotations

import io
import json
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from lwsconf.controlplane import build as gobuild
from lwsconf.upstream import build, cli, source, versions

FAKE_GO = """#!{python}
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_GO_CALLS"], "a") as calls:
    calls.write(" ".join(args) + " cwd=" + os.getcwd() + "\\n")
if args == ["env", "GOVERSION"]:
    print("go1.26.8")
elif args[:3] == ["mod", "download", "-json"]:
    print(os.environ["FAKE_GO_DOWNLOAD"])
    sys.exit(1 if "Error" in json.loads(os.environ["FAKE_GO_DOWNLOAD"]) else 0)
elif args[0] == "build":
    if os.environ.get("FAKE_GO_FAIL"):
        print("cmd/main.go:1: syntax error", file=sys.stderr)
        sys.exit(1)
    with open(args[args.index("-o") + 1], "w") as out:
        out.write("manager built from " + args[-1])
"""
REFUSED = ("sigs.k8s.io/lws@v0.11.0: reading https://proxy.golang.org/sigs.k8s.io/lws/@v/v0.11.0.zip: "
           "403 Forbidden\n\tserver response: This module version is not available.")


@pytest.fixture
def fake_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "gobin"
    bindir.mkdir()
    go = bindir / "go"
    go.write_text(FAKE_GO.format(python=sys.executable))
    go.chmod(go.stat().st_mode | stat.S_IEXEC)
    git = shutil.which("git")
    if git:  # checkouts are asked of git
        (bindir / "git").symlink_to(git)
    calls = tmp_path / "calls.txt"
    calls.touch()
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setenv("FAKE_GO_CALLS", str(calls))
    monkeypatch.setenv(gobuild.CACHE_ENV, str(tmp_path / "cache"))
    module_dir = tmp_path / "modcache" / "sigs.k8s.io" / "lws@v0.9.0"
    module_dir.mkdir(parents=True)
    monkeypatch.setenv("FAKE_GO_DOWNLOAD", json.dumps({
        "Path": "sigs.k8s.io/lws", "Version": "v0.9.0", "Dir": str(module_dir), "Sum": "h1:abc=",
        "Origin": {"VCS": "git", "Hash": "f056f611ae7721f9983ac35f26bfbae8547fd9f3"}}))
    return calls


def test_a_pinned_release_is_built_inside_our_module_then_skipped(fake_go: Path, tmp_path: Path) -> None:
    out = io.StringIO()
    built = build.ensure("v0.9.0", out)
    calls = fake_go.read_text().splitlines()
    module = versions.source_root() / "lws-0.9"
    assert calls[1] == f"mod download -json sigs.k8s.io/lws cwd={module}"
    assert calls[2].startswith("build -trimpath -ldflags=-s -w -X sigs.k8s.io/lws/pkg/version.GitVersion=v0.9.0 "
                               "-X sigs.k8s.io/lws/pkg/version.GitCommit=f056f611ae7721f9983ac35f26bfbae8547fd9f3 -o ")
    assert calls[2].endswith(f" sigs.k8s.io/lws/cmd cwd={module}")
    assert built.binary == tmp_path / "cache" / "lws" / "v0.9.0" / "bin" / "manager"
    assert built.binary.read_text() == "manager built from sigs.k8s.io/lws/cmd"
    assert built.facts.record() == {
        "module": "sigs.k8s.io/lws", "version": "v0.9.0", "how": "run out of cluster by lwsconf",
        "files": str(tmp_path / "modcache" / "sigs.k8s.io" / "lws@v0.9.0"), "checksum": "h1:abc=",
        "commit": "f056f611ae7721f9983ac35f26bfbae8547fd9f3"}
    assert "lws v0.9.0: [1/1] manager ... built in" in out.getvalue()
    again = io.StringIO()
    build.ensure("0.9", again)
    assert "lws v0.9.0: up to date" in again.getvalue()
    assert sum(line.startswith("build ") for line in fake_go.read_text().splitlines()) == 1


def test_a_version_the_proxy_refuses_fails_quoting_its_answer(fake_go: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("FAKE_GO_DOWNLOAD", json.dumps({"Path": "sigs.k8s.io/lws", "Version": "v0.11.0",
                                                       "Error": REFUSED}))
    assert cli.main(["build", "--version", "v0.11.0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err == ("lwsconf upstream: upstream-local:v0.11.0 cannot be built: the Go module proxy answers "
                   "`sigs.k8s.io/lws@v0.11.0: reading https://proxy.golang.org/sigs.k8s.io/lws/@v/v0.11.0.zip: 403 "
                   "Forbidden server response: This module version is not available.`; use a release it serves "
                   "(pinned here: v0.9.0, v0.10.0 (source snapshot), main-060ab4d (source snapshot)) or an LWS "
                   "checkout (upstream-local:/path/to/lws)\n")
    assert "mod download -json sigs.k8s.io/lws@v0.11.0" in fake_go.read_text()


def test_a_served_but_unpinned_version_says_how_to_pin_it(fake_go: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_GO_DOWNLOAD", json.dumps({"Path": "sigs.k8s.io/lws", "Version": "v0.8.0", "Dir": "/x"}))
    with pytest.raises(source.SourceError, match=r"served by the Go module proxy but not pinned here \(pinned: "
                                                 r"v0.9.0, v0.10.0 \(source snapshot\), main-060ab4d \(source "
                                                 r"snapshot\)\); pin it with a Go module under upstream/"):
        build.ensure("v0.8.0", io.StringIO())


def _checkout(tmp_path: Path, dirty: bool) -> Path:
    repo = tmp_path / "lws"
    (repo / "cmd").mkdir(parents=True)
    (repo / "go.mod").write_text("module sigs.k8s.io/lws\n\ngo 1.26.0\n")
    (repo / "cmd" / "main.go").write_text("package main\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    if dirty:
        (repo / "cmd" / "main.go").write_text("package main\n// edited\n")
    return repo


@pytest.mark.parametrize("dirty", [False, True])
def test_a_checkout_is_built_where_it_is_and_records_commit_and_dirty(fake_go: Path, tmp_path: Path,
                                                                      dirty: bool) -> None:
    repo = _checkout(tmp_path, dirty)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    built = build.ensure(str(repo), io.StringIO())
    assert built.facts.record() == {"module": "sigs.k8s.io/lws", "version": "checkout", "files": str(repo.resolve()),
                                    "how": "run out of cluster by lwsconf", "commit": head, "dirty": dirty}
    calls = [line for line in fake_go.read_text().splitlines() if line.startswith("build ")]
    suffix = "-dirty" if dirty else ""
    assert f"GitVersion=checkout-{head[:12]}{suffix} " in calls[0]
    assert calls[0].endswith(f" ./cmd cwd={repo.resolve()}")
    assert built.binary.parent.parent.name.startswith("checkout-")
    build.ensure(str(repo), io.StringIO())  # a checkout is always rebuilt: its tree may have changed
    assert len([line for line in fake_go.read_text().splitlines() if line.startswith("build ")]) == 2


def test_a_failed_go_build_exits_1_with_its_log_tail(fake_go: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("FAKE_GO_FAIL", "1")
    assert cli.main(["build"]) == 1
    err = capsys.readouterr().err
    assert "building manager failed (exit status 1)" in err
    assert "cmd/main.go:1: syntax error" in err


def test_no_go_is_one_line_naming_the_alternative(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert cli.main(["build"]) == 2
    assert capsys.readouterr().err == (
        "lwsconf upstream: building upstream's LWS manager (--lws-impl=upstream-local) needs Go >= 1.26 (no `go` on "
        "PATH; install it, e.g. from your distribution's golang package or go.dev/dl, and put `go` on PATH), or test "
        "the reference implementation with --lws-impl=reference\n")
