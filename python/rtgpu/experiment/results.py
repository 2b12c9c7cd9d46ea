"""A study's tables.

``results.csv`` is the run's journal: one row per (point, analysis), appended
and flushed as points finish, read back to resume. From it the runner writes
the tables to analyse: ``sets.csv`` (tidy: one row per task set, analysis and
metric, typed values; ``sets.parquet`` the same with pyarrow) and
``summary.csv`` (per axis combination and analysis, with 95 % intervals).
:func:`load_results` reads them back as rows or a pandas DataFrame."""

from __future__ import annotations

import csv
import importlib
import io
import json
import math
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .lock import StudyWarning
from .registry import PER_SET
from .stats import mean_ci, wilson
from .study import Study, StudyError, _fmt

__all__ = [
    "Results",
    "ResultsFile",
    "Row",
    "columns",
    "load_results",
    "read_rows",
    "summarize",
    "tidy_rows",
    "write_sets",
]

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
    """The per-set columns of ``study`` (``accepted`` for ``ratio``,
    ``breakdown``, ``blocking``), one column each."""
    return tuple(c for m, c in PER_SET.items() if m in study.metrics)


def columns(study: Study) -> list[str]:
    """Column order: the point key, its chunk, one column per axis, the
    measured values, one column per per-set metric (space-separated values,
    in set order), the compute time. ``schedulable`` is empty for an analysis
    without metric ratio, a per-set column for one without that metric (and
    ``accepted`` for an analysis that only counts)."""
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
            for name in ("results.csv", "summary.csv", "sets.csv", "sets.parquet"):
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
            _check_numbers(self.path, line, r, sample_metrics(self.study))
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
            _atomic(self.path, lambda f: _write_csv(f, cols, keep))
        self.done = complete

    def append(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Append one point's rows in a single write, then flush."""
        self._writer.writerows(rows)
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _check_numbers(path: Path, line: int, r: Row, per_set: Sequence[str]) -> None:
    """``sets`` a count, ``schedulable`` a count or empty, each per-set
    column empty or one number per set: what the summary, the tidy tables
    and the plots read."""
    sets, sched = r.get("sets", ""), r.get("schedulable", "")
    damaged = "the file is damaged; delete that line to recompute its point, or use --fresh"
    if not sets.isdigit() or not (sched == "" or sched.isdigit()):
        raise StudyError(
            f"{path}:{line}: sets {sets!r}, schedulable {sched!r} are not counts: {damaged}"
        )
    for c in per_set:
        values = r.get(c, "").split()
        if values and len(values) != int(sets):
            raise StudyError(
                f"{path}:{line}: {c} has {len(values)} values for {sets} sets: {damaged}"
            )
        for v in values:
            try:
                float(v)
            except ValueError:
                raise StudyError(
                    f"{path}:{line}: {c} value {v!r} is not a number: {damaged}"
                ) from None


def _f(v: str) -> float:
    return float(v) if v else math.nan


def summarize(study: Study, rows: Iterable[Row]) -> list[dict[str, Any]]:
    """One row per (axis combination, analysis), over its chunks: sets,
    schedulable ratio with its Wilson 95 % interval (``ratio_lo``,
    ``ratio_hi``), mean utilizations, mean, 95 % half-width (``_ci95``),
    standard deviation and maximum of each per-set metric (the breakdown
    utilization also divided by ``cores`` when there is one)."""
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
            s["ratio_lo"], s["ratio_hi"] = wilson(s["schedulable"], sets)
        for metric in sample_metrics(study):
            if metric == "accepted":  # the ratio above, per set
                continue
            b = samples(rs, metric)
            if not b:
                continue
            mean, half = mean_ci(b)
            s[f"{metric}_mean"] = mean
            s[f"{metric}_ci95"] = half
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
    _atomic(path, lambda f: _write_csv(f, cols, summary))
    return path


def tidy_rows(study: Study, rows: Iterable[Row]) -> Iterator[dict[str, Any]]:
    """The tidy table of ``rows`` (``results.csv``): one row per task set,
    analysis and per-set metric (``accepted`` 1 or 0, ``breakdown``,
    ``blocking``), with typed values: ``chunk`` and ``set`` (the set's index
    within its axis combination, the same set for every analysis) integers,
    the axes as the study gives them, ``value`` a float. Ordered by point
    (the study's order), analysis, metric, then set."""
    order = {p.key: (i, p.first) for i, p in enumerate(study.points())}
    analyses = [a for a, _ in study.analyses]
    per_set = sample_metrics(study)
    typed = {a: {_fmt(v): v for v in vs} for a, vs in study.axes.items()}
    known = [r for r in rows if r["point"] in order]
    known.sort(key=lambda r: (order[r["point"]][0], analyses.index(r["analysis"])))
    for r in known:
        first = order[r["point"]][1]
        base: dict[str, Any] = {"point": r["point"], "chunk": int(r["chunk"])}
        base.update((a, typed[a].get(r[a], r[a])) for a in study.axes)
        base["analysis"] = r["analysis"]
        for metric in per_set:
            for i, x in enumerate((r.get(metric) or "").split()):
                yield {**base, "set": first + i, "metric": metric, "value": float(x)}


def write_sets(study: Study, rows: Sequence[Row]) -> list[Path]:
    """``sets.csv`` (and ``sets.parquet`` when pyarrow is importable): the
    tidy table of :func:`tidy_rows`, each written whole beside and renamed
    over the last."""
    cols = ["point", "chunk", *study.axes, "analysis", "set", "metric", "value"]
    tidy = list(tidy_rows(study, rows))
    out = [study.output / "sets.csv"]
    _atomic(out[0], lambda f: _write_csv(f, cols, tidy))
    try:
        pa: Any = importlib.import_module("pyarrow")
        pq: Any = importlib.import_module("pyarrow.parquet")
    except ImportError:
        return out
    table = pa.table({c: [t[c] for t in tidy] for c in cols})
    out.append(study.output / "sets.parquet")
    _replace(out[1], lambda tmp: pq.write_table(table, tmp))
    return out


def _write_csv(f: IO[str], cols: list[str], rows: Iterable[Mapping[str, Any]]) -> None:
    w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()})


