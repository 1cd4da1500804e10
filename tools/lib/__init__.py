"""Plain helpers of the knowledge tools (no models): files, extraction, chunking, hybrid search, web."""
