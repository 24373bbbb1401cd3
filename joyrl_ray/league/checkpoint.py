"""Where a league's state sits in a checkpoint: under this key of the main policy's."""

LEAGUE_KEY = "league"
