"""Use cases that write only through kbtool.kb.store and kbtool.kb.gate."""
