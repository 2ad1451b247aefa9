"""Tests of k3deploy.measure: the arrival schedule and the dispatch of a batch under a load point."""
