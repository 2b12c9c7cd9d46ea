"""Docs that cannot go stale (issue 23): every command in the shell blocks of README.md and
docs/guide/*.md runs, as written, against the release binary.

What is taken from the Markdown:

- each ```sh / ```bash block, line by line (``\\`` continuations joined, ``#`` comments
  dropped), and the ``$ ...`` prompt lines of transcripts in other blocks (```text): a
  transcript runs as shown (its duration too) and must still print every output line the
  doc shows (``...`` lines elide);
- the options of inline ``rtgpu ...`` code spans of the prose must exist (``--help``);
- a synopsis (``[--flag X]``, ``a|b`` inside brackets, placeholders in capitals such as FILE,
  STUDY, OUT, N, or ``...``) is counted, not run; a synopsis continued on lines that start
  with ``[`` counts once;
- everything else is a command. It runs, unless SKIP names it with a reason (root, a GPU, a
  network scheduler, minutes of work). Files the docs assume the reader has (robot.toml,
  run.trace, ...) come from FIXTURES. A SKIP or FIXTURES entry that no longer matches the docs
  fails the test, so neither list can go stale.

How a command runs: in a fresh temporary directory per block (commands of one block share it,
in order, so a file one writes the next can read) holding symlinks to the repository's
examples/, crates/ and studies/ and copies of the fixtures; ``rtgpu`` is the release binary
(``RTGPU_BIN`` overrides target/release/rtgpu) first on PATH; ``--duration X`` becomes
``--duration "200 ms"`` and ``/tmp/`` the temporary directory's tmp/, every other flag as
written; stdin closed, ``CI=true``, a timeout. Lines with shell syntax (pipes, ``||``,
redirections) run through bash. Exit status 0 passes; 1 also passes for ``rtgpu analyze``
(not schedulable), ``simulate`` and ``run`` (a missed deadline): those are answers. Anything
else (2 is invalid input or a usage error), a signal or a Rust panic is a broken doc.

Run alone: ``.venv/bin/python -m pytest -q tests/python/test_docs_commands.py`` (after
``cargo build --release -p rtgpu-cli``); the counts are printed at the end of the run.
"""

from __future__ import annotations

import ctypes
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]
LINKED = ("examples", "crates", "studies")
SHELL_FENCES = {"sh", "bash", "shell"}
TIMEOUT_S = 120
SHORT_DURATION = '"200 ms"'

