"""Tests of k3deploy.pod_scripts: the scripts shipped into pods."""
