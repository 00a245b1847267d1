"""Fits shared by the report test modules (each built once per session)."""

import functools
import html
import warnings
from html.parser import HTMLParser

import hja_bayes as hb

EVIL_MODEL = "<script>alert(1)</script>"
EVIL_JUDGE = '"><img src=x onerror=alert(2)>'


@functools.lru_cache(maxsize=None)
def small_fit():
    """4 judges x 5 models, rank 1 with position bias."""
    data, _ = hb.simulate(n_judges=4, n_items=5, rank=1, comparisons_per_judge=600,
                          position_bias=0.4, seed=3)
    return hb.fit_hja(data, rank=1, position_bias=True)


@functools.lru_cache(maxsize=None)
def evil_fit():
    """Rank 0, every pair in one orientation only (folded cells read back as ordered),
    hostile model and judge names."""
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=400, seed=1)
    frame = data.fold_order().to_frame()
    frame["model_a"] = frame["model_a"].replace({data.items[0]: EVIL_MODEL})
    frame["model_b"] = frame["model_b"].replace({data.items[0]: EVIL_MODEL})
    frame["judge"] = frame["judge"].replace({data.judges[0]: EVIL_JUDGE})
    evil = hb.Comparisons.from_counts(frame)
    return hb.fit_hja(evil, rank=0)


@functools.lru_cache(maxsize=None)
def posterior():
    """A small fit and a short NUTS run from its MAP (few draws: R-hat warnings are expected)."""
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=300,
                          position_bias=0.3, seed=7)
    fit = hb.fit_hja(data, rank=0, position_bias=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.ConvergenceWarning)
        idata = hb.sample_hja(data, 0, init=fit, num_warmup=60, num_samples=60, num_chains=2,
                              seed=0, progress_bar=False)
    return fit, idata


class Tables(HTMLParser):
    """Collect every <table id=...> as a list of rows of cell texts; note tags and URLs."""

    def __init__(self):
        super().__init__()
        self.tables, self.tags, self.urls = {}, [], []
        self._table = self._row = self._cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        for key in ("src", "href"):
            if key in attrs:
                self.urls.append(attrs[key])
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id"), [])
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self._table.append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def parse_html(text):
    parser = Tables()
    parser.feed(text)
    return parser


escape = html.escape
