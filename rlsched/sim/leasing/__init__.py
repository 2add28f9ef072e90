"""Cloud leasing in the simulator: the hybrid model and the leasing policies of Fölling & Hofmann (FH)."""
