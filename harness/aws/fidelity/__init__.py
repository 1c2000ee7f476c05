"""Make local runs behave like DynamoDB and S3 under load: throttling, latency, faults.

All of it sits in the boto3 client (botocore event hooks), so it works in front
of any endpoint, and a throttle travels botocore's normal error path: retries
and callers see what they would see on AWS. Off by default on real AWS, where
the real service decides.
"""
