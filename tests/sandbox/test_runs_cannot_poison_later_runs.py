"""Attack class: changing something a later run (another tenant's) would see."""

import pytest

from tests.sandbox.conftest import SALES, output, run

POISON_IN_LANGUAGE = {
    "monkeypatch a DataFrame method": "pd.DataFrame.sum = lambda self: 0",
    "replace a facade member": "pd.DataFrame = None",
    "register an accessor": "pd.api.extensions.register_dataframe_accessor('evil')(lambda d: d)",
    "change display options": "pd.set_option('display.max_rows', 1)",
}


@pytest.mark.parametrize("code", POISON_IN_LANGUAGE.values(), ids=POISON_IN_LANGUAGE.keys())
def test_poisoning_shared_state_is_stopped_by_the_language_layer(code):
    assert run(code, df=SALES).stopped_by == "language"


def test_a_patched_pandas_dies_with_its_run_when_the_language_layer_is_off():
    patched = run(
        "import pandas\npandas.DataFrame.sum = lambda self, *a, **k: 'poisoned'\nresult = 'done'", language=False
    )
    assert patched.ok
    assert "poisoned" not in output(run("result = df['units'].sum()", df=SALES))


def test_files_left_in_scratch_are_gone_for_the_next_run():
    assert run("open('left.txt', 'w').write('x')\nresult = 1", language=False).ok
    later = run("import os\nresult = os.listdir('.')", language=False)
    assert later.answer["text"] == "[]"


def test_the_dataset_a_run_mutates_is_a_copy():
    from tests.sandbox.conftest import SALES as original

    before = original.copy()
    assert run("df['units'] = 0\ndf.loc[0, 'region'] = 'x'\nresult = df", df=original).ok
    assert original.equals(before)
