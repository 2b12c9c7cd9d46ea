"""Study files: loading, validation and the points they define.

A study file (TOML) names a generator, fixed parameters, the axes to sweep,
the analyses and their metrics, and the plots. See ``docs/guide/experiment.md``.
Every error raised here is a :class:`StudyError` that names the file and the
table or key at fault.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import _rtgpu
from .registry import ANALYSES, METRICS
from .values import Scalar, StudyError, resolve

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

__all__ = ["Plot", "Point", "Study", "StudyError", "load_study", "parse_study"]

PLOT_KINDS = ("ratio", "histogram", "mean")
VALUED = tuple(m for m in METRICS if m != "ratio")
"""The metrics with a value per set, which mean and histogram plots draw."""
_TOP_KEYS = {
    "name",
    "description",
    "seed",
    "sets",
    "chunk",
    "output",
    "generator",
    "parameters",
    "axes",
    "analysis",
    "simulation",
    "plot",
}


@dataclass(frozen=True)
class Plot:
    """One figure: ``kind`` ratio (schedulable ratio against ``x``), mean (the
    mean of a per-set ``metric`` against ``x``) or histogram (of a per-set
    ``metric``), one line or histogram per analysis and per combination of
    the ``by`` axes; a line's points are the other axes' combinations."""

    name: str
    kind: str
    x: str | None = None
    by: tuple[str, ...] = ()
    normalize: str | None = None
    bins: int = 40
    title: str | None = None
    metric: str = "ratio"
    yscale: str = "linear"


@dataclass(frozen=True)
class Point:
    """One unit of work: ``sets`` task sets (``first`` onwards) of one
    combination of axis values, for every analysis of the study."""

    key: str
    chunk: int
    values: tuple[tuple[str, Scalar], ...]
    seed: int
    first: int
    sets: int

    @property
    def params(self) -> dict[str, Scalar]:
        return dict(self.values)


@dataclass(frozen=True)
class Study:
    """A validated study file."""

    path: Path
    name: str
    description: str
    seed: int
    sets: int
    chunk: int
    output: Path
    generator: Mapping[str, Any]
    parameters: Mapping[str, Scalar]
    axes: Mapping[str, tuple[Scalar, ...]]
    analyses: tuple[tuple[str, tuple[str, ...]], ...]
    plots: tuple[Plot, ...] = field(default_factory=tuple)

    @property
    def metrics(self) -> tuple[str, ...]:
        """Every metric some analysis computes, in registry order."""
        used = {m for _, ms in self.analyses for m in ms}
        return tuple(m for m in METRICS if m in used)

    @property
    def fingerprint(self) -> str:
        """Hash of everything that determines the results (not the output
        directory, not the plots): resuming requires the same fingerprint."""
        doc = {
            "seed": self.seed,
            "sets": self.sets,
            "chunk": self.chunk,
            "generator": self.generator,
            "parameters": dict(self.parameters),
            "axes": {k: list(v) for k, v in self.axes.items()},
            "analyses": [[a, list(m)] for a, m in self.analyses],
        }
        text = json.dumps(doc, sort_keys=True, default=str)
        return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()

    def with_output(self, output: str | os.PathLike[str]) -> Study:
        """The same study writing to another directory."""
        return replace(self, output=Path(output))

    def combinations(self) -> Iterator[dict[str, Scalar]]:
        names = list(self.axes)
        for combo in itertools.product(*(self.axes[n] for n in names)):
            yield dict(zip(names, combo))

    def points(self) -> Iterator[Point]:
        """Every point, in axis order then chunk order."""
        chunks = math.ceil(self.sets / self.chunk)
        for combo in self.combinations():
            base = ",".join(f"{k}={_fmt(v)}" for k, v in combo.items()) or "all"
            params = {**self.parameters, **combo}
            # Seeded by the generator spec the point resolves to: points
            # that differ only in analysis parameters (rho, cores of a test)
            # see the same task sets, so their comparison is paired.
            seed = _seed(self.seed, self.generator_spec(params))
            values = tuple(params.items())
            for c in range(chunks):
                first = c * self.chunk
                yield Point(
                    key=f"{base}#{c}",
                    chunk=c,
                    values=values,
                    seed=seed,
                    first=first,
                    sets=min(self.chunk, self.sets - first),
                )

    def generator_spec(self, params: Mapping[str, Scalar]) -> str:
        """The generator table with ``"= expr"`` values evaluated for
        ``params``, as the JSON the native generator reads."""
        return json.dumps(resolve(self.generator, params, f"{self.path}: [generator]"))


def _fmt(v: Scalar) -> str:
    return repr(v) if isinstance(v, float) else str(v)


def _seed(study_seed: int, key: str) -> int:
    """The seed of the task sets of a generator spec: independent of the
    chunking and of the order in which points run."""
    h = hashlib.blake2b(f"{study_seed}/{key}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "little")


def load_study(path: str | os.PathLike[str]) -> Study:
    """Read and validate a study file. Raises :class:`StudyError` or
    :class:`OSError`."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StudyError(f"{p}: no such study file") from None
    return parse_study(text, p)


