"""The tests' in-process moto answers one request at a time (``tests/support/moto_atomic.py``), as DynamoDB does.

Eight threads add 60 members each to one item's string set with the interpreter switching threads as often as it
can: unserialized, moto's UpdateItem is a read-modify-write and lost 1-8 of the 480 adds in five runs of seven (or
raised "dictionary changed size during iteration" in its deep copy, as in CI); serialized, every add lands.
"""

from __future__ import annotations

import sys
import threading


def test_concurrent_adds_to_one_item_all_land(aws):
    ddb = aws[0]
    ddb.create_table(TableName="adds", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    errors: list[BaseException] = []

    def add(i: int) -> None:
        try:
            for j in range(60):
                ddb.update_item(TableName="adds", Key={"pk": {"S": "registry"}}, UpdateExpression="ADD #p :p",
                                ExpressionAttributeNames={"#p": "p"},
                                ExpressionAttributeValues={":p": {"SS": [f"{i}-{j}"]}})
        except BaseException as e:  # noqa: BLE001 - raised in the test's thread below
            errors.append(e)

    was = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=add, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        sys.setswitchinterval(was)
    if errors:
        raise errors[0]
    got = ddb.get_item(TableName="adds", Key={"pk": {"S": "registry"}})["Item"]["p"]["SS"]
    assert len(got) == 8 * 60
