"""Arguments of the wrong kind across the public API: a ParameterError or DataError naming the
argument, where NumPy's, pandas' or Python's own error had come out, or nonsense had been
taken (a column named None read as another column, a negative KL divergence giving a
tighter bound, a negative judge index counting from the end, options ignored)."""

import warnings

import numpy as np
import pandas as pd
import pytest

import hja_bayes as hb
from hja_bayes.cli import main
from hja_bayes.confidence import pac_bayes_kl_bound


@pytest.fixture(scope="module")
def small():
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=1, comparisons_per_judge=200, seed=0,
                          questions=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.HJAWarning)
        return data, hb.fit_hja(data, rank=1)


def test_readers_take_column_names_as_text():
    rows = pd.DataFrame(dict(judge=["j"], model_a=["x"], model_b=["y"], winner=["model_a"]))
    with pytest.raises(hb.ParameterError, match="model_a names a column: give its name, got None"):
        hb.Comparisons.from_frame(rows, model_a=None)  # had read the judge column as model_a
    with pytest.raises(hb.ParameterError, match="wins names a column"):
        hb.Comparisons.from_counts(rows.assign(n=1, wins=1), wins=None)
    assert hb.Comparisons.from_frame(rows, judge=None).n_judges == 1
    # a frame read without a header names its columns by number
    numbered = rows.set_axis(range(4), axis=1)
    assert hb.Comparisons.from_frame(numbered, judge=0, model_a=1, model_b=2,
                                     winner=3).n_comparisons == 1
    with pytest.raises(hb.DataError, match=r"column\(s\) \['judge', 'wins'\] not found"):
        hb.Comparisons.from_counts(rows.assign(n=1).drop(columns="judge"))  # both at once


def test_stopping_rules_and_ridges_of_the_btl_fits(small):
    data, _ = small
    for bad, match in ((dict(tol=1.0), r"tol must lie in \[0, 1\)"),
                       (dict(max_iter=0), "max_iter must be an integer >= 1"),
                       (dict(max_iter=1.5), "max_iter must be an integer >= 1"),
                       (dict(ridge=None), "ridge must be a number")):
        with pytest.raises(hb.ParameterError, match=match):
            hb.fit_pooled_btl(data, **bad)
    with pytest.raises(hb.ParameterError, match="ridge must be finite"):
        hb.fit_per_judge_btl(data, ridge=np.inf)  # had returned NaN scores
    with pytest.raises(hb.ParameterError, match="tol must lie"):
        hb.fit_hja(data, rank=0, tol=1.0)


def test_a_kl_divergence_is_never_negative():
    assert pac_bayes_kl_bound(0.1, 0.0, 100, 0.05) < pac_bayes_kl_bound(0.1, 1.0, 100, 0.05)
    with pytest.raises(hb.ParameterError, match="kl must be finite and >= 0"):
        pac_bayes_kl_bound(0.1, -1.0, 100, 0.05)  # had given a tighter bound than kl = 0
    with pytest.raises(hb.ParameterError, match="m must be an integer >= 1"):
        pac_bayes_kl_bound(0.1, 1.0, 1.5, 0.05)


def test_a_fit_predicts_other_data_by_name_and_refuses_what_it_does_not_know(small):
    data, fit = small
    from scipy.special import expit

    # the cells read back in reverse: other judge and model numbers, the same names
    reordered = hb.Comparisons.from_frame(data.to_frame().iloc[::-1].assign(winner="model_a"))
    assert reordered.items != fit.items or reordered.judges != fit.judges
    # directly from the scores (no position bias, no terms): expit(S[k, a] - S[k, b])
    judge = [fit.judges.index(reordered.judges[k]) for k in reordered.judge]
    first = [fit.items.index(reordered.items[i]) for i in reordered.first]
    second = [fit.items.index(reordered.items[j]) for j in reordered.second]
    want = expit(fit.S[judge, first] - fit.S[judge, second])
    np.testing.assert_allclose(fit.cell_probabilities(reordered), want, rtol=1e-12)
    wider, _ = hb.simulate(n_judges=3, n_items=6, rank=1, comparisons_per_judge=200, seed=0)
    with pytest.raises(hb.ParameterError, match="unknown item 'item4'"):
        fit.cell_probabilities(wider)
    with pytest.raises(hb.ParameterError, match="data must be Comparisons"):
        fit.cell_probabilities("x")
    with pytest.raises(hb.ParameterError, match=r"judge indices must be integers in 0\.\.2"):
        fit.logits(-1, 0, 1)  # had counted from the end
    with pytest.raises(hb.ParameterError, match="frame must be a DataFrame"):
        fit.outcome_proba(None)


