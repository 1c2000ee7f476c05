"""Reports: pandas for the numbers, matplotlib for the pictures; reads only run directories."""
