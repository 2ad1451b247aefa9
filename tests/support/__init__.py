"""Small pure helpers the unit tests share: no server, no imitation of one (each module says what it mirrors)."""
