"""Judges and items the data cannot support: left out or flagged, never wrecking the rest."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

import hja_bayes as hb


@pytest.fixture(scope="module")
def prd():
    return hb.datasets.load_prd_vicuna80().judgments


def _fit(frame, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = hb.fit_hja(hb.Comparisons.from_frame(frame), rank=0, position_bias=True, **kwargs)
    return fit, [str(w.message) for w in caught if issubclass(w.category, hb.HJAWarning)]


def _se(fit):
    iv = fit.intervals(cov_type="fisher")
    return iv.set_index(["quantity", "label"])["se"]


def test_a_judge_with_one_comparison_moves_nothing(prd):
    base, _ = _fit(prd)
    one = pd.DataFrame({"judge": ["newcomer"], "model_a": ["gpt4"], "model_b": ["bard"],
                        "winner": ["model_b"]})
    fit, messages = _fit(pd.concat([prd, one], ignore_index=True))
    assert any("newcomer" in m and "only 1 comparison" in m for m in messages)
    assert "newcomer" in fit.excluded_judges and "newcomer" not in fit.judges
    assert "left out: judge 'newcomer'" in fit.summary()
    assert np.max(np.abs(fit.mu - base.mu)) <= 0.1
    ratio = (_se(fit) / _se(base)).dropna()
    assert ratio.max() <= 1.5


def test_a_judge_that_always_picks_the_first_answer_is_left_out(prd):
    base, _ = _fit(prd)
    yes = prd[prd.judge == prd.judge.iloc[0]].assign(judge="yes-man", winner="model_a")
    fit, messages = _fit(pd.concat([prd, yes], ignore_index=True))
    assert any("yes-man" in m and "first-shown" in m for m in messages)
    gamma = _se(fit).loc["gamma"] / _se(base).loc["gamma"]
    assert gamma.max() <= 1.5
    # without position bias its verdicts read as information about the models: it stays,
    # named as locked on the first slot (PRD shows both orders: they say next to nothing)
    with pytest.warns(hb.DataWarning, match=r"'yes-man' \(the first-shown answer in 100\.0%.*"
                      "say next to nothing"):
        fit0 = hb.fit_hja(hb.Comparisons.from_frame(pd.concat([prd, yes])), rank=0)
    assert "yes-man" in fit0.judges


def test_a_model_that_never_loses_is_named(prd):
    frame = prd.copy()
    involved = (frame.model_a == "gpt4") | (frame.model_b == "gpt4")
    frame.loc[involved, "winner"] = np.where(frame.loc[involved, "model_a"] == "gpt4",
                                             "model_a", "model_b")
    fit, messages = _fit(frame)
    named = [m for m in messages if "item(s) gpt4 won or lost every comparison" in m]
    assert named and named[0].endswith("comparisons among themselves and can still be read")
    # the other models' differences stay as precise as they were
    base, _ = _fit(prd)
    iv, iv0 = (f.intervals().query("quantity == 'mu_diff'").set_index("label")["se"]
               for f in (fit, base))
    others = [label for label in iv.index if "gpt4" not in label]
    assert (iv[others] / iv0[others]).max() <= 1.5


def test_min_judge_comparisons_is_checked():
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=50, seed=0)
    with pytest.raises(hb.ParameterError, match="min_judge_comparisons"):
        hb.fit_hja(data, rank=0, min_judge_comparisons=-1)
    # a panel of uniformly small judges is fitted as it is
    assert hb.fit_hja(data, rank=0, min_judge_comparisons=1000).excluded_judges == {}


def test_fit_arguments_of_the_wrong_kind_are_refused_before_any_work():
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=50, seed=0)
    refused = {"position_bias": ("no", "position_bias must be True or False"),  # was truthy
               "reanchor": ("yes", "reanchor must be True or False"),
               "max_iter": (0, "max_iter must be an integer >= 1"),  # was 0 steps, a warning
               "cv_folds": (1, "cv_folds must be an integer >= 2"),  # one fold: no training
               "seed": (-1, "seed must be an integer >= 0")}
    for name, (value, message) in refused.items():
        with pytest.raises(hb.ParameterError, match=message):
            hb.fit_hja(data, rank="cv", max_rank=1, **{name: value})
    with pytest.raises(hb.ParameterError, match="position_bias must be True or False"):
        hb.sample_hja(data, 0, position_bias="no", num_samples=1, num_warmup=1)
    for name, value, message in (("num_samples", 2.5, "an integer >= 1"),  # had passed
                                 ("num_chains", 0, "an integer >= 1"),
                                 ("seed", "x", "seed must be an integer >= 0")):  # ValueError
        with pytest.raises(hb.ParameterError, match=message):
            hb.sample_hja(data, 0, **{"num_samples": 1, "num_warmup": 1, name: value})
    assert hb.fit_hja(data, rank=0, position_bias=np.bool_(True)).position_bias  # NumPy's: fine
    # NumPy integers for the draws (numpyro's own "must be a positive integer" before)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.HJAWarning)  # four draws: no R-hat, said
        idata = hb.sample_hja(data, 0, num_samples=np.int64(4), num_warmup=np.int64(3),
                              num_chains=1, progress_bar=False)
    assert idata.posterior.sizes["draw"] == 4
    # the rows themselves where Comparisons go: how to build them (fit_pooled_btl and the
    # observed tables and heat map had ended in pandas' AttributeError)
    rows = hb.datasets.load_prd_vicuna80().judgments
    from hja_bayes.reporting import battle_counts, observed_win_fraction

    for function in (hb.fit_hja, hb.fit_pooled_btl, hb.observed_heatmap, battle_counts,
                     observed_win_fraction):
        with pytest.raises(hb.DataError, match=r"expected Comparisons, got DataFrame: build one "
                                               r"first, e.g. Comparisons.from_frame\(df\)"):
            function(rows)


def test_warnings_name_the_callers_line():
    """Warnings raised deep inside the package (the readers through ``from_frame``, the fit's
    input checks, the design) are attributed to the line that called the package."""
    prd = hb.datasets.load_prd_vicuna80()
    frame = prd.judgments.copy()
    frame.loc[frame.model_a == "gpt4", "winner"] = "model_a"
    frame.loc[frame.model_b == "gpt4", "winner"] = "model_b"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = hb.Comparisons.from_frame(
            frame, cluster="question_id", features=hb.style_features(prd.answers))
        fit = hb.fit_hja(data, rank=0)
        hb.next_comparisons(fit, 5, candidates=pd.DataFrame(
            {"judge": ["gpt4"], "model_a": ["gpt35"], "model_b": ["bard"], "limit": [1]}))
    found = {key: [w for w in caught if key in str(w.message)]
             for key in ("do not vary", "won or lost every comparison", "could be placed")}
    assert all(found.values()), {k: len(v) for k, v in found.items()}
    where = {(w.filename, w.lineno) for ws in found.values() for w in ws}
    assert {f for f, _ in where} == {__file__}, where


def test_the_sampler_leaves_out_the_judges_the_map_left_out():
    """A judge the MAP leaves out (one comparison) once broke the posterior: the sampler
    built its model on every judge of the data around a fit of fewer."""
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=300, seed=0)
    frame = data.to_frame()  # counts per cell
    one = frame.iloc[:1].assign(judge="newcomer", n=1.0, wins=1.0, ties=0.0)
    both = hb.Comparisons.from_counts(pd.concat([frame, one], ignore_index=True))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = hb.fit_hja(both, rank=0)
        idata = hb.sample_hja(both, 0, init=fit, num_warmup=20, num_samples=20, num_chains=1,
                              progress_bar=False)
        alone = hb.sample_hja(both, 0, num_warmup=20, num_samples=20, num_chains=1,
                              progress_bar=False)
    said = [str(w.message) for w in caught if issubclass(w.category, hb.DataWarning)]
    assert any("left out of the fit: judge 'newcomer'" in m for m in said)
    assert not any("newcomer" in m and "separation" in m for m in said)  # not checked: left out
    assert "newcomer" not in fit.judges
    for posterior in (idata, alone):
        assert list(posterior.posterior["gamma"].coords["judge"].values) == list(fit.judges)


def _lost_directions(S, judges, owners, rank):
    """How many own-model moves the scores cannot tell apart at ``rank``: the rank the
    Jacobian of ``(A, B, delta) -> A B^T - delta_k at (judge k, own model)``, each judge's
    shift removed, lacks for a full count, by finite differences at S's rank-(r+1) factors."""
    m = rank + 1
    centred = S - S.mean(axis=1, keepdims=True)
    u, sv, vt = np.linalg.svd(centred)
    (K, N), n = S.shape, len(judges)

    def scores(p):
        A, B, delta = p[:K * m].reshape(K, m), p[K * m:-n].reshape(N, m), p[-n:]
        out = A @ B.T
        out[judges, owners] -= delta
        return (out - out.mean(axis=1, keepdims=True)).ravel()

    p0 = np.concatenate([(u[:, :m] * sv[:m]).ravel(), vt[:m].T.ravel(), np.zeros(n)])
    step = 1e-6
    J = np.column_stack([(scores(p0 + step * e) - scores(p0 - step * e)) / (2 * step)
                         for e in np.eye(len(p0))])

    def rank_of(M):
        s = np.linalg.svd(M, compute_uv=False)
        return int((s > 1e-7 * s[0]).sum())
    return rank_of(J[:, :-n]) + n - rank_of(J)


