"""The REST views of the data catalog (datacatalog): they read the conversation through conversations.access."""
