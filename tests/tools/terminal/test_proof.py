"""The classifier proves safety instead of guessing danger (issue 12 item 2).

A command is ``safe`` only when every word is literal, its program is on the allowlist in a known
form and what it writes lies inside the workspace; anything else is at least ``unproven`` and needs
approval outside a sandbox. Two corpora (data files beside this module, one command per line, U+2424
for a newline): destructive commands written to evade the classifier (none may be judged safe) and
everyday development commands (the share proven safe is pinned here and reported in
docs/tools/terminal.md). The gate tests call :func:`gate.authorize` with a fake session; nothing is run.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from fakes.tool_session import FakeSession, ScriptedSink
from hermes.config.paths import HermesPaths
from hermes.config.settings import Settings
from hermes.errors import ApprovalDenied
from hermes.tools.terminal import gate
from hermes.tools.terminal.approval import classify, findings
from hermes.tools.terminal.proof import prove
from hermes.tools.toolsets import Surface

CORPUS = Path(__file__).parent / "corpus"


def _corpus(name: str) -> list[str]:
    text = (CORPUS / name).read_text(encoding="utf-8")
    return [line.replace("\u2424", "\n") for line in text.split("\n") if line and not line.startswith("#")]


@pytest.fixture
def workspace(tmp_path: Path) -> str:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    return str(ws)


# -- the corpora -------------------------------------------------------------------------------------
def test_no_evasive_command_is_judged_safe(workspace: str) -> None:
    commands = _corpus("evasive.txt")
    assert len(commands) >= 500
    judged_safe = [c for c in commands if classify(c, workspace).level == "safe"]
    assert judged_safe == []


def test_everyday_commands_share_proven_safe(workspace: str) -> None:
    commands = _corpus("everyday.txt")
    assert len(commands) >= 150
    levels = Counter(classify(c, workspace).level for c in commands)
    # the figures docs/tools/terminal.md reports: 115 of 202 run without asking outside a sandbox;
    # the others run code from the workspace (tests, builds, scripts), change the repository's history,
    # use the network, delete files or use shell expansions
    assert (levels["safe"], len(commands)) == (115, 202), levels
    assert levels["floor"] == 0


# -- the examples, one per class ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("watch rm -rf /", "`watch` is not a program with known effects"),
        ("strace -f rm -rf /", "`strace` is not a program with known effects"),
        ("rm${IFS}-rf${IFS}/", "parameter expansion `$IFS` cannot be read statically"),
        ("{rm,-rf,/}", "brace expansion"),
        ("printf %s 'rm -rf /' | sh", "`sh` is not a program with known effects"),
        ('bash -c "$(echo cm0gLXJmIC8= | base64 -d)"', "command or process substitution"),
        ("perl -e 'system qw(rm -rf /)'", "`perl` runs code"),
        ("awk 'BEGIN{system(\"rm -rf /\")}'", "awk's `system()`"),
        ("sed 's/x/rm -rf ~/e' f", "sed's `s///e`"),
        ("cd /etc && echo x > passwd", "writes `passwd` outside the workspace"),
        ("shred -u /etc/passwd", "`shred` is not a program with known effects"),
        ("rsync -a --delete empty/ /", "`rsync` is not a program with known effects"),
        ("echo b > /proc/sysrq-trigger", "writes the special file `/proc/sysrq-trigger`"),
        ("PATH=. ls", "setting `PATH`"),
        ("ls() { rm -rf ~; }; ls", "defines a shell function"),
        ("/usr/bin/../bin/rm x", "`rm` is not a program"),
        ("./ls", "runs a program by a path"),
        ("sudo ls", "runs the command as another user"),
        ("find * -name x", "may expand to an option of `find`"),
        ("sort -uo /etc/passwd f", "outside the workspace"),
        ("git diff --out=/etc/x", "outside the workspace"),
        ("cat <<EOF\n$(rm -rf ~)\nEOF", "here-document with expansions"),
        ("ls | xargs sort", "xargs hands `sort` arguments"),
        # the names xargs reads may be secrets (`find / -name id_rsa | xargs cat`)
        ("find . -name '*.py' | xargs wc -l", "xargs hands `wc` file names read from its input"),
        ("rм -rf ~", "`rм` is not a program with known effects"),
    ],
)
def test_unprovable_commands_say_why(command: str, reason: str, workspace: str) -> None:
    unproven = [v for v in findings(command, workspace) if v.level == "unproven"]
    assert unproven, command
    assert unproven[0].reason.startswith("needs approval: ")
    assert reason in unproven[0].reason, unproven[0].reason


def test_deep_nesting_is_too_complex_to_inspect(workspace: str) -> None:
    found = findings("echo " + "$(" * 200 + "ls" + ")" * 200, workspace)
    assert any(v.level == "unproven" and "too complex to inspect" in v.reason for v in found)
    assert prove("$(" * 100_000, workspace)[0][0] == "too complex to inspect"
    assert classify("(" * 50_000 + "ls", workspace).level == "safe"  # a subshell nest is read, not recursed into


@pytest.mark.parametrize(
    "command",
    [
        "ls -la", "git status && git diff --stat", "grep -rn TODO src | head -20",
        "cat a | sort | uniq -c > counts.txt",
        "mkdir -p build && cd build && touch marker", "cd src && ls > listing.txt", "sed -n 's/a/b/p' f",
        "sed -i 's/a/b/g' src/x.py", "awk -F: '{print $1}' /etc/passwd",
        "echo x > /dev/null 2>&1", "LC_ALL=C sort f -o sorted.txt", "timeout 5 nice -n 5 grep x f", "git add -A",
        "python3 --version", "set -euo pipefail", "cp a.txt b.txt", "mv a.txt src/", "tee out.log < in.txt",
        "env NO_COLOR=1 ls", "echo 'rm -rf /' > notes.txt", "[ -f x ] && cat x",
    ],
)
def test_proven_safe_commands(command: str, workspace: str) -> None:
    assert classify(command, workspace).level == "safe", findings(command, workspace)


def test_without_a_workspace_no_write_is_proven() -> None:
    assert classify("ls").level == "safe"
    assert classify("echo x > out.txt").level == "unproven"
    assert classify("echo x > /dev/null").level == "safe"


def test_a_workdir_outside_the_session_workspace_proves_no_write(workspace: str, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    judged = classify("echo hi > autostart.sh", str(outside), workspace=workspace)
    assert judged.level == "unproven" and "outside the workspace" in judged.reason
    assert classify("ls", str(outside), workspace=workspace).level == "safe"
    assert classify(f"echo x > {workspace}/out.txt", str(outside), workspace=workspace).level == "safe"
    assert classify("echo x > y", os.path.join(workspace, "src"), workspace=workspace).level == "safe"


def test_home_dot_folders_are_no_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    judged = classify("echo hi > autostart.sh", str(home / ".config"))
    assert judged.level == "unproven" and "dot-file of the home directory" in judged.reason


# -- write targets on the real file system -------------------------------------------------------------
def test_links_in_the_workspace_are_followed(workspace: str, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep", encoding="utf-8")
    os.symlink(outside, os.path.join(workspace, "link"))
    os.link(outside, os.path.join(workspace, "hard"))
    assert "outside the workspace" in classify("echo x > link", workspace).reason
    assert "other hard links" in classify("echo x >> hard", workspace).reason
    assert classify("cp a b; echo x > b/c", workspace).level == "unproven"  # b may be a copied link


def test_cd_may_fail_so_every_directory_counts(workspace: str) -> None:
    assert classify("cd src; echo x > y", workspace).level == "safe"
    # if ``cd src`` failed (or ran in a subshell), ../y would be outside the workspace
    assert classify("cd src; echo x > ../y", workspace).level == "unproven"
    assert classify("(cd src); echo x > ../y", workspace).level == "unproven"
    assert classify("cd /etc; cd -; echo x > y", workspace).level == "unproven"


def test_writes_into_git_are_never_proven(workspace: str) -> None:
    for command in ("echo x > .git/config", "touch .git/hooks/post-index-change", "cd .git && touch config"):
        assert classify(command, workspace).level == "unproven", command


def _git(*args: str, cwd: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_git_reads_are_proven_only_when_the_repository_names_no_program(workspace: str) -> None:
    _git("init", "-q", cwd=workspace)
    assert classify("git status", workspace).level == "safe"
    assert classify("cd src && git log --oneline", workspace).level == "safe"
    _git("config", "core.fsmonitor", "touch /tmp/owned", cwd=workspace)
    verdict = classify("git status", workspace)
    assert verdict.level == "unproven" and "core.fsmonitor" in verdict.reason
    _git("config", "--unset", "core.fsmonitor", cwd=workspace)
    _git("config", "diff.pdf.textconv", "sh", cwd=workspace)
    assert classify("git diff", workspace).level == "unproven"
    config = Path(workspace, ".git", "config")
    config.write_text("[core] fsmonitor = touch /tmp/owned\n", encoding="utf-8")  # a key on the header line
    assert classify("git status", workspace).level == "unproven"


def test_git_add_writes_only_an_index_inside_the_workspace(workspace: str) -> None:
    _git("init", "-q", cwd=workspace)
    assert classify("git add -A", workspace).level == "safe"
    sub = os.path.join(workspace, "src")  # a workspace inside the repository: its index is outside
    assert "outside the workspace" in classify("git add -A", sub).reason


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a device node needs root")
def test_device_files_in_the_workspace_are_not_written(workspace: str) -> None:
    os.mknod(os.path.join(workspace, "disk"), 0o600 | 0o020000, os.makedev(1, 3))  # a character device
    assert "a device file" in classify("echo x > disk", workspace).reason


# -- the gate ------------------------------------------------------------------------------------------
def _session(home: Path, surface: Surface = Surface.CLI, *answers: Any, config: str = "") -> FakeSession:
    if config:
        (home / "config.yaml").write_text(config, encoding="utf-8")
    return FakeSession("s1", surface, ScriptedSink(*answers), Settings.load(HermesPaths(home)))


def test_unproven_runs_unasked_only_inside_a_sandbox(hermes_home: Path, workspace: str) -> None:
    s = _session(hermes_home, Surface.CLI, "once")
    gate.authorize("python3 -m pytest -q", {"session": s}, cwd=workspace, sandboxed=True)
    assert s.sink.asked == []
    gate.authorize("python3 -m pytest -q", {"session": s}, cwd=workspace)
    (request,) = s.sink.asked
    assert request.payload["pattern"] == "unproven" and "`python3` runs code" in request.payload["reason"]
    gate.authorize("ls -la", {"session": s}, cwd=workspace)
    assert len(s.sink.asked) == 1


def test_sandbox_does_not_lift_floor_or_dangerous(hermes_home: Path, workspace: str) -> None:
    s = _session(hermes_home, Surface.ONESHOT)
    with pytest.raises(ApprovalDenied, match="hard floor"):
        gate.authorize("rm -rf /", {"session": s}, cwd=workspace, sandboxed=True)
    with pytest.raises(ApprovalDenied, match="git_force_push"):
        gate.authorize("git push --force", {"session": s}, cwd=workspace, sandboxed=True)


def test_unproven_without_a_person_is_refused_saying_how_to_allow(hermes_home: Path, workspace: str) -> None:
    s = _session(hermes_home, Surface.ONESHOT)
    with pytest.raises(ApprovalDenied) as info:
        gate.authorize("strace -f ls", {"session": s}, cwd=workspace)
    message = str(info.value)
    assert "`strace` is not a program with known effects" in message and "approvals.allow" in message
    with pytest.raises(ApprovalDenied, match="no session"):
        gate.authorize("strace -f ls", {}, cwd=workspace)
    gate.authorize("ls", {}, cwd=workspace)


def test_modes_and_allow_lists_for_unproven(hermes_home: Path, workspace: str) -> None:
    yolo = _session(hermes_home, Surface.ONESHOT, config="approvals:\n  mode: yolo\n")
    gate.authorize("strace -f ls", {"session": yolo}, cwd=workspace)
    deny = _session(hermes_home, Surface.CLI, "once", config="approvals:\n  mode: deny\n")
    with pytest.raises(ApprovalDenied):
        gate.authorize("strace -f ls", {"session": deny}, cwd=workspace)
    assert deny.sink.asked == []
    prefix = _session(hermes_home, Surface.ONESHOT, config="approvals:\n  allow: ['make test']\n")
    gate.authorize("make test", {"session": prefix}, cwd=workspace)
    with pytest.raises(ApprovalDenied):
        gate.authorize("make install", {"session": prefix}, cwd=workspace)
    covered = _session(hermes_home, Surface.ONESHOT, config="approvals:\n  allow: [git_force_push]\n")
    gate.authorize("git push --force", {"session": covered}, cwd=workspace)  # one decision, not two


def test_safe_programs_are_proven_but_their_writes_still_checked(hermes_home: Path, workspace: str) -> None:
    s = _session(hermes_home, Surface.ONESHOT,
                 config="approvals:\n  safe_programs: [pytest, 'npm run build', ./run_tests.sh]\n")
    gate.authorize("pytest -q tests", {"session": s}, cwd=workspace)
    gate.authorize("./run_tests.sh --fast", {"session": s}, cwd=workspace)
    gate.authorize("npm run build > build.log", {"session": s}, cwd=workspace)
    for command in ("pytest > /etc/x", "npm run deploy", "PATH=. pytest", "pytest $(cat args)", "./run_tests.sh.x"):
        with pytest.raises(ApprovalDenied):
            gate.authorize(command, {"session": s}, cwd=workspace)


def test_session_and_always_approvals_remember_the_command(hermes_home: Path, workspace: str) -> None:
    s = _session(hermes_home, Surface.CLI, "session")
    gate.authorize("make test", {"session": s}, cwd=workspace)
    gate.authorize("make test", {"session": s}, cwd=workspace)
    assert len(s.sink.asked) == 1
    a = _session(hermes_home, Surface.CLI, "always")
    gate.authorize("cargo build", {"session": a}, cwd=workspace)
    assert "cargo build" in (hermes_home / "config.yaml").read_text(encoding="utf-8")
    later = _session(hermes_home, Surface.ONESHOT)
    gate.authorize("cargo build --release", {"session": later}, cwd=workspace)


def test_git_directories_are_judged_by_where_they_are_and_what_git_reads(tmp_path: Path) -> None:
    """Found by a security review: a workdir inside .git, a bare repository, and a byte-order mark that
    hid a [core] section (git skips it) each let a write or a git read count as proven safe."""
    repo, bare = tmp_path / "repo", tmp_path / "bare"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    assert classify("echo x > config", cwd=str(repo / ".git")).level == "unproven"
    assert classify("echo x > config", cwd=str(bare)).level == "unproven"
    assert classify("echo x > notes.txt", cwd=str(repo)).level == "safe"
    assert classify("git status", cwd=str(repo)).level == "safe"
    (repo / ".git" / "config").write_text('\ufeff[core]\n\tfsmonitor = "touch /tmp/pwned; false"\n', encoding="utf-8")
    assert classify("git status", cwd=str(repo)).level == "unproven"


@pytest.mark.parametrize("command", ["jobs -x rm -rf /", "test -v 'a[$(id)]'", "[ -v 'a[$(id)]' ]",
                                     "printf -v 'a[$(id)]' x", "wait -p 'a[$(id)]'"])
def test_builtins_that_run_code_through_their_words_are_not_proven(command: str, tmp_path: Path) -> None:
    assert classify(command, cwd=str(tmp_path)).level != "safe"


# -- reading secrets and /dev/tcp (outside a sandbox the output reaches the model) --------------------
def test_reading_a_secret_through_a_link_in_the_workspace_is_not_proven(workspace: str, hermes_home: Path) -> None:
    env = hermes_home / ".env"
    env.write_text("OPENAI_API_KEY=sk-test\n", encoding="utf-8")
    ws = Path(workspace)
    os.link(env, ws / "notes.txt")  # a second name of hermes's .env
    (ws / "shortcut").symlink_to(env)
    (ws / "plain.txt").write_text("hello\n", encoding="utf-8")
    assert classify("cat plain.txt", workspace).level == "safe"
    for command in ("cat notes.txt", "cat shortcut", "grep KEY src/../shortcut", f"cat {env}", "wc -l < shortcut"):
        verdict = classify(command, workspace)
        assert verdict.level == "unproven", command
        assert "holds secrets" in verdict.reason, (command, verdict.reason)


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("cat ~/.ssh/id_rsa", "SSH key material"),
        ("cat < /dev/tcp/127.0.0.1/9", "opens a network connection"),
        ("cat /dev/udp/127.0.0.1/53", "opens a network connection"),
        ("grep -r PRIVATE ~", "may read secrets below `~`"),
        ("cat ~/.s*/id_rsa", "may read secrets below"),
        ("cat ~bob/.ssh/id_rsa", "another user's home folder"),
        ("sort --files0-from=/etc/shadow", "system password hashes"),
        ("cat /proc/1/fd/3", "another process's"),
        ("strings /proc/self/environ", "another process's"),
        ("grep -f/root/.ssh/id_rsa x", "SSH key material"),
        ("echo ~/.ssh/id_rsa | xargs cat", "xargs hands `cat` file names"),
    ],
)
def test_secret_reads_and_network_devices_say_why(command: str, reason: str, workspace: str) -> None:
    verdict = classify(command, workspace)
    assert verdict.level == "unproven"
    assert reason in verdict.reason, verdict.reason


def test_printing_a_secret_path_is_not_reading_it(workspace: str) -> None:
    assert classify("echo ~/.ssh/id_rsa", workspace).level == "safe"
    assert classify("ls -la ~", workspace).level == "safe"


def test_a_huge_sed_or_awk_program_is_unproven_not_safe(workspace: str) -> None:
    assert classify("sed 's/a/b/g;" + "s/a/b/g;" * 1000 + "'", workspace).level == "safe"
    for command in ("sed '" + "s/a/b/g;" * 20_000 + "'", "awk '" + "{print $1} " * 20_000 + "'"):
        verdict = classify(command, workspace)
        assert verdict.level == "unproven" and "too long to inspect" in verdict.reason, verdict