# Commands that cannot run here, by their text as extracted (continuations joined, comments
# dropped), with the reason. Each must still appear in the docs.
SKIP: dict[str, str] = {
    "scripts/demo.sh": "builds everything and installs into ~/.cargo/bin (minutes)",
    "scripts/test.sh": "the whole suite, which runs this test",
    "scripts/install-capi.sh ~/.local": (
        "builds and installs the C library (minutes); crates/capi/tests/c_client.rs "
        "installs it into a temporary prefix and builds a C program with pkg-config"
    ),
    'sudo rtgpu latency record --duration "60 s" -o run.trace -- ./my-workload --args': (
        "needs root and tracefs, and the reader's own workload; "
        "crates/latency/tests cover record; run.trace is a fixture below"
    ),
    "rtgpu experiment studies/seed003-breakdown.toml --workers 2": (
        "a whole study (40,000 task sets, ~30 s on 2 workers) writing into studies/results; "
        "tests/python/test_experiment.py runs `rtgpu experiment` on a small study"
    ),
    "RTGPU_BLESS=1 cargo test -p rtgpu-capi --test header": (
        "rewrites the committed C header (a debug build of cbindgen, minutes); the suite runs "
        "the same test without RTGPU_BLESS, which fails when the header is stale"
    ),
    "dask scheduler": "a Dask scheduler: a server that never exits",
    "dask worker tcp://host:8786 --nworkers auto --nthreads 1": "needs a scheduler on host",
    "rtgpu experiment studies/seed000-overheads.toml --scheduler tcp://host:8786": (
        "needs a Dask scheduler on host:8786"
    ),
    "qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 1024 -kernel vmlinuz "
    '-initrd initrd.gz -append "console=ttyS0 quiet noirqdebug" -nographic -no-reboot': (
        "needs qemu, a PREEMPT_RT kernel image and an initrd (scripts/qemu-rt-trace.sh)"
    ),
    "cargo test -p rtgpu-latency --test qemu_rt -- --ignored --nocapture": (
        "boots a PREEMPT_RT kernel under qemu (minutes, downloads the kernel)"
    ),
    "cargo install cargo-fuzz": "network; fuzzing is a long run outside the suite",
    "cd fuzz": "fuzzing set-up (docs/testing.md): cargo-fuzz and a nightly-only build",
    "mkdir -p corpus/parse_ftrace corpus/parse_trace_cmd corpus/parse_perf_script": (
        "fuzzing set-up, in fuzz/"
    ),
    "head -300 ../crates/latency/tests/fixtures/rt-qemu-timerlat.trace.txt > "
    "corpus/parse_ftrace/rt": "fuzzing set-up, in fuzz/",
    "head -200 ../crates/latency/tests/fixtures/host-trace-cmd-report.txt > "
    "corpus/parse_trace_cmd/tc": "fuzzing set-up, in fuzz/",
    "head -200 ../crates/latency/tests/fixtures/host-perf-script.txt > "
    "corpus/parse_perf_script/perf": "fuzzing set-up, in fuzz/",
    "RUSTC_BOOTSTRAP=1 nice -n 10 cargo fuzz run -O -a parse_ftrace corpus/parse_ftrace -- "
    "-max_total_time=600 -max_len=16384 -print_final_stats=1": "ten minutes of fuzzing",
}

# Commands that need the NVIDIA driver: run where libcuda.so.1 loads, skipped (with this
# reason) elsewhere. Each must still appear in the docs.
NEEDS_CUDA: dict[str, str] = {
    "rtgpu gpu --backend cuda --check": "insists on CUDA: exit 2 without the NVIDIA driver",
}

# Files the docs assume the reader has: name in the temporary directory -> repository file.
FIXTURES: dict[str, str] = {
    # What `rtgpu latency record -o run.trace` writes (and its cyclictest beside it).
    "run.trace": "crates/latency/tests/fixtures/host-rtgpu-record.trace.txt",
    "ct.txt": "crates/latency/tests/fixtures/host-rtgpu-record.cyclictest.txt",
    # "your workload"
    "robot.toml": "examples/perception-1gpu.toml",
    "workload.toml": "examples/quickstart.toml",
}

# Subcommands whose exit status 1 is an answer (not schedulable, a missed deadline).
ANSWER_ONE = {"analyze", "simulate", "run"}

PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(\.\.\.)?$|^\.\.\.$")
SHELL_CHARS = set("|&;<>{}$`*")
DURATION = re.compile(r"--duration(?:=|\s+)(?:\"[^\"]*\"|'[^']*'|\S+)")


@dataclass
class Entry:
    file: str  # relative to the repository
    line: int  # first line, 1-based
    text: str  # continuations joined, comment dropped
    synopsis: bool = False
    transcript: bool = False  # a ``$ `` line of a text block
    expected: list[str] = field(default_factory=list)  # its output as shown, "..." dropped

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class Block:
    file: str
    line: int  # the opening fence
    entries: list[Entry] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def strip_comment(line: str) -> str:
    """The line without a ``#`` comment (one that starts a word, outside quotes)."""
    quote = ""
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def words(text: str) -> list[str]:
    """Shell words with their quotes kept (quoted words are never placeholders)."""
    lexer = shlex.shlex(text, posix=False)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: a doc typo the run will report
        return text.split()


def is_synopsis(text: str) -> bool:
    for w in words(text):
        if w[0] in "\"'":
            continue
        if w.startswith("[") or PLACEHOLDER.match(w):
            return True
    return False


