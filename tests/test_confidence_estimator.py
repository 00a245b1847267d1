"""The confidence ranker as a scikit-learn estimator, and saving it without pickle."""

import json
import warnings

import numpy as np
import pytest
from scipy.special import expit

from hja_bayes.confidence import ConfidenceRanker, auroc, load_ranker
from hja_bayes.errors import DataError, DataWarning

# small settings that still learn the checks' toy problems (one compiled trainer per width)
TINY = dict(n_pairs=256, batch_size=32, n_epochs=4, hidden=(8,), n_draws=16)


def _data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    agree = rng.random(n) < expit(2.0 * x[:, 0] - np.abs(x[:, 1]))
    return x, agree


def test_passes_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the checks provoke warnings on purpose
        results = check_estimator(ConfidenceRanker(**TINY), on_fail=None)
    failed = [(r["check_name"], repr(r["exception"])[:300]) for r in results if r["status"] == "failed"]
    assert not failed and len(results) > 40


def test_sklearn_tools_and_the_prediction_methods():
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV, cross_val_score

    x, agree = _data(300, 0)
    y = np.where(agree, "agree", "disagree")  # any two labels; sorted, the second... is "disagree"
    model = ConfidenceRanker(hidden=[8], **{k: v for k, v in TINY.items() if k != "hidden"})
    twin = clone(model)
    assert twin.get_params() == model.get_params() and twin.hidden == [8]  # kept as passed
    scores = cross_val_score(clone(model), x, agree, cv=3, scoring="roc_auc")
    assert scores.shape == (3,) and np.all(scores > 0.6)
    search = GridSearchCV(clone(model), {"prior_scale": [0.5, 2.0]}, cv=2, scoring="roc_auc").fit(x, agree)
    assert search.best_params_["prior_scale"] in (0.5, 2.0)
    with pytest.warns(DataWarning, match="the second, 'disagree', is taken as agreement"):
        fitted = clone(model).fit(x, y)
    assert fitted.classes_.tolist() == ["agree", "disagree"]
    proba = fitted.predict_proba(x)
    c = fitted.predict_confidence(x)
    assert np.allclose(proba[:, 1], c) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(fitted.predict(x), np.where(c >= 0.5, "disagree", "agree"))
    assert np.allclose(expit(fitted.decision_function(x)), c)
    # "agree" is the second sorted label: with strings that is "disagree", so the score ranks
    # disagreement; with booleans or 0/1 it ranks agreement
    assert auroc(c, ~agree) > 0.6


def test_labels_the_ranker_was_not_fitted_with_are_refused_not_read_as_disagreement():
    """certify() had compared y with classes_[1] unchecked: text 'True'/'False' given to a
    ranker fitted on booleans, or 1/2 codes, were all disagreement (no threshold, silently)."""
    x, agree = _data(300, 5)
    model = ConfidenceRanker(**TINY).fit(x, agree)
    for y in (np.where(agree, "True", "False"), np.where(agree, 2, 1)):
        with pytest.raises(DataError, match=r"not fitted with.*classes are \[False, True\]"):
            model.certify(x, y, alpha=0.3, delta=0.1)
        with pytest.raises(DataError, match="not fitted with"):
            model.pac_bayes_bound(x, y)
    as_int = model.certify(x, agree.astype(int), alpha=0.3, delta=0.1)  # 0/1 are the booleans
    assert as_int == model.certify(x, agree, alpha=0.3, delta=0.1)
    with warnings.catch_warnings():  # labels that sort the right way round: nothing to say
        warnings.simplefilter("error")
        ConfidenceRanker(**TINY).fit(x, np.where(agree, "yes", "no"))


def test_save_and_load_give_identical_predictions(tmp_path):
    x, agree = _data(400, 1)
    cal_x, cal_agree = _data(300, 2)
    model = ConfidenceRanker(**TINY).fit(x, agree)
    cert = model.certify(cal_x, cal_agree, alpha=0.3, delta=0.1, groups=np.arange(300) // 3)
    model.save(tmp_path / "r")
    back = load_ranker(tmp_path / "r")
    new_x, _ = _data(500, 3)
    assert np.array_equal(back.predict_confidence(new_x), model.predict_confidence(new_x))
    assert np.array_equal(back.predict(new_x), model.predict(new_x))
    assert back.certificate_ == cert and back.get_params() == model.get_params()
    assert np.array_equal(back.trusted(new_x), model.trusted(new_x))
    # plain files: JSON and an npz that loads without pickle
    meta = json.loads((tmp_path / "r" / "ranker.json").read_text())
    assert meta["certificate"]["grouped"] is True and meta["params"]["hidden"] == [8]
    with np.load(tmp_path / "r" / "weights.npz", allow_pickle=False) as npz:
        assert "loc__W0" in npz.files and "scale__W0" in npz.files
    with pytest.raises(DataError, match="no saved"):
        load_ranker(tmp_path / "nothing")
    # a deterministic ranker round-trips too (no posterior scales)
    det = ConfidenceRanker(posterior=False, **TINY).fit(x, agree)
    det.save(tmp_path / "d")
    assert np.array_equal(load_ranker(tmp_path / "d").predict_confidence(new_x), det.predict_confidence(new_x))


def test_a_damaged_saved_ranker_is_a_data_error_naming_the_folder(tmp_path):
    """A truncated weights.npz had been a zipfile traceback (exit 1 from the command line),
    a truncated ranker.json a bare JSON message, a missing key "'margin'"."""
    import shutil

    x, agree = _data(300, 4)
    ConfidenceRanker(**TINY).fit(x, agree).save(tmp_path / "r")
    damages = {
        "weights": lambda f: (f / "weights.npz").write_bytes(
            (f / "weights.npz").read_bytes()[:100]),
        "json": lambda f: (f / "ranker.json").write_text((f / "ranker.json").read_text()[:200]),
        "key": lambda f: (f / "ranker.json").write_text(json.dumps(
            {k: v for k, v in json.loads((f / "ranker.json").read_text()).items()
             if k != "margin"})),
    }

    def edit(change):  # a value edited that still parses: had failed later, or not at all
        def damage(f):
            meta = json.loads((f / "ranker.json").read_text())
            change(meta)
            (f / "ranker.json").write_text(json.dumps(meta))
        return damage

    damages.update(
        unknown_setting=edit(lambda m: m["params"].update(foo=1)),  # a TypeError traceback
        transform=edit(lambda m: m.update(transform="weird")),  # had loaded
        hidden=edit(lambda m: m["params"].update(hidden=[3, 3, 3])),  # had loaded
        certificate=edit(lambda m: m.update(certificate=dict(  # printed "agreement >= -100%"
            threshold=0.5, alpha=2.0, delta=0.1, n_calibration=10, n_groups=10,
            grouped=False, assumption="x"))),
        threshold=edit(lambda m: m.update(certificate=dict(  # a NumPy error at apply
            threshold="abc", alpha=0.1, delta=0.1, n_calibration=10, n_groups=10,
            grouped=False, assumption="x"))))
    for name, damage in damages.items():
        folder = tmp_path / name
        shutil.copytree(tmp_path / "r", folder)
        damage(folder)
        with pytest.raises(DataError, match=f"{folder} holds a damaged confidence ranker"):
            load_ranker(folder)
