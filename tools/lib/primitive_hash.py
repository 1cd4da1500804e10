"""The hash an approval of a primitive binds to: every field that decides what it does."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def primitive_hash(
    *,
    tenant_id: str,
    name: str,
    description: str,
    input_schema: Any,
    output_schema: Any,
    code: str,
    examples: Any,
) -> str:
    """SHA-256 over a canonical JSON of the primitive's definition."""
    canonical = json.dumps(
        {
            "tenant_id": tenant_id,
            "name": name,
            "description": description,
            "input_schema": input_schema,
            "output_schema": output_schema,
            "code": code,
            "examples": examples,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()
