"""`harness climb SCENARIO --rate LO..HI`: a climb of open-fleet runs to the saturation point."""