def test_options_that_do_not_apply_are_refused_not_ignored(small):
    data, fit = small
    with pytest.raises(hb.ParameterError, match="judge_col: options of reading a frame"):
        fit.update(data, judge_col="zzz")
    with pytest.raises(hb.ParameterError, match="judges: for assumed scores"):
        hb.plan(fit, judges=3)
    with pytest.raises(hb.ParameterError, match="k must be an integer >= 1"):
        hb.plan(fit, pairs="top", k="abc")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.HJAWarning)
        assert not hb.fit_hja(data, rank=0, leave_out=None).excluded_judges


@pytest.mark.parametrize("seed", [-1, 1.5, True])
def test_seeds_are_whole_numbers_from_zero(small, seed):
    data, fit = small
    for call in (lambda: hb.next_comparisons(fit, 5, seed=seed),
                 lambda: hb.plan(fit, seed=seed),
                 lambda: hb.agreement(data, seed=seed),
                 lambda: hb.residual_heatmap(fit, seed=seed)):
        with pytest.raises(hb.ParameterError, match="seed must be an integer >= 0"):
            call()


def test_figures_and_reports_check_their_arguments(small, tmp_path):
    data, fit = small
    with pytest.raises(hb.ParameterError, match="n_blocks must be an integer >= 1"):
        hb.residual_heatmap(fit, n_blocks=0)
    with pytest.raises(hb.ParameterError, match="residual_heatmap needs an HJAFit"):
        hb.residual_heatmap(data)
    with pytest.raises(hb.ParameterError, match="unknown model 'nomodel'"):
        hb.observed_heatmap(data, order=["nomodel"])
    with pytest.raises(hb.ParameterError, match="each once, got 2 names \\(1 distinct\\)"):
        hb.observed_heatmap(data, order=["item0", "item0"])
    with pytest.raises(hb.ParameterError, match="each once, got 0 names"):
        hb.observed_heatmap(data, order=[])
    assert hb.reporting.observed.battle_counts(data, ["item1", "item0"]).shape == (2, 2)
    with pytest.raises(hb.ParameterError, match="fragility takes the audits"):
        hb.report(fit, tmp_path / "r", fragility="top")
    with pytest.raises(hb.ParameterError, match="title must be text"):
        hb.report(fit, tmp_path / "r", title=5)
    with pytest.raises(hb.ParameterError, match="out_dir is a folder's path"):
        hb.report(fit, None)
    assert not (tmp_path / "r").exists()


def test_counts_judges_and_paths_of_the_wrong_kind(small, tmp_path):
    data, fit = small
    with pytest.raises(hb.DataError, match="counts must be finite numbers >= 0 of shape"):
        data.with_counts(np.ones(data.clusters.counts.shape[0]))
    with pytest.raises(hb.DataError, match="removed must be numbers"):
        data.without(["item0"])
    for judge in (1.5, True, float("nan")):
        with pytest.raises(hb.ParameterError, match="judge must be an integer"):
            data.is_connected(judge=judge)
    with pytest.raises(hb.ParameterError, match="save_fit saves an HJAFit, got Comparisons"):
        hb.save_fit(data, tmp_path / "x")
    with pytest.raises(hb.ParameterError, match="idata must be an arviz.InferenceData"):
        fit.save(tmp_path / "x", idata="x")
    with pytest.raises(hb.ParameterError, match="path is a saved fit's folder"):
        hb.load_fit(None)


def test_a_file_out_in_a_missing_folder_is_refused_before_the_work(tmp_path, capsys):
    missing = tmp_path / "absent" / "x.csv"
    with pytest.raises(SystemExit) as stop:  # the parser's error, before any work
        main(["plan", "--models", "4", "--gap", "1.5", "--judges", "3", "--out", str(missing)])
    assert stop.value.code == 2
    assert "does not exist or cannot be written to" in capsys.readouterr().err


def test_lower_level_functions_name_what_is_wrong(small):
    data, fit = small
    with pytest.raises(hb.DataError, match="expected Comparisons, got HJAFit"):
        hb.wald_inference(fit, fit.S)
    with pytest.raises(hb.ParameterError, match="n_judges must be an integer >= 1, got nan"):
        hb.free_parameters(float("nan"), 4, 1)
    with pytest.raises(hb.ParameterError, match="position_bias must be True or False"):
        hb.free_parameters(3, 4, 1, position_bias="abc")
    for kwargs, match in ((dict(n_features="abc"), "n_features must be an integer"),
                          (dict(style_confounding="abc"), "style_confounding must be finite"),
                          (dict(question_correlation=None), "question_correlation must be")):
        with pytest.raises(hb.ParameterError, match=match):  # had been ignored
            hb.simulate(n_judges=3, n_items=4, **kwargs)
    with pytest.raises(hb.ParameterError, match="a file's path"):
        hb.Comparisons.from_csv(None)
    with pytest.raises(hb.DataError, match="the list of paths is empty"):
        hb.Comparisons.scan([])


def test_a_category_column_and_a_covariance_type_are_one_name(small):
    data, fit = small
    with pytest.raises(hb.ParameterError, match="by names one column"):
        hb.leaderboard_by(data.to_frame(), by=[])
    with pytest.raises(hb.ParameterError, match="cov_type must be one of"):
        fit.intervals(cov_type=np.array(["a", "b"]))  # NumPy's ambiguous truth value before


