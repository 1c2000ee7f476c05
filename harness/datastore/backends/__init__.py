"""Storage bindings: what swamp's contract needs from a backend, on DynamoDB and S3."""
