"""Shared fixtures for cvl_algos tests."""

import torch

torch.set_num_threads(1)
