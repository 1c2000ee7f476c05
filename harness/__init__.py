"""A distributed load-test harness for swamp-style sync layers on DynamoDB and S3."""

__version__ = "0.1.0"
