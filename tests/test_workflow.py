"""The CI-matrix recipe, ``.github/workflows/book.yml``: valid for GitHub Actions, and its commands
are the builder's.

actionlint (installed by ``make test`` from envs/builder-test.txt) checks the workflow's syntax,
expressions, job graph and action inputs; a copy with a deliberate mistake shows that it does.
Every ``tabbook`` command the workflow runs is parsed by the builder's own command-line parser,
so a renamed option cannot leave the recipe behind.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from prerequisites import require

from tabbook.cli import parser

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


def _actionlint() -> str:
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    require(found, "actionlint is not installed (envs/builder-test.txt)")
    return found


def _lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_actionlint(), "-no-color", "-shellcheck=", "-pyflakes=", str(path)],
                          capture_output=True, text=True, timeout=120)


def test_actionlint_finds_nothing_wrong() -> None:
    proc = _lint(WORKFLOW)
    assert proc.returncode == 0 and proc.stdout == "", proc.stdout + proc.stderr


def test_actionlint_does_check_it(tmp_path: Path) -> None:
    bad = tmp_path / ".github" / "workflows" / "book.yml"
    bad.parent.mkdir(parents=True)
    text = WORKFLOW.read_text()
    assert "matrix.framework }}\" \\" in text
    bad.write_text(text.replace('matrix.framework }}" \\', 'matrix.frameworks }}" \\', 1)
                   .replace("needs: execute", "needs: [execute, missing_job]"))
    proc = _lint(bad)
    assert proc.returncode == 1
    assert 'property "frameworks" is not defined' in proc.stdout
    assert "missing_job" in proc.stdout


def _tabbook_commands(workflow: dict) -> list[tuple[str, list[str]]]:
    """(job, argv) of every ``.venv/bin/tabbook …`` line the workflow's steps run."""
    found = []
    for name, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            script = re.sub(r"\\\n\s*", " ", step.get("run", ""))
            for line in script.splitlines():
                if ".venv/bin/tabbook" not in line:
                    continue
                # Expressions and shell variables stand for values of the right kind.
                line = re.sub(r"\$\{\{\s*matrix\.shard\s*\}\}", "0", line)
                line = re.sub(r"\$\{\{[^}]*\}\}", "pytorch", line)
                line = line.replace("$SHARDS", "2").replace("$RUNNER_TEMP", "/tmp")
                argv = shlex.split(line)
                found.append((name, argv[argv.index(".venv/bin/tabbook") + 1:]))
    return found


def test_every_tabbook_command_of_the_workflow_parses() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    commands = _tabbook_commands(workflow)
    seen = {(job, argv[0]) for job, argv in commands}
    assert {("execute", "build"), ("publish", "merge-stores"), ("publish", "build"), ("publish", "pdf"),
            ("publish", "linkcheck")} <= seen
    for _, argv in commands:
        args = parser().parse_args(argv)  # exits (SystemExit) on an unknown option
        if args.command == "build" and args.shard:
            assert args.shard == (0, 2) and args.no_render and args.frameworks == "pytorch"


def test_the_jobs_run_the_installed_tool() -> None:
    """As any book's CI would: the builder venv gets the tabbook distribution (editable, from this
    checkout) beside the exact lock, and no step runs the package as a module."""
    text = WORKFLOW.read_text()
    workflow = yaml.safe_load(text)
    assert "-m tabbook" not in text
    for job in ("execute", "publish"):
        script = "\n".join(step.get("run", "") for step in workflow["jobs"][job]["steps"])
        lock = script.index("pip install --quiet -r envs/builder.txt")
        assert lock < script.index("pip install --quiet --no-deps -e packaging/tabbook") < script.index(".venv/bin/tabbook")


def test_the_matrix_is_frameworks_by_shards_and_publish_waits_for_it() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    jobs = workflow["jobs"]
    matrix = jobs["execute"]["strategy"]["matrix"]
    assert set(matrix) == {"framework", "shard"}
    assert "needs.plan.outputs.frameworks" in matrix["framework"]
    assert jobs["execute"]["needs"] == "plan" and jobs["publish"]["needs"] == "execute"
    uploads = [s for s in jobs["execute"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    downloads = [s for s in jobs["publish"]["steps"] if s.get("uses", "").startswith("actions/download-artifact")]
    assert uploads and downloads
    assert uploads[0]["with"]["name"].startswith("store-") and downloads[0]["with"]["pattern"] == "store-*"