def test_self_preference_is_refused_where_the_disagreement_absorbs_it(prd):
    """PRD's five judges are five of its models.  At rank 2 (S of rank 3, known up to a shift
    per judge) scores can trade self-preference for disagreement: the Jacobian of the scores
    in their factors and the own-model moves, by finite differences, lacks three of the five
    moves' directions, so the data cannot tell lambda apart, and the fit refuses it; at rank
    1 it lacks none and the fit goes on.  Four judges owning the same model: one direction
    lost at rank 1 (at most K - r - 1 = 3 of them), none at rank 0."""
    data = hb.Comparisons.from_frame(prd)
    every = np.arange(5), np.array([data.items.index(j) for j in data.judges])
    four = np.array([0, 1, 2, 4]), np.full(4, data.items.index("gpt4"))
    cases = [(1, every, True, 0, None),
             (2, every, True, 3, r"at rank 2: 5 judges have a coefficient, .* all but 2 single "
                                 r"judge-model cells"),
             (0, four, False, 0, None),
             (1, four, False, 1, r"at rank 1: 4 judges own 'gpt4', and at rank 1 at most 3 "
                                 r"\(K - r - 1\)")]
    for rank, (judges, owners), position_bias, lost, refused in cases:
        S = hb.fit_hja(data, rank=rank, position_bias=position_bias).S
        own = dict(zip(np.array(data.judges)[judges], np.array(data.items)[owners]))
        assert _lost_directions(S, judges, owners, rank) == lost
        if refused:
            with pytest.raises(hb.IdentifiabilityError, match=refused):
                hb.fit_hja(data, rank=rank, position_bias=position_bias, self_preference=own)
        else:
            fit = hb.fit_hja(data, rank=rank, position_bias=position_bias, self_preference=own)
            with warnings.catch_warnings():  # at rank 1 gamma rests on few verdicts
                warnings.simplefilter("ignore", hb.DataWarning)
                se = fit.wald.coefficients("self").se
            assert np.all(np.isfinite(se[judges])) and np.isnan(se).sum() == 5 - len(judges)
    with pytest.raises(hb.IdentifiabilityError, match="at rank 3: it is the full rank"):
        hb.fit_hja(data, rank=3, self_preference=True)
    searched = hb.fit_hja(data, rank="bic", max_rank=3, patience=None, self_preference=True)
    assert list(searched.rank_table["rank"]) == [0, 1]


