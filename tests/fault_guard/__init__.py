"""Tests of k3deploy/fault_guard/."""
