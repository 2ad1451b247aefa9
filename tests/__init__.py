"""Tests of k3deploy, mirroring the package."""
