"""Self-play league: payoff, Elo ratings, opponent draws and snapshots (no Ray, no torch)."""
