"""Run fuzz cases against the CLI contract, count outcomes per class, minimise each failure.

The contract (docs/qualification.md "Fuzz campaign"): every run exits 0 or 2 (or 1 where the
command judges its input, ``compare``); on exit 2, stdout is empty, stderr is exactly one
``aisim...: error: ...`` line, and nothing was written; no run prints a traceback; every run
finishes within the time bound; a case invalid by construction is never accepted. Outcome
classes: ``accept`` (0, or a judged 1), ``reject`` (a clean 2), and the failures ``traceback``,
``hang``, ``nonsense`` (accepted nonsense) and ``contract`` (any other breach). Failures are grouped by signature (exception type and innermost aisim frame, or the
breach) and each group's first case is minimised by dropping mutations while it still fails
with the same signature.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qualification.fuzz._mutate import Case, build
from qualification.fuzz._seeds import SEEDS_BY_NAME

ACCEPT, REJECT, TRACEBACK, HANG, CONTRACT = "accept", "reject", "traceback", "hang", "contract"
NONSENSE = "nonsense"
CLASSES = (ACCEPT, REJECT, TRACEBACK, HANG, NONSENSE, CONTRACT)
FAILURES = (TRACEBACK, HANG, NONSENSE, CONTRACT)
#: How long a worker may take to import aisim and say it is ready (not a case's time).
STARTUP_BOUND_S = 600.0


@dataclass(frozen=True)
class Outcome:
    """How one case ended: its class, a failure signature ('' when it passed) and details."""

    kind: str
    signature: str = ""
    code: int | None = None
    err: str = ""
    detail: str = ""


def classify(
    reply: dict[str, Any],
    written_on_error: list[str],
    *,
    nonsense: bool = False,
    judged: bool = False,
    flagged: str = "",
    nonsense_text: str = "",
) -> Outcome:
    """Judge one worker reply against the contract (pure; unit-tested with made-up replies).
    ``nonsense``: the case is invalid by construction; ``judged``: exit 1 is an answer;
    ``flagged``: stdout text by which an exit 0 reports the input refused in part."""
    code = reply["code"]
    err = reply["err"]
    if reply["traceback"] or "Traceback (most recent call last)" in err:
        text = reply["traceback"] or err
        return Outcome(TRACEBACK, traceback_signature(text), code, err, text)
    if code == 0 and flagged and flagged in reply["out"]:
        return Outcome(REJECT, code=0, err=err, detail=reply["out"].strip()[-200:])
    if code == 0 or (judged and code == 1 and not err):
        if nonsense or (nonsense_text and nonsense_text in reply["out"]):
            return Outcome(NONSENSE, "invalid case accepted", code, err, reply["out"][:200])
        return Outcome(ACCEPT, code=code)
    if code != 2:
        return Outcome(CONTRACT, f"exit status {code}", code, err)
    lines = err.splitlines()
    if len(lines) != 1 or not lines[0].startswith("aisim") or ": error: " not in lines[0]:
        return Outcome(CONTRACT, "error not on one 'aisim: error:' line", code, err)
    if reply["out"]:
        return Outcome(CONTRACT, "stdout written on error", code, err, reply["out"][:200])
    if written_on_error:
        return Outcome(CONTRACT, "files written on error", code, err, ", ".join(written_on_error))
    return Outcome(REJECT, code=2, err=lines[0])


def traceback_signature(text: str) -> str:
    """'ExceptionType at file:function' for the innermost frame in aisim or qualification."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else "?"
    exception = last.split(":", 1)[0].strip()
    frame = "?"
    for line in lines:
        stripped = line.strip()
        if stripped.startswith('File "') and ("aisim" in stripped or "qualification" in stripped):
            path = stripped.split('"')[1]
            function = stripped.rsplit(" in ", 1)[-1]
            parts = Path(path).parts
            anchor = max(
                (i for i, part in enumerate(parts) if part in ("aisim", "qualification")),
                default=0,
            )
            frame = "/".join(parts[anchor:]) + ":" + function
    return f"{exception} at {frame}"