def parse_study(text: str, path: str | os.PathLike[str] = "<study>") -> Study:
    """Validate a study from TOML text; ``path`` names it in errors and
    anchors a relative ``output``."""
    p = Path(path)
    where = str(p)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise StudyError(f"{where}: invalid TOML: {e}") from None
    unknown = sorted(set(doc) - _TOP_KEYS)
    if unknown:
        raise StudyError(
            f"{where}: unknown key(s) {', '.join(unknown)}; expected some of "
            + ", ".join(sorted(_TOP_KEYS))
        )
    name = _get(doc, "name", str, where, default=p.stem)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise StudyError(f"{where}: name must be letters, digits, '.', '_' or '-', got {name!r}")
    seed = _get(doc, "seed", int, where, default=0)
    sets = _get(doc, "sets", int, where)
    chunk = _get(doc, "chunk", int, where, default=sets)
    if seed < 0 or seed >= 2**64:
        raise StudyError(f"{where}: seed must be in [0, 2^64), got {seed}")
    if sets < 1:
        raise StudyError(f"{where}: sets must be >= 1, got {sets}")
    if chunk < 1:
        raise StudyError(f"{where}: chunk must be >= 1, got {chunk}")
    if "simulation" in doc:
        raise StudyError(
            f"{where}: [simulation]: simulation studies are not available in this version "
            "(rtgpu simulate is not built yet); use [[analysis]]"
        )
    output = Path(_get(doc, "output", str, where, default=f"results/{name}"))
    if not output.is_absolute():
        output = (p.parent if p.name != "<study>" else Path.cwd()) / output

    parameters = _table(doc, "parameters", where)
    for k, v in parameters.items():
        if not isinstance(v, (int, float, str, bool)):
            raise StudyError(f"{where}: [parameters] {k} must be a number, string or boolean")
    axes = _axes(_table(doc, "axes", where), where)
    both = sorted(set(axes) & set(parameters))
    if both:
        raise StudyError(f"{where}: {', '.join(both)} is both in [parameters] and [axes]; keep one")
    analyses = _analyses(doc.get("analysis"), where, {**parameters, **_first(axes)})
    generator = _table(doc, "generator", where, required=True)

    study = Study(
        path=p,
        name=name,
        description=_get(doc, "description", str, where, default=""),
        seed=seed,
        sets=sets,
        chunk=chunk,
        output=output,
        generator=generator,
        parameters=parameters,
        axes=axes,
        analyses=analyses,
        plots=(),
    )
    # The generator and the parameters must validate at every axis
    # combination (cheap: they are only parsed), so a bad value fails now,
    # naming its key, not in every Dask worker hours into the study.
    for combo in study.combinations():
        at = ", ".join(f"{k}={_fmt(v)}" for k, v in combo.items())
        values = {**parameters, **combo}
        try:
            resolve(values, values, f"{where}: [parameters]")
        except StudyError as e:
            raise StudyError(f"{e}" + (f" (at {at})" if at else "")) from None
        spec = study.generator_spec(values)
        try:
            _rtgpu.experiment_check_spec(spec)
        except ValueError as e:
            raise StudyError(f"{where}: [generator]: {e}" + (f" (at {at})" if at else "")) from None
    plots = _plots(doc.get("plot"), where, study)
    return replace(study, plots=plots)


