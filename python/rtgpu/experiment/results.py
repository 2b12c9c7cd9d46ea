"""The tidy results file: one CSV row per (point, analysis), appended as
points finish; reading it back for resume, summaries, Parquet and plots."""

from __future__ import annotations

import csv
import importlib
import io
import json
import math
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .lock import StudyWarning
from .registry import SAMPLES
from .study import Study, StudyError

__all__ = ["ResultsFile", "Row", "columns", "read_rows", "summarize", "write_parquet"]

Row = dict[str, str]

MEASURED = (
    "analysis",
    "sets",
    "tasks_mean",
    "utilization_mean",
    "effective_utilization_mean",
    "schedulable",
)


def sample_metrics(study: Study) -> tuple[str, ...]:
    """The per-set metrics of ``study``, one column each."""
    return tuple(m for m in SAMPLES if m in study.metrics)


def columns(study: Study) -> list[str]:
    """Column order: the point key, its chunk, one column per axis, the
    measured values, one column per per-set metric (space-separated values,
    in set order), the compute time. ``schedulable`` is empty for an analysis
    without metric ratio, a per-set column for one without that metric."""
    return ["point", "chunk", *study.axes, *MEASURED, *sample_metrics(study), "seconds"]


def read_text(path: Path, *, torn_ok: bool = False) -> str:
    """The text of a results file; a byte that is not UTF-8 is a
    :class:`StudyError` naming the file, line and column (not a
    traceback). With ``torn_ok``, bad bytes in an unterminated last line
    (a write cut short in a multi-byte character) are left to the caller,
    which drops that line."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        last_nl = raw.rfind(b"\n")
        if torn_ok and e.start > last_nl:
            return raw[: last_nl + 1].decode("utf-8", errors="replace") + "\ufffd"
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise StudyError(
            f"{path}:{line}: not UTF-8 (byte 0x{raw[e.start]:02x} at column {col}): the file "
            "is damaged; delete that line to recompute its point, or use --fresh"
        ) from None


def read_rows(path: Path) -> list[Row]:
    if not path.exists():
        return []
    return list(csv.DictReader(io.StringIO(read_text(path), newline="")))


@dataclass
class ResultsFile:
    """``results.csv`` of a study's output directory, opened for appending.

    On open it checks that the directory belongs to this study (same
    fingerprint in ``study.json``), drops a torn last line and the rows of any
    point that is not complete (fewer rows than analyses), and reports the
    points already done."""

    study: Study
    fresh: bool = False

    def __post_init__(self) -> None:
        out = self.study.output
        out.mkdir(parents=True, exist_ok=True)
        self.path = out / "results.csv"
        meta_path = out / "study.json"
        cols = columns(self.study)
        if self.fresh:
            for name in ("results.csv", "summary.csv", "results.parquet"):
                (out / name).unlink(missing_ok=True)
        if self.path.exists() and meta_path.exists():
            try:
                meta = json.loads(meta_path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise StudyError(f"{meta_path}: unreadable ({e}); use --fresh") from None
            if meta.get("fingerprint") != self.study.fingerprint:
                raise StudyError(
                    f"{out} holds results of a different study (fingerprint "
                    f"{meta.get('fingerprint')}, this study {self.study.fingerprint}): "
                    "use --fresh to discard them, or another output directory"
                )
        elif self.path.exists():
            raise StudyError(f"{self.path} exists without study.json; use --fresh or move it")
        meta_path.write_text(
            json.dumps(
                {
                    "name": self.study.name,
                    "study_file": str(self.study.path),
                    "fingerprint": self.study.fingerprint,
                    "columns": cols,
                },
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )
        self.done: set[str] = set()
        self._repair(cols)
        new = not self.path.exists()
        self._file: IO[str] = self.path.open("a", newline="", encoding="utf-8")
        self._writer = csv.DictWriter(self._file, fieldnames=cols, lineterminator="\n")
        if new:
            self._writer.writeheader()
            self._file.flush()

    def _repair(self, cols: list[str]) -> None:
        """Reads back ``results.csv``: drops a torn last line and the rows
        of incomplete points, keeps one row of a (point, analysis) written
        more than once (two runs at once before the output was locked,
        issue 22) with a warning, and refuses what would make the summary
        wrong: rows that disagree, rows of the wrong shape, bad numbers."""
        if not self.path.exists():
            return
        text = read_text(self.path, torn_ok=True)
        torn = bool(text) and not text.endswith("\n")
        if torn:
            text = text[: text.rfind("\n") + 1]  # the line being written when the run stopped
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if header is None:
            # Empty, or only a torn header: the run stopped as it began.
            self.path.unlink()
            return
        if header != cols:
            raise StudyError(
                f"{self.path}: columns {header} differ from this study's {cols}; use --fresh"
            )
        keys = {(p.key, a) for p in self.study.points() for a, _ in self.study.analyses}
        first: dict[tuple[str, str], tuple[int, list[str]]] = {}
        rows: list[Row] = []
        duplicates = unknown = 0
        ignore = cols.index("seconds")  # differs between two computations of a point
        for fields in reader:
            line = reader.line_num
            if len(fields) != len(cols):
                raise StudyError(
                    f"{self.path}:{line}: {len(fields)} fields where the header has "
                    f"{len(cols)}: the file is damaged; delete that line to recompute its "
                    "point, or use --fresh"
                )
            r = dict(zip(cols, fields))
            _check_numbers(self.path, line, r)
            key = (r["point"], r["analysis"])
            if key not in keys:
                unknown += 1
                continue
            same = [f for i, f in enumerate(fields) if i != ignore]
            if key in first:
                at, seen = first[key]
                if seen != same:
                    raise StudyError(
                        f"{self.path}:{line}: point {key[0]}, analysis {key[1]} has other "
                        f"results than on line {at}: the file mixes runs; use --fresh"
                    )
                duplicates += 1
                continue
            first[key] = (line, same)
            rows.append(r)
        if duplicates:
            warnings.warn(
                f"{self.path}: {duplicates} duplicated row(s) (a point and analysis written "
                "more than once, as by two runs at once); kept one of each",
                StudyWarning,
                stacklevel=2,
            )
        if unknown:
            warnings.warn(
                f"{self.path}: dropped {unknown} row(s) of points this study does not have",
                StudyWarning,
                stacklevel=2,
            )
        want = {a for a, _ in self.study.analyses}
        got: dict[str, set[str]] = {}
        for r in rows:
            got.setdefault(r["point"], set()).add(r["analysis"])
        complete = {p for p, a in got.items() if a == want}
        keep = [r for r in rows if r["point"] in complete]
        if torn or duplicates or unknown or len(keep) != len(rows):
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            with tmp.open("w", newline="", encoding="utf-8") as f:
                w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
                w.writeheader()
                w.writerows(keep)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        self.done = complete

    def append(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Append one point's rows in a single write, then flush."""
        self._writer.writerows(rows)
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _check_numbers(path: Path, line: int, r: Row) -> None:
    """``sets`` a count, ``schedulable`` a count or empty: what the summary
    adds up."""
    sets, sched = r.get("sets", ""), r.get("schedulable", "")
    if not sets.isdigit() or not (sched == "" or sched.isdigit()):
        raise StudyError(
            f"{path}:{line}: sets {sets!r}, schedulable {sched!r} are not counts: the file is "
            "damaged; delete that line to recompute its point, or use --fresh"
        )