def test_a_self_preference_map_that_cannot_mean_one_thing_is_refused(capsys):
    """A judge given two models had kept the last silently (a map; the command line too), an
    empty map was called 'self_preference=True', and a judge the fit leaves out was said
    to be absent from the data."""
    from hja_bayes.cli import main
    from hja_bayes.likelihood.terms import SelfPreference

    data = hb.Comparisons.from_frame(hb.datasets.load_prd_vicuna80().judgments)
    both = SelfPreference(owners=(("bard", "bard"), ("bard", "claude")))
    with pytest.raises(hb.DataError, match=r"judge\(s\) \['bard'\] more than one model"):
        hb.fit_hja(data, rank=0, self_preference=both)
    with pytest.raises(hb.DataError, match="names no judge"):
        hb.fit_hja(data, rank=0, self_preference={})
    with pytest.raises(hb.DataError, match=r"\['bard'\] not in the data \(or left out"):
        hb.fit_hja(data, rank=0, leave_out=["bard"], self_preference={"bard": "bard"})
    assert main(["fit", "bundled:prd_vicuna80", "--rank", "0", "--quiet",
                 "--self-preference", "bard=bard,bard=claude"]) == 2
    assert "more than one model" in capsys.readouterr().err
    with pytest.raises(hb.ParameterError, match="a map {judge: model}"):  # a bare unpacking
        hb.fit_hja(data, rank=0, self_preference="gpt4")                   # error before