def _first(axes: Mapping[str, tuple[Scalar, ...]]) -> dict[str, Scalar]:
    return {k: v[0] for k, v in axes.items()}


def _get(doc: Mapping[str, Any], key: str, kind: type, where: str, default: Any = None) -> Any:
    if key not in doc:
        if default is None:
            raise StudyError(f"{where}: missing required key `{key}`")
        return default
    v = doc[key]
    if (kind is int and isinstance(v, bool)) or not isinstance(v, kind):
        raise StudyError(f"{where}: `{key}` must be {kind.__name__}, got {v!r}")
    return v


def _table(doc: Mapping[str, Any], key: str, where: str, required: bool = False) -> dict[str, Any]:
    v = doc.get(key)
    if v is None:
        if required:
            raise StudyError(f"{where}: missing required table [{key}]")
        return {}
    if not isinstance(v, dict):
        raise StudyError(f"{where}: `{key}` must be a table [{key}]")
    return v


def _axes(table: Mapping[str, Any], where: str) -> dict[str, tuple[Scalar, ...]]:
    out: dict[str, tuple[Scalar, ...]] = {}
    for name, spec in table.items():
        at = f"{where}: [axes] {name}"
        if isinstance(spec, list):
            values = tuple(spec)
        elif isinstance(spec, dict):
            if set(spec) != {"from", "to", "step"}:
                raise StudyError(f"{at}: a range is {{ from = a, to = b, step = s }}, got {spec}")
            a, b, s = spec["from"], spec["to"], spec["step"]
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b, s)):
                raise StudyError(f"{at}: from, to and step must be numbers")
            if s <= 0 or b < a:
                raise StudyError(f"{at}: need step > 0 and from <= to, got {spec}")
            count = math.floor((b - a) / s + 1e-9) + 1
            if all(isinstance(x, int) for x in (a, b, s)):
                values = tuple(a + i * s for i in range(count))
            else:
                values = tuple(round(a + i * s, 10) for i in range(count))
        else:
            raise StudyError(f"{at}: give a list of values or {{ from, to, step }}")
        if not values:
            raise StudyError(f"{at}: no values")
        if len(set(values)) != len(values):
            raise StudyError(f"{at}: repeated values")
        if not all(isinstance(v, (int, float, str, bool)) for v in values):
            raise StudyError(f"{at}: values must be numbers, strings or booleans")
        out[name] = values
    return out


