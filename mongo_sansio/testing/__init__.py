"""Server-side pieces for testing: the simulated MongoDB replica set and its data engine."""
