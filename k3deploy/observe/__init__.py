"""Observing a running deployment: the PromQL of its figures, the Grafana dashboard and Prometheus alerts built
from them, and the live terminal view (`k3deploy watch`)."""