def needs_shell(text: str) -> bool:
    return any(w[0] not in "\"'" and SHELL_CHARS & set(w) for w in words(text))


def extract(path: Path) -> list[Block]:
    rel = path.relative_to(ROOT).as_posix()
    blocks: list[Block] = []
    block: Block | None = None
    fence = ""
    pending: tuple[int, str] | None = None  # a line continued with a backslash
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        stripped = raw.strip()
        if block is None:
            if stripped.startswith("```"):
                fence = stripped[3:].strip().split(" ")[0]
                block = Block(rel, n)
            continue
        if stripped.startswith("```"):
            if pending is not None:  # a backslash on the block's last line
                block.entries.append(Entry(rel, pending[0], pending[1], is_synopsis(pending[1])))
                pending = None
            if block.entries:
                blocks.append(block)
            block = None
            continue
        last = block.entries[-1] if block.entries else None
        if fence in SHELL_FENCES:
            text = raw
        elif stripped.startswith("$ "):
            block.entries.append(Entry(rel, n, stripped[2:], transcript=True))
            continue  # a transcript's prompt line (shown whole, no continuations)
        elif last is not None and last.transcript:
            if stripped != "...":
                last.expected.append(raw.rstrip())
            continue
        elif (stripped.startswith("rtgpu ") and is_synopsis(stripped)) or (
            stripped.startswith("[") and last is not None and last.synopsis
        ):
            text = stripped  # a synopsis in a text block, or its continuation
        else:
            continue
        if pending is not None:
            start, text = pending[0], pending[1] + " " + text.strip()
            pending = None
        else:
            start = n
        if text.rstrip().endswith("\\"):
            pending = (start, text.rstrip()[:-1].rstrip())
            continue
        text = strip_comment(text).strip()
        if not text:
            continue
        if text.startswith("[") and last is not None and last.synopsis:
            last.text += " " + text  # a synopsis continued on the next line
            continue
        block.entries.append(Entry(rel, start, text, is_synopsis(text)))
    return blocks


BLOCKS = [b for doc in DOCS for b in extract(doc)]
ENTRIES = [e for b in BLOCKS for e in b.entries]


def cuda_available() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


CUDA = cuda_available()


def skip_reason(entry: Entry) -> str | None:
    if entry.text in SKIP:
        return SKIP[entry.text]
    if entry.text in NEEDS_CUDA and not CUDA:
        return NEEDS_CUDA[entry.text]
    return None


def rtgpu_binary() -> Path:
    env = os.environ.get("RTGPU_BIN")
    exe = Path(env).resolve() if env else ROOT / "target" / "release" / "rtgpu"
    if not exe.is_file():
        pytest.fail(
            f"{exe} not found: build it with `cargo build --release -p rtgpu-cli` "
            "(scripts/test.sh does) or point RTGPU_BIN at an rtgpu binary"
        )
    return exe


def subcommand(text: str) -> str | None:
    ws = words(text)
    for i, w in enumerate(ws[:-1]):
        if w == "rtgpu":
            return ws[i + 1]
    return None


def rewrite(text: str, tmp: Path) -> str:
    text = DURATION.sub(f"--duration {SHORT_DURATION}", text)
    return text.replace("/tmp/", f"{tmp}/tmp/")


def workdir(tmp: Path, exe: Path) -> dict[str, str]:
    """Lay out the block's directory and return the environment to run in."""
    for name in LINKED:
        (tmp / name).symlink_to(ROOT / name, target_is_directory=True)
    for name, source in FIXTURES.items():
        shutil.copyfile(ROOT / source, tmp / name)
    (tmp / "tmp").mkdir()
    bindir = tmp / ".bin"
    bindir.mkdir()
    (bindir / "rtgpu").symlink_to(exe)
    return {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "CI": "true"}


