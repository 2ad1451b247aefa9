"""`k3deploy pin`: resolve image tags to digests and Hub revisions to commits, and write a pinned profile.

`oci`, `floating` and `mirrors` are pure; `registry` and `hub` talk to the network, always with a timeout; `run` ties them.
"""
