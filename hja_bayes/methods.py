"""The methods of :class:`~hja_bayes.comparisons.Comparisons` and :class:`~hja_bayes.hja.HJAFit`
that reach up the layers, attached here, at the top of the package.

``Comparisons`` is the data layer and ``HJAFit`` the solver's plain result: reading a file
into one (the readers, the scan engines), refitting one (bootstrap, fragility, the fit
without its bias terms, updates) and saving one (persistence) live above them.  So that
neither class imports upwards, the methods that only delegate to those layers are defined
here and attached when the package is imported; each imports its implementation on first
use, so importing the package stays light.
"""

from __future__ import annotations

import re

from .threads import one_blas_thread
from .comparisons import Comparisons
from .errors import ParameterError
from .hja.result import HJAFit

__all__: list[str] = []


# -------------------------------------------------------------- Comparisons
def _read(reader, method: str, *args, **options) -> Comparisons:
    """``reader(*args, **options)``, an unknown keyword said as the method's own."""
    try:
        return reader(*args, **options)
    except TypeError as exc:
        if not re.match(r"read_\w+\(\) got an unexpected keyword argument", str(exc)):
            raise  # not an argument of the readers
        name = str(exc).rsplit("argument ", 1)[-1]
        raise ParameterError(
            f"Comparisons.{method}() has no argument {name}: columns are named by judge=, "
            "model_a=, model_b=, winner= (the command line's --judge-col and so on) and "
            f"cluster=; see help(Comparisons.{method})") from None


def from_frame(cls, df, judge: str | None = "judge", model_a: str = "model_a",
               model_b: str = "model_b", winner: str = "winner", **options) -> Comparisons:
    """One row per judgment; see :func:`hja_bayes.readers.read_frame`."""
    from .readers import read_frame

    return _read(read_frame, "from_frame", df, judge, model_a, model_b, winner, **options)


def from_csv(cls, path, **columns) -> Comparisons:
    """A CSV with one row per judgment; see :func:`hja_bayes.readers.read_csv`."""
    from .readers import read_csv

    return _read(read_csv, "from_csv", path, **columns)


def from_jsonl(cls, path, **columns) -> Comparisons:
    """JSON Lines with one object per judgment; see :func:`hja_bayes.readers.read_jsonl`."""
    from .readers import read_jsonl

    return _read(read_jsonl, "from_jsonl", path, **columns)


def from_file(cls, path, **columns) -> Comparisons:
    """CSV, JSON Lines, JSON array, parquet or ``"-"``; see :func:`hja_bayes.readers.read_file`."""
    from .readers import read_file

    return _read(read_file, "from_file", path, **columns)


def from_counts(cls, df, judge: str | None = "judge", model_a: str = "model_a",
                model_b: str = "model_b", n: str = "n", wins: str = "wins",
                ties: str | None = "ties", **options) -> Comparisons:
    """Counts aggregated upstream; see :func:`hja_bayes.readers.read_counts`."""
    from .readers import read_counts

    return _read(read_counts, "from_counts", df, judge, model_a, model_b, n, wins, ties,
                 **options)


def scan(cls, source, *, engine: str | None = None, **options) -> Comparisons:
    """Files beyond memory, or a cluster's table, aggregated inside a query engine
    (DuckDB, Polars, Dask, Spark; by default the table's own, DuckDB for paths); see
    :func:`hja_bayes.scan.scan`."""
    from .scan import scan as scan_source

    return scan_source(source, engine=engine, **options)


for _method in (from_frame, from_csv, from_jsonl, from_file, from_counts, scan):
    setattr(Comparisons, _method.__name__, classmethod(_method))


