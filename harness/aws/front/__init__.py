"""The loopback front: the fidelity model on the wire, for any process (``harness.aws.front.server``)."""
