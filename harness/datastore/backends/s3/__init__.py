"""The S3 backend (swamp's S3 extension), in modules with one job each.

``objects`` (object helpers), ``locks`` (the lock object), ``index`` (head and
shard documents, what a worker knows of them), ``backend`` (the data path and
commits).
"""

from harness.datastore.backends.s3.backend import S3Backend
from harness.datastore.backends.s3.index import INDEX_KINDS, content_rel
from harness.datastore.backends.s3.locks import S3LockStore
from harness.datastore.backends.s3.objects import S3Objects

__all__ = ["INDEX_KINDS", "S3Backend", "S3LockStore", "S3Objects", "content_rel"]