def test_a_data_folder_and_a_chain_method_are_checked(small):
    data, fit = small
    with pytest.raises(hb.ParameterError, match="data_dir is a folder's path, got int"):
        hb.datasets.load_ja_ranking(data_dir=5)
    with pytest.raises(hb.ParameterError, match="chain_method must be one of"):
        hb.sample_hja(data, 1, init=fit, num_warmup=5, num_samples=5, num_chains=1,
                      chain_method="x", progress_bar=False)


def test_position_locked_judges_are_found_in_comparisons_only(small):
    from hja_bayes.position_locked import first_shown_shares, locked_judges, slot_counts

    data, _ = small
    for function in (locked_judges, slot_counts, first_shown_shares):
        with pytest.raises(hb.DataError, match="expected Comparisons, got DataFrame: build one"):
            function(data.to_frame())  # had been an AttributeError on `order_known`


def test_style_control_on_data_without_prompts_says_it_needs_features():
    votes = hb.datasets.load_prd_vicuna80().judgments
    bare = hb.Comparisons.from_frame(votes[["judge", "model_a", "model_b", "winner"]])
    with pytest.raises(hb.DataError, match="style control needs answer features: read the "
                                           "data with features="):
        hb.fit_hja(bare, 1, style="shared")  # had said only that entries need prompts


def test_the_samplers_settings_are_checked_before_it_runs(small):
    """Each had run the whole sampler and then failed on an unnamed value (quadrature,
    max_pointwise), been taken as true or false (switches given as text), dropped the
    log-likelihood without an error (a negative max_pointwise), or failed inside NumPy or
    JAX (priors, a seed beyond 64 bits)."""
    data, fit = small
    bad = [({"quadrature": "abc"}, "quadrature must be a sequence"),
           ({"quadrature": (24, 0)}, "quadrature's node counts must be an integer >= 1"),
           ({"max_pointwise": "x"}, "max_pointwise must be an integer >= 0"),
           ({"max_pointwise": -1}, "max_pointwise must be an integer >= 0"),
           ({"progress_bar": "no"}, "progress_bar must be True or False"),
           ({"count_warmup": "yes"}, "count_warmup must be True or False"),
           ({"compile_data": None}, "compile_data must be True or False"),
           ({"priors": "x"}, "priors must be an HJAPriors, got str"),
           ({"seed": 2 ** 70}, r"seed must be below 2\*\*63"),
           ({"keep_alpha": True, "prompt_effects": False}, "keep_alpha acts with integrated"),
           ({"keep_alpha": False, "prompt_effects": "Sampled"}, "always kept"),
           ({"keep_alpha": "no", "prompt_effects": "integrated"}, "keep_alpha must be True"),
           # one node is the Laplace approximation, which the warning about it did not see
           ({"quadrature": (24, 1)}, "quadrature's node counts must be at least 2"),
           # a rule where nothing is integrated had been dropped without a word
           ({"quadrature": (3,), "prompt_effects": False},
            "quadrature acts with integrated prompt effects only; this call has no prompt"),
           ({"quadrature": (3,), "prompt_effects": "sampled"}, "samples the answer effects")]
    for kwargs, message in bad:
        with pytest.raises(hb.ParameterError, match=message):
            hb.sample_hja(data, 1, init=fit, **{"num_warmup": 5, "num_samples": 5,
                                                "num_chains": 1, "progress_bar": False,
                                                **kwargs})
    from hja_bayes.bayes.problem import prompt_setting
    from hja_bayes.bayes.settings import check_quadrature_use

    with pytest.warns(UserWarning, match="quadrature has no effect: the automatic choice"):
        check_quadrature_use((3,), "sampled", automatic=True)
    assert prompt_setting(data, np.False_) == (False, "turned off")  # had been refused


def test_warmup_counted_without_warmup_and_parallel_chains_without_devices(small):
    """count_warmup with num_warmup=0 had failed inside JAX (an IndexError); "parallel"
    chains without a device each ran one after the other while the posterior said
    "parallel"."""
    import jax

    data, fit = small
    chains = jax.local_device_count() + 1
    with pytest.warns(UserWarning, match=f"needs a device per chain, and JAX sees "
                                         f"{chains - 1} for {chains} chains"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.ConvergenceWarning)  # 3 draws: no R-hat
        idata = hb.sample_hja(data, 1, init=fit, prompt_effects=False, num_warmup=0,
                              num_samples=3, num_chains=chains, count_warmup=True,
                              chain_method="parallel", progress_bar=False)
    attrs = idata.posterior.attrs
    assert attrs["warmup_gradients"] == 0 and attrs["chain_method"] == "sequential"
    assert idata.posterior.sizes["chain"] == chains and idata.posterior.sizes["draw"] == 3
    assert "quadrature" not in attrs  # no prompt effects were integrated with it