def _replace(path: Path, write: Callable[[Path], None]) -> None:
    """``write`` a temporary file beside ``path``, then rename it over
    ``path``: a reader never sees a half-written file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(tmp)
    os.replace(tmp, path)


def _atomic(path: Path, write: Callable[[IO[str]], None]) -> None:
    """:func:`_replace` for a text file ``write`` fills, synced to disk
    before the rename."""

    def text(tmp: Path) -> None:
        with tmp.open("w", newline="", encoding="utf-8") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())

    _replace(path, text)


@dataclass(frozen=True)
class Results:
    """A finished study's tables, read back from its output directory."""

    output: Path

    def rows(self) -> list[dict[str, Any]]:
        """``sets.csv`` as typed rows: one per task set, analysis and
        metric (``point``, ``chunk``, the axes, ``analysis``, ``set``,
        ``metric``, ``value``); an axis is an int or float column where
        every value reads as one."""
        with self._file("sets.csv").open(newline="", encoding="utf-8") as f:
            raw = list(csv.DictReader(f))
        if not raw:
            return []
        casts: dict[str, Callable[[str], Any]] = dict(
            point=str, chunk=int, analysis=str, set=int, metric=str, value=float
        )
        for c in raw[0]:
            if c not in casts:  # an axis
                casts[c] = _column_type([r[c] for r in raw])
        return [{c: casts[c](v) for c, v in r.items()} for r in raw]

    def summary(self) -> list[dict[str, Any]]:
        """``summary.csv`` with numbers as numbers."""
        with self._file("summary.csv").open(newline="", encoding="utf-8") as f:
            raw = list(csv.DictReader(f))
        if not raw:
            return []
        casts = {c: _column_type([r[c] for r in raw if r[c] != ""]) for c in raw[0]}
        return [{c: (casts[c](v) if v != "" else None) for c, v in r.items()} for r in raw]

    def to_pandas(self) -> Any:
        """The tidy table as a pandas DataFrame, e.g. the schedulable ratio
        per axis value: ``df[df.metric == "accepted"].groupby(["cores",
        "analysis"]).value.mean()``."""
        try:
            pd: Any = importlib.import_module("pandas")
        except ImportError:
            raise StudyError(
                'to_pandas needs pandas: pip install "rtgpu[experiment]" or pandas'
            ) from None
        return pd.DataFrame.from_records(self.rows())

    def _file(self, name: str) -> Path:
        path = self.output / name
        if not path.exists():
            raise StudyError(
                f"{path} does not exist: run the study first (rtgpu experiment STUDY), "
                "or name its output directory"
            )
        return path


def load_results(output: str | Path | Study) -> Results:
    """The tables of a study run: its output directory, or the study."""
    out = output.output if isinstance(output, Study) else Path(output)
    if not out.is_dir():
        raise StudyError(f"{out}: not a study's output directory")
    return Results(out)


def _column_type(values: Sequence[str]) -> Callable[[str], Any]:
    for cast in (int, float):
        try:
            for v in values:
                cast(v)
        except ValueError:
            continue
        return cast
    return str