# ------------------------------------------------------------------- HJAFit
@one_blas_thread
def bootstrap(self, n: int | None = None, seed: int = 0, cluster: bool = True, progress=None,
              *, wild: bool = False, weights: str = "rademacher"):
    """Bootstrap replicates of this fit.

    By default a pairs bootstrap: whole clusters (prompts, ``cluster=True``) or single
    comparisons are resampled and the model refitted, each replicate warm-started here
    (:func:`hja_bayes.hja.bootstrap.bootstrap_fit`; cost: ``n`` refits, each a fraction of
    the original fit).

    ``wild=True``: the wild cluster bootstrap of the scores
    (:func:`hja_bayes.inference.wild.wild_bootstrap`; unrestricted, it covered less than
    the CR2 intervals with few prompts, 90% against 94.5% with 8 in a simulation): each
    replicate multiplies every prompt's CR2-adjusted residuals by a weight
    (``weights="rademacher"``, +-1, or ``"webb"``, six points: more distinct replicates
    where prompts are few; in simulations the two covered alike) and takes one Newton
    step; no refit, so thousands of replicates take well under a second on small panels.
    Its ``table(level)`` gives symmetric percentile-t intervals.

    ``n`` defaults to 200 replicates (pairs) or 999 (wild).  ``progress``: True prints the
    pairs bootstrap's replicates done on stderr (as ``fit_hja(progress=True)`` prints its
    iterations), or a callable ``progress(done, n)``; the wild bootstrap takes no refits and
    says nothing.  ``seed``: an integer, the same replicates for the same seed.
    """
    from .checks import check_integer

    check_integer(seed, "seed")
    if wild and not cluster:
        raise ParameterError("the wild bootstrap reweights whole prompts: cluster=False "
                             "(single comparisons) is the pairs bootstrap's (wild=False)")
    if not wild and weights != "rademacher":
        raise ParameterError(f"weights={weights!r} are the wild bootstrap's: pass wild=True "
                             "(the pairs bootstrap resamples prompts or comparisons)")
    progress = _replicates_done if progress is True else progress or None
    if wild:
        from .inference.wild import wild_bootstrap

        if self.data.clusters is None:
            raise ParameterError(
                "the wild bootstrap reweights each prompt's scores: it needs clusters (read "
                "the data with cluster=<column>, e.g. 'question_id'); without them, "
                "bootstrap(cluster=False) resamples single comparisons")
        if getattr(self.data.clusters, "in_engine", False):
            raise ParameterError(
                "the wild bootstrap perturbs each prompt's CR2-adjusted scores, and prompts "
                "kept in the scan's query engine give the CR1 meat only: scan with "
                "incidence='memory', or bootstrap() for Poisson weights drawn in the engine")
        return wild_bootstrap(self.wald_inference("cluster"), 999 if n is None else n,
                              weights=weights, seed=seed)
    from .hja.bootstrap import bootstrap_fit

    return bootstrap_fit(self, 200 if n is None else n, seed=seed, cluster=cluster,
                         progress=progress)


def _replicates_done(done: int, n: int) -> None:
    """``bootstrap(progress=True)``: a line on stderr at every tenth of the replicates."""
    import sys

    if done == n or done % max(1, n // 10) == 0:
        print(f"  bootstrap: {done} of {n} replicates", file=sys.stderr, flush=True)


@one_blas_thread
def fragility(self, target="top", unit: str = "verdict", **options):
    """How few verdicts or prompts hold a ranking up: the smallest set found whose removal
    puts another model first (``target="top"``), reverses a pair (``target=(model_a,
    model_b)``) or changes the top tier (``"tiers"``), confirmed by an exact refit.  See
    :func:`hja_bayes.inference.fragility.fragility`.

    Returns
    -------
    Fragility
    """
    from .hja.bootstrap import refit_without
    from .inference.fragility import fragility as audit

    return audit(self, target, unit, refit=lambda removed: refit_without(self, removed),
                 **options)


def uncontrolled(self, **options):
    """The same model without its bias terms (style, self-preference); see
    :func:`hja_bayes.hja.fit.uncontrolled`."""
    from .hja.fit import uncontrolled as refit

    return refit(self, **options)


@one_blas_thread
def update(self, new_data, **options):
    """This fit with ``new_data``'s comparisons added, warm-started here.

    See :func:`hja_bayes.design.update_fit` (new cells and prompts allowed; new judges or
    models too, the model then fitted afresh to all the verdicts; the rank, terms and
    outcome model are kept).  The fit itself is not changed.
    """
    from .design.update import update_fit

    return update_fit(self, new_data, **options)


def save(self, path, idata=None):
    """Write the fit (and optionally its posterior) to the folder ``path``.

    See :func:`hja_bayes.persistence.save_fit` for the format (JSON + .npz, no pickle);
    read it back with :func:`hja_bayes.load_fit`.

    Returns
    -------
    pathlib.Path
        The folder.
    """
    from .persistence import save_fit

    return save_fit(self, path, idata=idata)


for _method in (bootstrap, fragility, uncontrolled, update, save):
    setattr(HJAFit, _method.__name__, _method)
