// The wake-ups an enqueue sends, so that idle workers wake up (docs/guide/wakeups.md).
//
// Each (tenant, target) has a channel of its own, named "baton_" followed by 32 hex
// digits: the first 16 bytes of an HMAC-SHA-256, keyed by this database's secret
// (baton.wakeup_key, readable by the extension's owner only), of the tenant's 16 bytes
// and the target's. A role that may not learn the secret cannot name a channel, and
// LISTEN on a name it guessed hears nothing; baton.wakeup_channel() gives the name to
// whoever may claim there. The notification carries no payload.
//
// On a distributed install a notification is sent on the node where the enqueue ran.
// So that a worker hears it on whatever node it listens, the enqueue also sends the
// channel's name as the payload of a notification on the relay channel (named alike,
// from the secret and the bytes of kRelayMessage), which each other node's background
// worker listens to and sends again there (pg/workers/relay).
#pragma once

#include "pg/runtime/boundary.hpp"

namespace baton::pg::notify {

// "baton_" and 32 hex digits, and the terminating NUL.
constexpr int kChannelBytes = 6 + 32 + 1;

// What the relay channel's HMAC is of.
constexpr char kRelayMessage[] = "pg_baton relay";

// "baton_" and the first 16 bytes of HMAC-SHA-256(secret, the parts' bytes one after the
// other) as 32 hex digits. False when the HMAC could not be computed. Plain Postgres
// code (its allocations may raise out of memory): C++ callers call it through guard().
bool hmac_name(const unsigned char* secret, int secret_len, const unsigned char* const* parts, const int* lens,
               int nparts, char (&out)[kChannelBytes]);

// True when name has the shape of a channel's: "baton_" and 32 lowercase hex digits.
bool is_channel_name(const char* name);

// The wake-up channel of (tenant, target), written into channel. Reads the secret on
// first use in this backend. Postgres calls inside.
void channel(const pg_uuid_t* tenant, const text* target, char (&channel)[kChannelBytes]);

// Queues a NOTIFY on the channel of (tenant, target) when baton.notify is on; Postgres
// sends it at commit, once per transaction and channel.
void enqueued(const pg_uuid_t* tenant, const text* target);

}  // namespace baton::pg::notify
