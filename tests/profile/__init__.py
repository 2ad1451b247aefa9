"""Tests of k3deploy.profile."""
