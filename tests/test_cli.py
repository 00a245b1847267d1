import subprocess
import sys


def test_demo_prints_leaderboard():
    out = subprocess.run([sys.executable, "-m", "hja_bayes", "demo"], capture_output=True, text=True, check=True)
    assert "gpt4" in out.stdout and "Pooled Bradley" in out.stdout


def test_bad_input_one_line_error_exit_2():
    out = subprocess.run([sys.executable, "-m", "hja_bayes", "demo", "--level", "2"], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