def _analyses(
    raw: Any, where: str, params: Mapping[str, Scalar]
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(raw, list) or not raw:
        raise StudyError(f"{where}: give at least one [[analysis]] with a name and metrics")
    out: list[tuple[str, tuple[str, ...]]] = []
    for i, a in enumerate(raw):
        at = f"{where}: [[analysis]] #{i + 1}"
        if not isinstance(a, dict):
            raise StudyError(f"{at}: must be a table")
        extra = sorted(set(a) - {"name", "metrics"})
        if extra:
            raise StudyError(f"{at}: unknown key(s) {', '.join(extra)}; expected name, metrics")
        name = a.get("name")
        if name not in ANALYSES:
            raise StudyError(
                f"{at}: unknown analysis {name!r}; known: {', '.join(sorted(ANALYSES))}"
            )
        spec = ANALYSES[name]
        metrics = a.get("metrics", ["ratio"])
        if isinstance(metrics, str):
            metrics = [metrics]
        if not isinstance(metrics, list) or not metrics:
            raise StudyError(f'{at}: metrics must be a list such as ["ratio", "breakdown"]')
        for m in metrics:
            if m == "response-time":
                raise StudyError(
                    f"{at}: metric 'response-time' needs simulation, which this version "
                    "does not have yet"
                )
            if m not in spec.metrics:
                raise StudyError(
                    f"{at}: analysis {name} cannot compute metric {m!r}; it computes "
                    + ", ".join(spec.metrics)
                )
        missing = [p for p in spec.parameters if p not in params]
        if missing:
            raise StudyError(
                f"{at}: analysis {name} needs parameter(s) {', '.join(missing)}: "
                "set them in [parameters] or sweep them in [axes]"
            )
        if name in (n for n, _ in out):
            raise StudyError(f"{at}: analysis {name} is listed twice")
        out.append((name, tuple(m for m in METRICS if m in metrics)))
    return tuple(out)


def _plots(raw: Any, where: str, study: Study) -> tuple[Plot, ...]:
    if raw is None:
        return _default_plots(study)
    if not isinstance(raw, list):
        raise StudyError(f"{where}: plots are [[plot]] tables")
    out: list[Plot] = []
    columns = {"utilization", "effective_utilization", "tasks", *study.axes}
    for i, t in enumerate(raw):
        at = f"{where}: [[plot]] #{i + 1}"
        if not isinstance(t, dict):
            raise StudyError(f"{at}: must be a table")
        allowed = {"name", "kind", "x", "by", "normalize", "bins", "title", "metric", "yscale"}
        extra = sorted(set(t) - allowed)
        if extra:
            raise StudyError(f"{at}: unknown key(s) {', '.join(extra)}")
        kind = t.get("kind")
        if kind not in PLOT_KINDS:
            raise StudyError(f"{at}: kind must be one of {', '.join(PLOT_KINDS)}, got {kind!r}")
        sampled = [m for m in VALUED if m in study.metrics]
        need = "ratio" if kind == "ratio" else t.get("metric", sampled[0] if sampled else None)
        if kind != "ratio" and need not in VALUED:
            raise StudyError(
                f"{at}: metric must be one of {', '.join(VALUED)} for a {kind} plot, got {need!r}"
            )
        if need not in study.metrics:
            raise StudyError(f"{at}: a {kind} plot needs an analysis with metric {need!r}")
        yscale = t.get("yscale", "linear")
        if yscale not in ("linear", "log"):
            raise StudyError(f"{at}: yscale must be linear or log, got {yscale!r}")
        x = t.get("x")
        if kind != "histogram" and x not in columns:
            raise StudyError(
                f"{at}: x must be an axis or one of utilization, effective_utilization, tasks;"
                f" got {x!r}"
            )
        by_raw = t.get("by", [])
        by = tuple([by_raw] if isinstance(by_raw, str) else by_raw)
        bad = [b for b in by if b not in study.axes or b == x]
        if bad or not isinstance(by_raw, (str, list)):
            raise StudyError(
                f"{at}: by must name axes other than x ({', '.join(study.axes)}), got {by_raw!r}"
            )
        norm = t.get("normalize")
        if norm is not None and norm not in {**study.parameters, **study.axes}:
            raise StudyError(f"{at}: normalize must name a numeric parameter or axis, got {norm!r}")
        bins = t.get("bins", 40)
        if not isinstance(bins, int) or bins < 1:
            raise StudyError(f"{at}: bins must be a positive integer")
        name = t.get("name", f"{kind}-{i + 1}")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise StudyError(f"{at}: name must be letters, digits, '.', '_' or '-'")
        out.append(Plot(name, kind, x, by, norm, bins, t.get("title"), need, yscale))
    return tuple(out)


def _default_plots(study: Study) -> tuple[Plot, ...]:
    axes = list(study.axes)
    x = axes[-1] if axes else "utilization"
    by = tuple(axes[:-1])
    out = []
    if "ratio" in study.metrics:
        out.append(Plot("ratio", "ratio", x, by))
    for m in VALUED:
        if m in study.metrics:
            out.append(Plot(m, "histogram", None, tuple(axes), metric=m))
    return tuple(out)
