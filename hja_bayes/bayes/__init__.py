"""Bayesian HJA model (NumPyro): model, NUTS sampling to ArviZ, posterior checks."""

from .model import HJAPriors, hja_model
from .sample import sample_hja

__all__ = ["HJAPriors", "hja_model", "sample_hja"]
