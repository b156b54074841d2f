"""The exceptions of the client, one class per thing that went wrong.

Every exception derives from :class:`RolloutError`. Answers of the trainer gateway that retrying
cannot change are :class:`GatewayError` subclasses, one per error ``code`` of the gateway's JSON
error body (docs/protocol.md, "Trainer gateway")::

    unauthorized (401)        -> UnauthorizedError
    bad_request (400)         -> BadRequestError
    not_found (404)           -> NotFoundError
    method_not_allowed (405)  -> MethodNotAllowedError
    payload_too_large (413)   -> PayloadTooLargeError
    engine_error (500)        -> EngineError
    unavailable (503)         -> GatewayUnavailableError (normally retried on the next contact point)
    version_refused (409)     -> VersionRefusedError      (a WeightPublishError)
    weights_not_loaded (502)  -> WeightsNotLoadedError    (a WeightPublishError)
"""

from __future__ import annotations

from typing import Dict, Mapping, Optional, Type


class RolloutError(Exception):
    """The base of every error this package raises."""


class ClientClosedError(RolloutError):
    """A call was made on (or was running when someone closed) a closed :class:`RolloutClient`."""


class EngineUnreachableError(RolloutError):
    """No contact point answered within the client's ``retry_deadline``.

    ``last_errors`` maps each contact point, in the configured order, to the last failure seen there
    (``"not tried"`` if it never was).
    """

    def __init__(self, what: str, elapsed_s: float, last_errors: Mapping[str, str]) -> None:
        self.what = what
        self.elapsed_s = elapsed_s
        self.last_errors: Dict[str, str] = dict(last_errors)
        listing = "; ".join(f"{cp}: {err}" for cp, err in self.last_errors.items())
        super().__init__(
            f"could not {what}: no trainer gateway answered for {elapsed_s:.1f} s (retry_deadline); "
            f"last errors: {listing}"
        )


class BatchFormatError(RolloutError):
    """The bytes of a batch are not valid RBATCH v1; the message names the batch, group and tensor."""


class BatchStreamBrokenError(RolloutError):
    """A batch's stream ended or failed before its trailer.

    The engine still holds the batch: it is delivered again (same id, same groups) once the
    engine's ``batch_ack_timeout`` has passed. Pulling again is safe.
    """

    def __init__(self, gateway: str, batch_id: Optional[int], received: int, cause: str) -> None:
        self.gateway = gateway
        self.batch_id = batch_id
        self.received = received
        self.cause = cause
        which = "a batch" if batch_id is None else f"batch {batch_id}"
        super().__init__(
            f"{which} from {gateway} broke off after {received} bytes: {cause}; the engine delivers it "
            f"again after its batch_ack_timeout"
        )


class GatewayError(RolloutError):
    """An answer of the trainer gateway that retrying cannot change.

    Attributes: ``status`` (HTTP status), ``code`` (the gateway's error code), ``message`` (the
    gateway's message), ``gateway`` (the contact point that answered), ``what`` (the call).
    """

    code_name: str = ""

    def __init__(self, what: str, gateway: str, status: int, code: str, message: str) -> None:
        self.what = what
        self.gateway = gateway
        self.status = status
        self.code = code
        self.message = message
        super().__init__(f"could not {what}: the trainer gateway at {gateway} answered HTTP {status} {code}: {message}")


class UnauthorizedError(GatewayError):
    """401: no bearer token, or not the gateway's token."""

    code_name = "unauthorized"


class BadRequestError(GatewayError):
    """400: the request is malformed (the message names the field)."""

    code_name = "bad_request"


class NotFoundError(GatewayError):
    """404: no such endpoint (the message lists the gateway's endpoints)."""

    code_name = "not_found"


class MethodNotAllowedError(GatewayError):
    """405: the endpoint exists but not with this HTTP method."""

    code_name = "method_not_allowed"


class PayloadTooLargeError(GatewayError):
    """413: the request body is over the gateway's 64 KiB limit."""

    code_name = "payload_too_large"


class EngineError(GatewayError):
    """500: the engine failed the call; the message is the engine's."""

    code_name = "engine_error"


class GatewayUnavailableError(GatewayError):
    """503: the gateway is shutting down. The client tries the next contact point on its own; this is
    raised only by :func:`error_for` for callers that map answers themselves."""

    code_name = "unavailable"


class WeightPublishError(GatewayError):
    """A weight publish was refused or not applied."""


class VersionRefusedError(WeightPublishError):
    """409: the version is not greater than the engine's current one; nothing was applied.

    ``maybe_applied_earlier`` is True when an earlier attempt of the same publish broke off after it
    may have reached a gateway: the refusal may then be that attempt's success.
    """

    code_name = "version_refused"
    maybe_applied_earlier: bool = False


class WeightsNotLoadedError(WeightPublishError):
    """502: no inference server loaded the file; the engine's version is unchanged and the same
    version may be published again."""

    code_name = "weights_not_loaded"


ERRORS_BY_CODE: Dict[str, Type[GatewayError]] = {
    cls.code_name: cls
    for cls in (
        UnauthorizedError,
        BadRequestError,
        NotFoundError,
        MethodNotAllowedError,
        PayloadTooLargeError,
        EngineError,
        GatewayUnavailableError,
        VersionRefusedError,
        WeightsNotLoadedError,
    )
}

_BY_STATUS: Dict[int, Type[GatewayError]] = {
    401: UnauthorizedError,
    400: BadRequestError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    413: PayloadTooLargeError,
    500: EngineError,
    503: GatewayUnavailableError,
    409: VersionRefusedError,
    502: WeightsNotLoadedError,
}


def error_for(what: str, gateway: str, status: int, code: str, message: str) -> GatewayError:
    """The exception for a gateway's error answer: by its ``code``, else by its HTTP status, else a
    plain :class:`GatewayError`."""
    cls = ERRORS_BY_CODE.get(code) or _BY_STATUS.get(status) or GatewayError
    return cls(what, gateway, status, code, message)