def test_a_judge_without_its_own_model_has_no_self_preference_shown():
    """Such judges had shown a self-preference of 0.000 (blank bounds, a dot at 0 in the
    figure), read as a precisely estimated zero; and the fit without the bias terms had
    forgotten the judges left out."""
    rows = hb.datasets.load_prd_vicuna80().judgments
    rows = rows.assign(judge=rows.judge.replace({"bard": "human1", "claude": "human2"}))
    data = hb.Comparisons.from_frame(rows)
    fit = hb.fit_hja(data, rank=0, self_preference=True, leave_out=["gpt35"])
    table = hb.bias_table(fit).set_index("judge")
    assert table.loc[["human1", "human2"], ["self", "self_lower", "self_upper"]].isna().all(
        axis=None)
    assert table.loc[["gpt4", "vicuna-13b"], "self"].notna().all()
    rows = fit.intervals().query("quantity == 'self'").set_index("label")
    assert sorted(rows.index) == ["gpt4", "vicuna-13b"]  # no rows of NaN for the others
    plain = fit.uncontrolled()
    assert plain.excluded_judges == fit.excluded_judges and "gpt35" in plain.excluded_judges


@pytest.mark.parametrize("outcome, said", [("half", "its interval means nothing"),
                                           ("davidson", "widens every score's interval")])
def test_a_judge_that_tied_every_verdict_is_named(outcome, said):
    """Its gamma had come out as 5e-5 with a cluster-robust interval of [6e-6, 1e-4]
    (half), or its tie propensity at 1,621 with every score's interval 7x wider (Davidson),
    without a word."""
    rng = np.random.default_rng(21)
    a, b = rng.integers(0, 5, (2, 240))
    keep = a != b
    rows = pd.DataFrame({"judge": np.repeat(["j1", "j2", "j3"], 80)[keep], "model_a": a[keep],
                         "model_b": b[keep], "question_id": rng.integers(0, 20, 240)[keep]})
    rows["winner"] = np.where(rng.random(len(rows)) < expit(0.5 * (rows.model_b - rows.model_a)),
                              "model_a", "model_b")
    rows.loc[rows.index[::9], "winner"] = "tie"
    ties = pd.DataFrame({"judge": "j9", "model_a": [0, 1, 2] * 10, "model_b": [1, 2, 3] * 10,
                         "winner": "tie", "question_id": np.arange(30) % 20})
    data = hb.Comparisons.from_frame(pd.concat([rows, ties]).astype({"model_a": str,
                                                                     "model_b": str}),
                                     cluster="question_id")
    with pytest.warns(hb.DataWarning, match=r"\['j9'\] tied every verdict.*" + said):
        fit = hb.fit_hja(data, rank=0, outcome=outcome)
    with warnings.catch_warnings():  # and its gamma has no interval in the tables
        warnings.simplefilter("ignore", hb.DataWarning)
        table = hb.judge_table(fit).set_index("judge")
        rows = fit.intervals(pairs="none").query("quantity == 'gamma'").set_index("label")
    assert table.loc["j9", ["gamma_lower", "gamma_upper"]].isna().all()
    assert rows.loc["j9", ["lower", "upper"]].isna().all()
    assert table.loc[["j1", "j2", "j3"], "gamma_lower"].notna().all()
    with warnings.catch_warnings():  # the others' verdicts alone: not said
        warnings.filterwarnings("ignore", category=hb.DataWarning)
        warnings.filterwarnings("error", ".*tied every verdict", hb.DataWarning)
        hb.fit_hja(data.select_judges(["j1", "j2", "j3"]), rank=0, outcome=outcome)
