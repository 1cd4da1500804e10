"""A run's result nested past EUNICE_JSON_MAX_DEPTH (a full-response dict the run built) is
refused by the host, which parses it without recursing: the run fails with a clear reason
and the next run works."""

from tests.sandbox.conftest import run

DEEP = "v = []\nfor _ in range({depth}):\n    v = [v]\nresult = {{'message': 'deep', 'data': v}}"


def test_a_deep_result_is_refused_naming_the_limit():
    outcome = run(DEEP.format(depth=500))
    assert outcome.ok is False and outcome.stopped_by == "result_depth"
    assert "EUNICE_JSON_MAX_DEPTH" in outcome.error
    assert run("result = {'message': 'flat', 'data': [[1, 2], {'a': [3]}]}").ok


def test_a_result_within_the_limit_is_returned():
    assert run(DEEP.format(depth=55)).ok