class Executor:
    """A worker process running cases in-process, restarted after a hang or crash."""

    def __init__(self, time_bound_s: float) -> None:
        self.time_bound_s = time_bound_s
        self.root = Path(tempfile.mkdtemp(prefix="aisim-fuzz-"))
        self.process: subprocess.Popen[str] | None = None
        self.count = 0

    def _start(self) -> subprocess.Popen[str]:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "qualification.fuzz._worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, "PYTHONHASHSEED": "0"},
            )
            # Start-up (imports) is not part of any case's time bound.
            assert self.process.stdout is not None
            ready, _, _ = select.select([self.process.stdout], [], [], STARTUP_BOUND_S)
            if not ready or not self.process.stdout.readline():
                self._stop()
                raise RuntimeError(f"the fuzz worker did not start within {STARTUP_BOUND_S} s")
        return self.process

    def _stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            _close_pipes(self.process)
            self.process = None

    def close(self) -> None:
        if self.process is not None and self.process.stdin is not None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            _close_pipes(self.process)
        self.process = None
        shutil.rmtree(self.root, ignore_errors=True)

    def run(self, case: Case) -> Outcome:
        folder = self._materialise(case)
        inputs = _listing(folder)
        argv = [arg.replace("{out}", "out") for arg in case.argv]
        process = self._start()
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps({"folder": str(folder), "argv": argv}) + "\n")
        process.stdin.flush()
        bound = self.time_bound_s * SEEDS_BY_NAME[case.seed].slow
        ready, _, _ = select.select([process.stdout], [], [], bound)
        if not ready:
            self._stop()
            shutil.rmtree(folder, ignore_errors=True)
            return Outcome(HANG, f"over {bound:g} s ({case.seed})")
        line = process.stdout.readline()
        if not line:
            code = process.wait()
            _close_pipes(process)
            self.process = None
            shutil.rmtree(folder, ignore_errors=True)
            return Outcome(CONTRACT, f"worker died (exit status {code})", code)
        reply = json.loads(line)
        written = sorted(_listing(folder) - inputs) if reply["code"] == 2 else []
        shutil.rmtree(folder, ignore_errors=True)
        seed = SEEDS_BY_NAME[case.seed]
        return classify(
            reply,
            written,
            nonsense=case.nonsense,
            judged=seed.judged,
            flagged=seed.flagged,
            nonsense_text=seed.nonsense_text,
        )

    def _materialise(self, case: Case) -> Path:
        self.count += 1
        folder = self.root / f"case-{self.count}"
        folder.mkdir()
        write_files(folder, case)
        return folder


#: What every case folder also holds, for mutations to name where a file is read or written:
#: a FIFO (reading one with no writer blocks forever) and a folder.
FIFO_NAME, FOLDER_NAME = "fifo.yaml", "adir"


def write_files(folder: Path, case: Case) -> None:
    """The case's input files under ``folder`` (a name may hold a subfolder: ``ds/...``), and
    ``FIFO_NAME`` and ``FOLDER_NAME``."""
    for name, data in case.files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    os.mkfifo(folder / FIFO_NAME)
    (folder / FOLDER_NAME).mkdir()


def _close_pipes(process: subprocess.Popen[str]) -> None:
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            pipe.close()


def _listing(folder: Path) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*")}


