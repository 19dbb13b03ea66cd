"""Consumer partition assignors (range, roundrobin, fair, sticky, cooperative-sticky,
stream-join-sticky), the consumer protocol codecs they travel in, and `plan`, the what-if engine
of `streamjoin plan`. The task assignor is the sibling package `tasks`; both share the plain data
model (`assignment.model`) and the wire primitives (`assignment.wire`).
"""
