"""The predict tools' cards as the chat page draws them, in real Chromium: a trained model's
figures, the algorithms compared with the kept one marked, and a row's SHAP bars.

The model is trained in the test (its job run as a worker would) on scikit-learn's
diabetes data; a person then runs the tools with /name in offline mode.
"""

import pytest
from sklearn.datasets import load_diabetes

from datacatalog.store import ConversationCatalog
from tests.conftest import TENANT
from tests.web.conftest import CHROMIUM, serving
from tests.web.test_browser import open_conversation, say, sign_in
from tools.models import TrainedModel
from tools.trained_models import run_training_job

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(400),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]


@pytest.fixture
def files(settings, tmp_path):
    settings.EUNICE_FILES_DIR = tmp_path / "files"
    return settings.EUNICE_FILES_DIR


@pytest.fixture
def server(files):
    with serving({"EUNICE_FILES_DIR": str(files)}) as url:
        yield url


@pytest.fixture
def trained(conversation, files, registry):
    """Made before the browser starts: Playwright's sync API runs an event loop on this thread."""
    from registry.context import ToolContext

    books = ConversationCatalog(TENANT, conversation.pk)
    books.save("diabetes", load_diabetes(as_frame=True).frame, source="upload")
    inputs = {"dataset": "diabetes", "target": "target", "name": "progression", "wait_seconds": 0}
    queued = registry.execute_tool(
        "train_model", inputs, ToolContext(tenant_id=TENANT, conversation_id=conversation.pk)
    )
    assert queued.ok, queued.content
    model = TrainedModel.objects.get(name="progression")
    assert run_training_job(model.pk) == "ready"
    model.refresh_from_db()
    return model


def test_the_model_cards_are_drawn_with_their_figures_and_bars(server, trained, conversation, browser_page):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    say(page, '/get_model_info {"model": "progression"}')
    page.wait_for_selector("#panel .card-training_results table")
    assert "R²" in page.inner_text("#panel .card-training_results")
    assert page.inner_text("#panel .card-model_recommendation tr.recommended td") == trained.algorithm

    say(page, '/explain_prediction {"model": "progression", "dataset": "diabetes", "row_index": 3}')
    # The server's first explanation loads shap and numba (1.5 s on a quiet machine); under
    # CI's three passes it once took past the page's default 45 s: wait up to the tool's
    # own timeout.
    page.wait_for_selector("#panel .card-shap_explanation .shap-bar", timeout=120_000)
    bars = page.eval_on_selector_all(
        "#panel .card-shap_explanation .shap-bar", "(bars) => bars.map((b) => b.getBoundingClientRect().width)"
    )
    assert len(bars) == 10 and max(bars) > 0 and bars == sorted(bars, reverse=True)
