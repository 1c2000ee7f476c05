"""The rate forecast from what grows: fits (fit.py), horizons (horizon.py), the forecast (forecast.py), a run
as its inputs (inputs.py), its figure (figure.py)."""
