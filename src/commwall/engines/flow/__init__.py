"""The flow engine: max-min fair sharing of links by fluid flows, event by event."""
