#!/usr/bin/env python3
"""Decodes OTLP/HTTP trace export bodies (ExportTraceServiceRequest, protobuf)
with PyPI's opentelemetry-proto and prints one JSON line per span: its name,
ids as lower-case hex, and attributes as [key, text] pairs (numbers and
booleans as Rust's test prints them). Used by tests/it/traces/export.rs.

usage: otlp-decode.py BODY.pb...
"""
import json
import sys

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)


def text(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "string_value":
        return any_value.string_value
    if kind == "bool_value":
        return "true" if any_value.bool_value else "false"
    if kind == "int_value":
        return str(any_value.int_value)
    if kind == "double_value":
        value = any_value.double_value
        return str(int(value)) if value == int(value) else repr(value)
    return ""


for path in sys.argv[1:]:
    request = ExportTraceServiceRequest()
    with open(path, "rb") as f:
        request.ParseFromString(f.read())
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                print(
                    json.dumps(
                        {
                            "name": span.name,
                            "traceId": span.trace_id.hex(),
                            "spanId": span.span_id.hex(),
                            "parentSpanId": span.parent_span_id.hex(),
                            "attributes": [
                                [kv.key, text(kv.value)] for kv in span.attributes
                            ],
                        }
                    )
                )
