"""Websocket routes (the chat consumer lands with the agent loop)."""

websocket_urlpatterns: list = []
