"""`k3deploy stage`: copy a pinned snapshot onto a tray's local disk, verified and resumable, so a recreated group
loads at the local disk's rate instead of the shared volume's."""
