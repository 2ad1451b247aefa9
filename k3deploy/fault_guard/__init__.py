"""`k3deploy guard`: a sick NVL72 tray under a serving group takes the group to healthy trays, with evidence kept.

decide.py and signals.py are pure (what is sick, what to do); snapshot.py reads the cluster, evidence.py writes the
bundle, act.py cordons, deletes and reports, metrics.py counts, loop.py runs a pass or the loop.
"""
