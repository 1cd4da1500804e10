"""A model row's key variable must end in _API_KEY: no other secret is sent to its endpoint."""

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("llm", "0003_model_endpoint_and_catalog_prices"),
    ]

    operations = [
        migrations.AlterField(
            model_name="modelconfig",
            name="api_key_env",
            field=models.CharField(
                blank=True,
                help_text="The environment variable holding this model's API key, ending in _API_KEY "
                "(the key is never stored here); empty: the provider's default (ANTHROPIC_API_KEY, "
                "OPENAI_API_KEY, none for a local server)",
                max_length=64,
                validators=[
                    django.core.validators.RegexValidator(
                        "^[A-Z][A-Z0-9_]*_API_KEY$",
                        "must name an environment variable ending in _API_KEY, e.g. OPENROUTER_API_KEY "
                        "(no other secret is sent to a model's endpoint)",
                    )
                ],
            ),
        ),
    ]
