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
