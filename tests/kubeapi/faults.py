"""The imitation's fault rules: the shared ones of tests/realk8s/fault_rules.py."""

from tests.realk8s.fault_rules import Fault, Faults

__all__ = ["Fault", "Faults"]
