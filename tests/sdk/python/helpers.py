"""Small helpers shared by the Python SDK tests (names, error checks, request recording)."""

import json
import re
import uuid
from urllib.parse import urlsplit, urlunsplit

from azure.data.tables import TableClient, TableServiceClient

from tableq_server import connection_string

# W/"datetime'2021-06-09T01%3A17%3A08.3795894Z'"  (rest.md: ':' percent-encoded)
ETAG_RE = re.compile(r"""^W/"datetime'(\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\d(\.\d{1,7})?Z)'"$""")

# Keyword arguments for every client: no retries (a failure shows at once, and a server
# that only works on the second try is a bug), bounded waits.
CLIENT_KWARGS = {"retry_total": 0, "connection_timeout": 10, "read_timeout": 60}


def unique_name(prefix="py"):
    """A table name no other test uses: letters and digits, starting with a letter."""
    return f"{prefix}{uuid.uuid4().hex[:12]}"


def service_client(endpoint):
    return TableServiceClient.from_connection_string(connection_string(endpoint), **CLIENT_KWARGS)


def table_client(endpoint, table_name):
    return TableClient.from_connection_string(
        connection_string(endpoint), table_name, **CLIENT_KWARGS
    )


def with_host(endpoint, host):
    """`endpoint` with its host replaced (e.g. `localhost`, which the Python SDK treats as
    Cosmos on a port other than 10002 and then sends merges as POST + X-HTTP-Method)."""
    parts = urlsplit(endpoint)
    return urlunsplit(parts._replace(netloc=f"{host}:{parts.port}"))


def header_code(err):
    """The `x-ms-error-code` header of the response behind an SDK error."""
    response = getattr(err, "response", None)
    return None if response is None else response.headers.get("x-ms-error-code")


def assert_error(err, status, code):
    """An azure-core error carries `status` and `code`: the `x-ms-error-code` header, and the
    SDK's `error_code` where the SDK decodes one (it re-raises create_entity's errors as the
    pipeline raised them, without `error_code`)."""
    assert err.status_code == status, f"status {err.status_code}, expected {status}: {err}"
    assert header_code(err) == code, f"x-ms-error-code {header_code(err)!r}, expected {code!r}: {err}"
    sdk_code = getattr(err, "error_code", None)
    if sdk_code is not None:
        sdk_code = getattr(sdk_code, "value", sdk_code)  # TableErrorCode or plain text
        assert sdk_code == code, f"error_code {sdk_code!r}, expected {code!r}: {err}"
    body_code = odata_error_code(err)
    assert body_code == code, f"odata.error.code {body_code!r}, expected {code!r}"


def odata_error_code(err):
    """The code in the error body behind an SDK error: `odata.error.code` of a JSON body, or
    `<Code>` of the XML body of the XML operations (`<Error><Code>…</Code>…</Error>`)."""
    try:
        text = err.response.text()
    except AttributeError as exc:
        return f"<no error body: {exc!r}>"
    if text.startswith("<?xml"):
        match = re.search(r"<Error><Code>([^<]*)</Code>", text)
        return match.group(1) if match else f"<no <Code> in the XML body: {text!r}>"
    try:
        return json.loads(text)["odata.error"]["code"]
    except (ValueError, KeyError, TypeError) as exc:
        return f"<no odata.error body: {exc!r}>"


def assert_wrapped_error(value_error, status, code):
    """For the SDK's `ValueError`s raised while handling a service error: the service error
    they wrap (their `__cause__` or `__context__`) carries `status` and `code`."""
    inner = value_error.__cause__ or value_error.__context__
    assert inner is not None, f"{value_error!r} wraps no service error"
    assert inner.status_code == status, f"status {inner.status_code}, expected {status}"
    assert header_code(inner) == code, f"x-ms-error-code {header_code(inner)!r}, expected {code!r}"


def ticks(timestamp):
    """A DateTime text `YYYY-MM-DDTHH:MM:SS[.f{1,7}]Z` as (date-time text, 100 ns ticks)."""
    match = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,7}))?Z", timestamp)
    assert match, f"not a service DateTime: {timestamp!r}"
    return match.group(1), int((match.group(2) or "").ljust(7, "0"))


def etag_timestamp(etag):
    """The Timestamp text inside an ETag (`%3A` decoded)."""
    match = ETAG_RE.match(etag or "")
    assert match, f"not an ETag of the form W/\"datetime'...'\": {etag!r}"
    return match.group(1).replace("%3A", ":")


class Recorder:
    """A `raw_response_hook`: records method, X-HTTP-Method, status and error code of every
    response of the call it is passed to."""

    def __init__(self):
        self.calls = []

    def __call__(self, pipeline_response):
        request = pipeline_response.http_request
        response = pipeline_response.http_response
        self.calls.append(
            {
                "method": request.method,
                "x_http_method": request.headers.get("X-HTTP-Method"),
                "if_match": request.headers.get("If-Match"),
                "status": response.status_code,
                "code": response.headers.get("x-ms-error-code"),
            }
        )

    @property
    def last(self):
        assert self.calls, "no request was recorded"
        return self.calls[-1]
