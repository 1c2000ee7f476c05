"""What the datastore costs on AWS: the price table (prices.toml) and a run's requests and units priced (cost.py)."""