def run_entry(entry: Entry, tmp: Path, env: dict[str, str]) -> str | None:
    """Run one command; None when it passed, else what went wrong."""
    # A transcript runs as shown, its duration too: its output is compared.
    text = (
        entry.text.replace("/tmp/", f"{tmp}/tmp/") if entry.transcript else rewrite(entry.text, tmp)
    )
    argv = ["bash", "-c", text] if needs_shell(entry.text) else shlex.split(text)
    try:
        out = subprocess.run(
            argv,
            cwd=tmp,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f"{entry.where}: `{entry.text}` ran as `{text}` did not finish in {TIMEOUT_S} s"
    except OSError as e:
        return f"{entry.where}: `{entry.text}` could not start: {e}"
    ok = {0, 1} if subcommand(entry.text) in ANSWER_ONE else {0}
    panicked = "panicked at" in out.stderr
    if out.returncode in ok and not panicked:
        shown = {line.rstrip() for line in out.stdout.splitlines()}
        missing = [line for line in entry.expected if line not in shown]
        if not missing:
            return None
        return (
            f"{entry.where}: `{entry.text}` no longer prints {len(missing)} of the "
            f"{len(entry.expected)} output lines the doc shows, first:\n"
            + "\n".join("    " + line for line in missing[:8])
        )
    tail = "\n".join((out.stderr.strip() or out.stdout.strip()).splitlines()[-15:])
    status = f"signal {-out.returncode}" if out.returncode < 0 else f"exit {out.returncode}"
    return (
        f"{entry.where}: `{entry.text}` (ran as `{text}`): {status}"
        f"{' (panic)' if panicked else ''}, expected {sorted(ok)}\n"
        + "\n".join("    " + line for line in tail.splitlines())
    )


def listing(path: Path) -> set[str]:
    return {p.relative_to(path).as_posix() for p in path.rglob("*")}


RUNNABLE = [b for b in BLOCKS if any(not e.synopsis and skip_reason(e) is None for e in b.entries)]


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.where for b in RUNNABLE])
def test_block_runs(block: Block, tmp_path: Path) -> None:
    exe = rtgpu_binary()
    env = workdir(tmp_path, exe)
    before = {name: listing(ROOT / name) for name in ("examples", "studies")}
    failures: list[str] = []
    for entry in block.entries:
        if entry.synopsis or skip_reason(entry) is not None:
            continue
        failure = run_entry(entry, tmp_path, env)
        if failure is not None:
            failures.append(failure)
    for name, files in before.items():
        added = sorted(listing(ROOT / name) - files)
        assert not added, f"{block.where}: commands wrote into the repository's {name}/: {added}"
    assert not failures, "docs commands broke:\n" + "\n".join(failures)


OPTION = re.compile(r"\[(--?[a-z][a-z0-9-]*)(?:[ =]+([^\]]*))?\]")


