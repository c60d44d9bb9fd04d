// Wake-ups relayed between the nodes of a distributed install, by the background worker
// of each node (the reaper's process, pg/workers/reaper).
//
// Postgres sends a notification to the sessions of the node where it was sent, and an
// enqueue runs on the tenant's node (a call alone is delegated there), so a worker
// listening on the coordinator, or on any other node, would not hear it. On a
// distributed install the enqueue also notifies the relay channel with its channel's
// name as the payload (pg/runtime/notify). The relay keeps one connection to each other
// active primary node of Citus' metadata, listens to the relay channel there, and sends
// each channel named again on its own node, in one transaction per batch of
// notifications heard: a worker hears an enqueue on whichever node it listens, before
// and after the tenant's shards move, without knowing where the tenant lives. The relay
// channel is named from the wake-up secret as the other channels are: a role that may
// not read the secret cannot listen to it. A name heard is sent again only on this
// node, never to the relay channel, so nothing goes round.
//
// Plain Postgres code, like the reaper: no C++ object with a destructor lives in it; each
// step that may raise an error runs through workers::logged(), which logs it and goes on.
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::relay {

// The application_name of the relay's connections.
constexpr char kApplicationName[] = "pg_baton relay";

// Connects to each other node of a distributed install not connected yet and listens
// there, closes the connections of nodes gone, and closes every connection when the
// database is not a distributed install of pg_baton. Reads Citus' metadata and the
// secret in a transaction of its own, at most every few seconds unless a connection was
// lost; after a failed connection to a node, the next waits kRetryMs (relay.cpp). Not
// inside a transaction.
void refresh();

// Waits until the latch is set or timeout_ms have passed, relaying every notification
// heard meanwhile. Exits the process if the postmaster dies, as WaitLatch would.
void wait(long timeout_ms);

}  // namespace baton::pg::relay
