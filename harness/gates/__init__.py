"""Gates a CI owner writes: threshold expressions, how each is judged with its interval, the live abort."""
