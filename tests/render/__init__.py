"""Tests of k3deploy.render."""
