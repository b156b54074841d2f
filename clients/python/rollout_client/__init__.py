"""rollout_client: a trainer's client of the Rollout Engine, through its trainer gateways.

::

    from rollout_client import RolloutClient, Deduplicator

    with RolloutClient(["http://10.0.0.5:8470", "http://10.0.0.6:8470"]) as client:
        dedup = Deduplicator()
        for batch in client.batches(prefetch=2, deduplicator=dedup):
            tensors = batch.to_torch()          # or batch.collate() for numpy
            ...                                  # train
            dedup.mark_trained(batch)
            client.ack(batch)
            client.publish_weights(version, path)

The wire contract is docs/protocol.md ("Trainer gateway"); the guide is docs/trainer.md.
"""

from .batch import Batch, Group, concat_padded
from .client import PublishResult, RolloutClient, Status
from .dedup import Deduplicator
from .errors import (
    BadRequestError,
    BatchFormatError,
    BatchStreamBrokenError,
    ClientClosedError,
    EngineError,
    EngineUnreachableError,
    GatewayError,
    GatewayUnavailableError,
    MethodNotAllowedError,
    NotFoundError,
    PayloadTooLargeError,
    RolloutError,
    UnauthorizedError,
    VersionRefusedError,
    WeightPublishError,
    WeightsNotLoadedError,
)
from .iteration import BatchIterator
from .lease import HeldBatch
from .rbatch import read_batch, write_batch

__version__ = "0.1.0"

__all__ = [
    "BadRequestError",
    "Batch",
    "BatchFormatError",
    "BatchIterator",
    "BatchStreamBrokenError",
    "ClientClosedError",
    "Deduplicator",
    "EngineError",
    "EngineUnreachableError",
    "GatewayError",
    "GatewayUnavailableError",
    "Group",
    "HeldBatch",
    "MethodNotAllowedError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PublishResult",
    "RolloutClient",
    "RolloutError",
    "Status",
    "UnauthorizedError",
    "VersionRefusedError",
    "WeightPublishError",
    "WeightsNotLoadedError",
    "concat_padded",
    "read_batch",
    "write_batch",
]