def subprocess_outcome(case: Case, time_bound_s: float) -> tuple[int | None, str]:
    """The exit status and stderr of ``python -m aisim`` on ``case`` (the spot check that the
    in-process run matches a real process)."""
    with tempfile.TemporaryDirectory(prefix="aisim-fuzz-spot-") as folder:
        write_files(Path(folder), case)
        argv = [arg.replace("{out}", "out") for arg in case.argv]
        try:
            done = subprocess.run(
                [sys.executable, "-m", "aisim", *argv],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=time_bound_s * 3,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return None, "timeout"
        return done.returncode, done.stderr


@dataclass
class Tally:
    """Counts per class (overall and per campaign), and the first case and outcome of every
    failure signature."""

    counts: Counter[str] = field(default_factory=Counter)
    by_campaign: dict[str, Counter[str]] = field(default_factory=dict)
    failures: dict[str, tuple[Case, Outcome]] = field(default_factory=dict)
    spot_checks: int = 0
    spot_mismatches: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def add(self, case: Case, outcome: Outcome) -> None:
        self.counts["runs"] += 1
        if self.counts["runs"] % 1000 == 0:
            print(self.summary(), file=sys.stderr, flush=True)
        self.counts[outcome.kind] += 1
        campaign = self.by_campaign.setdefault(case.campaign, Counter())
        campaign["runs"] += 1
        campaign[outcome.kind] += 1
        if outcome.kind in FAILURES:
            key = f"{outcome.kind}: {outcome.signature}"
            if key not in self.failures:
                # Said at once: a long run's first sight of a failure is worth acting on early.
                print(
                    f"new failure: {key} (case {self.counts['runs']})", file=sys.stderr, flush=True
                )
                self.failures[key] = (case, outcome)

    def summary(self) -> str:
        counts = self.counts
        seconds = time.monotonic() - self.started
        return (
            f"runs: {counts['runs']}  clean rejections: {counts[REJECT]}  accepts: "
            f"{counts[ACCEPT]}  tracebacks: {counts[TRACEBACK]}  hangs: {counts[HANG]}  "
            f"accepted nonsense: {counts[NONSENSE]}  other contract breaches: {counts[CONTRACT]}"
            f"  ({seconds:.0f} s)"
        )

    def campaign_table(self) -> list[str]:
        """One line per campaign: runs and each class."""
        header = f"  {'campaign':<22} {'runs':>6} " + " ".join(f"{kind:>9}" for kind in CLASSES)
        lines = [header]
        for name in sorted(self.by_campaign):
            counts = self.by_campaign[name]
            cells = " ".join(f"{counts[kind]:>9}" for kind in CLASSES)
            lines.append(f"  {name:<22} {counts['runs']:>6} {cells}")
        return lines

    def failed(self) -> bool:
        return bool(self.failures) or bool(self.spot_mismatches)


def minimise(case: Case, outcome: Outcome, executor: Executor) -> Case:
    """Drop mutations one at a time while the case still fails with the same signature."""
    seed = SEEDS_BY_NAME[case.seed]
    mutations = list(case.mutations)
    changed = True
    while changed and len(mutations) > 1:
        changed = False
        for index in range(len(mutations)):
            trial = build(seed, tuple(mutations[:index] + mutations[index + 1 :]))
            again = executor.run(trial)
            if (again.kind, again.signature) == (outcome.kind, outcome.signature):
                mutations = list(trial.mutations)
                changed = True
                break
    return build(seed, tuple(mutations))


def report(tally: Tally, minimal: dict[str, Case]) -> str:
    """Counts per class, then each failure's signature and minimal reproducer."""
    lines = [
        tally.summary(),
        "per campaign:",
        *tally.campaign_table(),
        f"subprocess spot checks: {tally.spot_checks}, mismatches: {len(tally.spot_mismatches)}",
    ]
    lines.extend(f"  spot mismatch: {text}" for text in tally.spot_mismatches)
    for key, (case, outcome) in tally.failures.items():
        small = minimal.get(key, case)
        lines.append(f"FAILURE {key}")
        lines.append(f"  seed: {small.seed}; argv: aisim {' '.join(small.argv)}")
        lines.extend(f"  mutation: {mutation.describe()}" for mutation in small.mutations)
        for name, data in small.files:
            text = data[:400].decode("utf-8", "backslashreplace")
            lines.append(f"  file {name}: {text!r}")
        detail = (outcome.detail or outcome.err).strip().splitlines()
        lines.extend(f"  | {line}" for line in detail[-6:])
    return "\n".join(lines) + "\n"