def _f(v: str) -> float:
    return float(v) if v else math.nan


def summarize(study: Study, rows: Iterable[Row]) -> list[dict[str, Any]]:
    """One row per (axis combination, analysis), over its chunks: sets,
    schedulable ratio, mean utilizations, mean and standard deviation of the
    breakdown utilization (also divided by ``cores`` when there is one)."""
    groups: dict[tuple[str, ...], list[Row]] = {}
    axes = list(study.axes)
    for r in rows:
        groups.setdefault((*[r[a] for a in axes], r["analysis"]), []).append(r)
    out = []
    for key, rs in groups.items():
        sets = sum(int(r["sets"]) for r in rs)
        s: dict[str, Any] = dict(zip([*axes, "analysis"], key))
        s["sets"] = sets
        s["utilization_mean"] = sum(_f(r["utilization_mean"]) * int(r["sets"]) for r in rs) / sets
        s["effective_utilization_mean"] = (
            sum(_f(r["effective_utilization_mean"]) * int(r["sets"]) for r in rs) / sets
        )
        if all(r["schedulable"] for r in rs):
            s["schedulable"] = sum(int(r["schedulable"]) for r in rs)
            s["ratio"] = s["schedulable"] / sets
        for metric in sample_metrics(study):
            b = samples(rs, metric)
            if not b:
                continue
            mean = sum(b) / len(b)
            s[f"{metric}_mean"] = mean
            s[f"{metric}_std"] = math.sqrt(sum((x - mean) ** 2 for x in b) / len(b))
            s[f"{metric}_max"] = max(b)
            cores = _cores(study, rs[0])
            if metric == "breakdown" and cores:
                s["breakdown_per_core_mean"] = mean / cores
        out.append(s)
    return out


def samples(rows: Iterable[Row], metric: str) -> list[float]:
    """Every per-set value of ``metric`` in ``rows``."""
    return [float(x) for r in rows for x in (r.get(metric) or "").split()]


def _cores(study: Study, row: Row) -> float | None:
    v = row.get("cores", study.parameters.get("cores"))
    try:
        return float(v) if v not in (None, "") else None
    except (TypeError, ValueError):
        return None


def write_summary(study: Study, rows: list[Row]) -> Path:
    summary = summarize(study, rows)
    path = study.output / "summary.csv"
    cols: list[str] = []
    for s in summary:
        cols += [k for k in s if k not in cols]
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        w.writerows(summary)
    return path


def write_parquet(study: Study) -> Path | None:
    """``results.parquet`` beside ``results.csv`` when pyarrow is importable."""
    try:
        pacsv: Any = importlib.import_module("pyarrow.csv")
        pq: Any = importlib.import_module("pyarrow.parquet")
    except ImportError:
        return None
    src = study.output / "results.csv"
    path = study.output / "results.parquet"
    text = ["point", "analysis", *sample_metrics(study)]
    opts = pacsv.ConvertOptions(
        column_types=dict.fromkeys(text, importlib.import_module("pyarrow").string())
    )
    pq.write_table(pacsv.read_csv(src, convert_options=opts), path)
    return path
