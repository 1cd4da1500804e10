from django.apps import AppConfig


class LLMConfig(AppConfig):
    name = "llm"
    verbose_name = "Language models"
    default_auto_field = "django.db.models.BigAutoField"
