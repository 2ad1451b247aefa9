"""Tests of the smoke stage: pure parsing and math, fault cases against a scripted server on 127.0.0.1."""