def help_text(exe: Path, command: list[str]) -> str:
    out = subprocess.run(
        [str(exe), *command, "--help"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert out.returncode == 0, f"`rtgpu {' '.join(command)} --help`: {out.stderr}"
    return out.stdout


def synopsis_command(text: str) -> list[str] | None:
    """The subcommand words of an ``rtgpu`` synopsis (``["latency", "report"]``)."""
    ws = words(text)
    if not ws or ws[0] != "rtgpu":
        return None
    command: list[str] = []
    for w in ws[1:]:
        if not re.fullmatch(r"[a-z][a-z-]*", w):
            break
        command.append(w)
    return command


SYNOPSES = [e for e in ENTRIES if e.synopsis and synopsis_command(e.text) is not None]


@pytest.mark.parametrize("entry", SYNOPSES, ids=[e.where for e in SYNOPSES])
def test_synopsis_matches_help(entry: Entry) -> None:
    """A synopsis is not run, but its options and their listed values are the CLI's."""
    command = synopsis_command(entry.text)
    assert command is not None
    help_ = help_text(rtgpu_binary(), command)
    missing: list[str] = []
    for option, argument in OPTION.findall(entry.text):
        if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", help_):
            missing.append(option)
        elif "|" in argument:
            values = [v for v in argument.split("|") if not PLACEHOLDER.match(v)]
            missing += [
                f"{option} {v}"
                for v in values
                if not re.search(rf"(?<![\w-]){re.escape(v)}\b", help_)
            ]
    assert not missing, (
        f"{entry.where}: the synopsis `{entry.text}` names what "
        f"`rtgpu {' '.join(command)} --help` does not: {', '.join(missing)}"
    )


FENCED = re.compile(r"^\s*```.*?^\s*```", re.M | re.S)
INLINE_OPTION = re.compile(r"(?<![\w-])(--?[a-z][a-z0-9-]*)")
INLINE = re.compile(r"`(rtgpu [^`]+)`")  # may wrap lines


def inline_spans() -> list[tuple[str, int, str]]:
    """The ``rtgpu ...`` inline code spans of the prose, with file and line."""
    spans: list[tuple[str, int, str]] = []
    for doc in DOCS:
        text = doc.read_text()
        prose = FENCED.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        for m in INLINE.finditer(prose):
            line = prose.count("\n", 0, m.start()) + 1
            spans.append((doc.relative_to(ROOT).as_posix(), line, " ".join(m.group(1).split())))
    return spans


def test_inline_options_exist() -> None:
    """An inline `rtgpu SUB ... --flag` in the prose names options SUB has."""
    exe = rtgpu_binary()
    helps: dict[tuple[str, ...], str] = {}
    wrong: list[str] = []
    for file, line, span in inline_spans():
        command = synopsis_command(span) or []
        options = INLINE_OPTION.findall(span)
        if not options:
            continue
        key = tuple(command)
        if key not in helps:
            helps[key] = help_text(exe, command)
        missing = [
            o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", helps[key])
        ]
        if missing:
            wrong.append(
                f"{file}:{line}: `{span}`: not in `rtgpu {' '.join(key)} --help`: {missing}"
            )
    assert not wrong, "inline commands name options the CLI does not have:\n" + "\n".join(wrong)


def test_lists_are_current(docs_summary: list[str]) -> None:
    """Every SKIP, NEEDS_CUDA and FIXTURES entry still matches the docs; the counts."""
    texts = {e.text for e in ENTRIES if not e.synopsis}
    stale = [f"SKIP: {t!r}" for t in SKIP if t not in texts]
    stale += [f"NEEDS_CUDA: {t!r}" for t in NEEDS_CUDA if t not in texts]
    stale += [
        f"FIXTURES: {name!r} (no command names it)"
        for name in FIXTURES
        if not any(re.search(rf"(^|[\s=]){re.escape(name)}($|\s)", t) for t in texts)
    ]
    assert not stale, "entries that no longer match any doc command:\n" + "\n".join(stale)
    synopsis = [e for e in ENTRIES if e.synopsis]
    skipped = [(e, r) for e in ENTRIES if not e.synopsis for r in [skip_reason(e)] if r]
    run = len(ENTRIES) - len(synopsis) - len(skipped)
    transcripts = [e for e in ENTRIES if e.expected and skip_reason(e) is None]
    docs_summary.append(
        f"docs commands: {run} run, {len(synopsis)} synopsis lines, {len(skipped)} skipped "
        f"({len(DOCS)} files, {len(BLOCKS)} blocks; {len(transcripts)} transcripts, "
        f"{sum(len(e.expected) for e in transcripts)} output lines compared); "
        f"options of {sum(bool(INLINE_OPTION.search(t)) for _, _, t in inline_spans())} "
        "inline `rtgpu ...` spans checked"
    )
    docs_summary.extend(f"  skipped {e.where}: {e.text}\n      {r}" for e, r in skipped)
    assert run > 0 and synopsis
