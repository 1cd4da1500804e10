"""The vector space's identity: light enough to import where vectors are only tagged."""

#: Weight of the multilingual encoder's cosine relative to MiniLM's.
USE_WEIGHT = 0.7

#: Identifies the vector space. Stored vectors carry it; a vector made by a
#: different model or weight must be re-embedded, never mixed into one index.
MODEL_ID = f"minilm-l6-v2-int8mm+use-multilingual-v3@{USE_WEIGHT}"
