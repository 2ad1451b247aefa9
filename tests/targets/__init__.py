"""Tests of k3deploy.targets."""
