"""The DynamoDB backend (swamp's DynamoDB extension), in modules with one job each.

``items`` (keys, codecs, which version a reader sees), ``table`` (provisioning),
``locks`` (the lock item), ``commit`` (fenced and unfenced index commits),
``cursor`` (what a worker knows), ``backend`` (the data path).
"""

from harness.datastore.backends.dynamodb.backend import DynamoBackend
from harness.datastore.backends.dynamodb.items import (
    BATCH_GET_MAX,
    BATCH_WRITE_MAX,
    CHUNK_BYTES,
    GSI_KEYS,
    GSI_LAYOUTS,
    GSI_NAME,
    TABLE_KEYS,
    DomainState,
    chunk_key,
)
from harness.datastore.backends.dynamodb.locks import DynamoLockStore

__all__ = ["BATCH_GET_MAX", "BATCH_WRITE_MAX", "CHUNK_BYTES", "GSI_KEYS", "GSI_LAYOUTS", "GSI_NAME", "TABLE_KEYS",
           "DomainState", "DynamoBackend", "DynamoLockStore", "chunk_key"]
