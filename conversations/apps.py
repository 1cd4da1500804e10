from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "conversations"
    verbose_name = "Conversations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from conversations import cancels  # noqa: F401  (its handlers hear cancels from other processes)
        from conversations.records import StoredConversations
        from conversations.tenant_policy import TenantRules
        from conversations.turn_reservations import close_running_turn
        from conversations.usage import UsageLogLedger
        from conversations.working_set import StoredWorkingSets
        from eunice import drain
        from registry import conversation_records, gate, schedules, surface, usage

        # The registry reads working sets, and the layers below read conversations, only through these ports.
        surface.working_sets.install(StoredWorkingSets())
        conversation_records.install(StoredConversations())
        # A call no conversation is behind meets the tenant's policy rules in the registry's gate.
        gate.tenant_policy.install(TenantRules())
        # Every tool call's cost reaches the usage log, whoever made the call.
        usage.ledger.install(UsageLogLedger())
        # A turn the server's stop cancelled is closed as interrupted (docs/operations.md).
        drain.on_interrupted(close_running_turn)
        # A turn whose server died on another host is closed, and its open pages told, within
        # a minute or two (EUNICE_TURN_STALE_SECONDS, then the sweep): docs/operations.md.
        schedules.register("close dead turns", "conversations.cancels.sweep_dead_turns", minutes=1, keep_results=False)
