"""A schema fastjsonschema cannot compile is still checked, by the reference validator.

That validator (jsonschema) is imported on first need, not at start-up
(tests/test_startup_imports.py); these tests make sure the path still works.
"""

import pytest

from registry.validation import InputError, validator_for


def test_a_schema_with_an_unknown_type_names_itself_as_the_problem():
    validate = validator_for({"type": "object", "properties": {"n": {"type": "integr"}}})

    with pytest.raises(InputError) as raised:
        validate({"n": 1})

    assert raised.value.field == "(schema)"
    assert "the tool's own input schema is invalid" in str(raised.value)
