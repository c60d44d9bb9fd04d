// The wake-up channels and the NOTIFY an enqueue sends (see notify.hpp).
#include <cstddef>
#include <cstring>

#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/citus/citus.hpp"
#include "pg/runtime/cache.hpp"
#include "pg/runtime/notify.hpp"
#include "pg/runtime/relations.hpp"
#include "pg/runtime/settings.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::pg::notify {

namespace {

constexpr int kSecretBytes = 32;
constexpr int kDigestBytes = 16;  // of the HMAC's 32, as 32 hex digits in the name
// A target is at most kTargetMaxChars characters of at most 4 bytes each.
constexpr int kTargetMaxBytes = baton::limits::kTargetMaxChars * 4;

// The secret, read once per backend and kept until an invalidation of baton.wakeup_key
// (TRUNCATE, DROP, the extension re-created) or a reset.
struct Secret {
    unsigned char bytes[kSecretBytes];
    Oid relid;  // baton.wakeup_key's
    char relay[kChannelBytes];  // the relay channel's name
};
cache::Value<Secret> g_secret;

// The channels named, so that a batch of items for a few targets hashes each once: by
// (tenant, target), the target's bytes compared up to its length. Forgotten with the
// secret they were computed with; at most kChannels, the next new one empties the table.
using ChannelKey = cache::TenantTarget<kTargetMaxBytes>;
struct Channel {
    Oid secret_relid;  // baton.wakeup_key's oid when the secret was read
    char name[kChannelBytes];
};
bool channel_depends(const ChannelKey&, const Channel& c, Oid relid) { return relid == c.secret_relid; }
constexpr long kChannels = 64;
cache::Map<ChannelKey, Channel, ChannelKey, channel_depends> g_channels{"pg_baton wake-up channels", kChannels,
                                                                      cache::Forgets::kDependents};

KeptPlan g_read_secret = {"SELECT k.secret FROM baton.wakeup_key k", 0, {}, nullptr};

// Reads baton.wakeup_key's secret into g_secret (through SPI: on Citus the table is a
// reference table whose rows live in its shard). No row, or one of the wrong length, is
// an error that says how to make a new one.
void read_secret() {
    Spi spi;
    std::uint64_t n = spi.run(g_read_secret, nullptr, nullptr);
    bool isnull = true;
    Datum d = n == 1 ? spi.value(0, 1, &isnull) : static_cast<Datum>(0);
    bytea* secret = isnull ? nullptr : guard([d] { return DatumGetByteaPP(d); });
    if (secret == nullptr || VARSIZE_ANY_EXHDR(secret) != kSecretBytes)
        throw Error(SqlState::kObjectNotInPrerequisiteState, "pg_baton's wake-up secret is missing",
                    "Table baton.wakeup_key holds one row with a secret of 32 bytes.",
                    "As a superuser: TRUNCATE baton.wakeup_key; INSERT INTO baton.wakeup_key DEFAULT VALUES;");
    Secret read;
    std::memcpy(read.bytes, VARDATA_ANY(secret), kSecretBytes);
    read.relid = guard([] { return relations::relid("wakeup_key"); });
    const unsigned char* relay[1] = {reinterpret_cast<const unsigned char*>(kRelayMessage)};
    int relay_len[1] = {static_cast<int>(sizeof kRelayMessage - 1)};
    if (!guard([&read, &relay, &relay_len] { return hmac_name(read.bytes, kSecretBytes, relay, relay_len, 1, read.relay); }))
        throw Error(SqlState::kInternal, "could not compute the wake-up relay channel (HMAC-SHA-256 failed)");
    g_secret.set(read, read.relid);
    g_channels.forget_all();
}

// The channel of (tenant, target): the HMAC of tenant || target.
void compute(const Secret& secret, const pg_uuid_t* tenant, const char* target, int target_len,
             char (&out)[kChannelBytes]) {
    const unsigned char* parts[2] = {tenant->data, reinterpret_cast<const unsigned char*>(target)};
    int lens[2] = {UUID_LEN, target_len};
    if (!guard([&secret, &parts, &lens, &out] { return hmac_name(secret.bytes, kSecretBytes, parts, lens, 2, out); }))
        throw Error(SqlState::kInternal, "could not compute a wake-up channel (HMAC-SHA-256 failed)");
}

constexpr char kHex[] = "0123456789abcdef";

}  // namespace

bool hmac_name(const unsigned char* secret, int secret_len, const unsigned char* const* parts, const int* lens,
               int nparts, char (&out)[kChannelBytes]) {
    unsigned char digest[PG_SHA256_DIGEST_LENGTH];
    pg_hmac_ctx* ctx = pg_hmac_create(PG_SHA256);
    if (ctx == nullptr) return false;
    bool done = pg_hmac_init(ctx, secret, secret_len) == 0;
    for (int i = 0; done && i < nparts; i++) done = pg_hmac_update(ctx, parts[i], lens[i]) == 0;
    done = done && pg_hmac_final(ctx, digest, sizeof digest) == 0;
    pg_hmac_free(ctx);
    if (!done) return false;
    std::memcpy(out, "baton_", 6);
    for (int i = 0; i < kDigestBytes; i++) {
        out[6 + 2 * i] = kHex[digest[i] >> 4];
        out[7 + 2 * i] = kHex[digest[i] & 0xF];
    }
    out[kChannelBytes - 1] = '\0';
    return true;
}

bool is_channel_name(const char* name) {
    if (std::strncmp(name, "baton_", 6) != 0) return false;
    for (int i = 6; i < kChannelBytes - 1; i++)
        if (std::strchr(kHex, name[i]) == nullptr || name[i] == '\0') return false;
    return name[kChannelBytes - 1] == '\0';
}

void channel(const pg_uuid_t* tenant, const text* target, char (&out)[kChannelBytes]) {
    if (g_secret.get() == nullptr) read_secret();
    const Secret secret = *g_secret.get();
    const char* chars = VARDATA_ANY(target);
    int len = static_cast<int>(VARSIZE_ANY_EXHDR(target));
    ChannelKey key;
    if (!ChannelKey::make(&key, tenant, chars, len)) {
        compute(secret, tenant, chars, len, out);
        return;
    }
    if (const Channel* kept = g_channels.find(key)) {
        std::memcpy(out, kept->name, kChannelBytes);
        return;
    }
    compute(secret, tenant, chars, len, out);
    Oid relid = secret.relid;
    guard([&key, relid, &out] {
        Channel* c = g_channels.enter(key);
        c->secret_relid = relid;
        std::memcpy(c->name, out, kChannelBytes);
    });
}

void enqueued(const pg_uuid_t* tenant, const text* target) {
    if (!settings::notify) return;
    // Asked first: its catalog reads may accept an invalidation that forgets the secret.
    bool distributed = citus::distributed();
    char name[kChannelBytes];
    channel(tenant, target, name);
    char relay[kChannelBytes] = "";
    if (distributed) std::memcpy(relay, g_secret.get()->relay, kChannelBytes);  // read by channel()
    guard([&name, &relay] {
        Async_Notify(name, nullptr);
        if (relay[0] != '\0') Async_Notify(relay, name);
    });
}

}  // namespace baton::pg::notify
