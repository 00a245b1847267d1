"""The persistent compilation cache: where it goes, how it is turned off, whose choice wins."""

import subprocess
import sys


def run(code, env):
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return out.stdout.strip().splitlines()[-1]


PROBE = "import jax, hja_bayes; print(jax.config.jax_compilation_cache_dir)"


def base_env(tmp_path):
    import os

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HJA_BAYES_CACHE", "JAX_COMPILATION_CACHE", "XDG_CACHE"))}
    env["HOME"] = str(tmp_path / "home")
    return env


def test_cache_defaults_to_the_user_cache_folder_and_can_be_turned_off(tmp_path):
    env = base_env(tmp_path)
    assert run(PROBE, env) == str(tmp_path / "home" / ".cache" / "hja_bayes")
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    assert run(PROBE, env) == str(tmp_path / "xdg" / "hja_bayes")
    assert (tmp_path / "xdg" / "hja_bayes").is_dir()
    env["HJA_BAYES_CACHE"] = "off"
    assert run(PROBE, env) == "None"


def test_a_cache_the_user_configured_is_kept(tmp_path):
    env = base_env(tmp_path)
    env["JAX_COMPILATION_CACHE_DIR"] = str(tmp_path / "mine")
    assert run(PROBE, env) == str(tmp_path / "mine")


def fake_entries(folder, sizes_and_ages):
    """JAX-style cache entries ``k<i>-cache`` (with ``-atime`` siblings) of the given sizes,
    last used ``age`` seconds ago."""
    import os
    import time

    folder.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for i, (size, age) in enumerate(sizes_and_ages):
        for suffix, data in (("-cache", b"x" * size), ("-atime", b"\0" * 8)):
            path = folder / f"k{i}{suffix}"
            path.write_bytes(data)
            os.utime(path, (now - age, now - age))


def test_trim_deletes_the_entries_used_longest_ago_down_to_the_bound(tmp_path):
    from hja_bayes.cache import trim_cache

    fake_entries(tmp_path, [(400, 50), (300, 10), (200, 40), (100, 20)])
    (tmp_path / "programs").mkdir()  # the package's own store, not JAX's
    (tmp_path / "notes.txt").write_text("kept")
    assert trim_cache(tmp_path, 450) == 2  # 1,000 bytes: k0 (oldest) then k2 go
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["k1-atime", "k1-cache", "k3-atime", "k3-cache", "last-trim", "notes.txt",
                    "programs"]
    assert trim_cache(tmp_path, 450) == 0


def test_a_process_trims_the_cache_at_exit_once_a_day_and_not_at_each_write(tmp_path):
    """JAX's own bound re-reads the whole folder at every write (1 s a program at 14,000
    entries); the package leaves it off and trims when a process exits, at most daily."""
    import os
    import time

    env = base_env(tmp_path)
    env["HJA_BAYES_CACHE_DIR"] = str(tmp_path / "cache")
    env["HJA_BAYES_CACHE_MAX_MB"] = str(1000 / 2**20)  # 1,000 bytes
    fake_entries(tmp_path / "cache", [(600, 100), (600, 50)])
    probe = "import jax, hja_bayes; print(jax.config.jax_compilation_cache_max_size)"
    assert run(probe, env) == "-1"  # JAX's bound is off
    assert not (tmp_path / "cache" / "k0-cache").exists()  # trimmed at exit
    assert (tmp_path / "cache" / "k1-cache").exists()
    fake_entries(tmp_path / "cache", [(600, 100)])  # over the bound again, trimmed today
    run(probe, env)
    assert (tmp_path / "cache" / "k0-cache").exists()
    stale = time.time() - 2 * 86400
    os.utime(tmp_path / "cache" / "last-trim", (stale, stale))
    run(probe, env)
    assert not (tmp_path / "cache" / "k0-cache").exists()
