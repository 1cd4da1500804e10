"""URLs of the conversation catalog (included from eunice/urls.py)."""

from django.urls import path

from conversations.catalog.views import ConversationDatasetsView, DocumentUploadView, FileDownloadView

urlpatterns = [
    path(
        "api/conversations/<str:conversation_id>/datasets/",
        ConversationDatasetsView.as_view(),
        name="conversation-datasets",
    ),
    path("files/<int:file_id>/", FileDownloadView.as_view(), name="file-download"),
    path("api/documents/", DocumentUploadView.as_view(), name="document-uploads"),
]
