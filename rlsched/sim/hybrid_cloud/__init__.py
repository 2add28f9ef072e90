"""The hybrid local + cloud model of Fölling & Hofmann (FH) in the simulator, and its leasing policies."""
