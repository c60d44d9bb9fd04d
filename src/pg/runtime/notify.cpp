// The wake-up channels and the NOTIFY an enqueue sends (see notify.hpp).
#include <cstring>

#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
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

// The secret, read once per backend (plain statics: no constructor runs). The key's
// table oid is kept too: an invalidation of that table (TRUNCATE, DROP, the extension
// re-created) forgets the secret.
bool g_have_secret = false;
Oid g_secret_relid = InvalidOid;
unsigned char g_secret[kSecretBytes];

// The last channel named, so that a batch of items for one target hashes once.
bool g_have_last = false;
pg_uuid_t g_last_tenant;
int g_last_target_len = 0;
char g_last_target[kTargetMaxBytes];
char g_last_channel[kChannelBytes];

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
    std::memcpy(g_secret, VARDATA_ANY(secret), kSecretBytes);
    g_secret_relid = guard([] { return relations::relid("wakeup_key"); });
    g_have_secret = true;
}

// HMAC-SHA-256(secret, tenant || target), its first 16 bytes as hex after "baton_".
void compute(const pg_uuid_t* tenant, const char* target, int target_len, char (&out)[kChannelBytes]) {
    unsigned char digest[PG_SHA256_DIGEST_LENGTH];
    bool ok = guard([tenant, target, target_len, &digest] {
        pg_hmac_ctx* ctx = pg_hmac_create(PG_SHA256);
        if (ctx == nullptr) return false;
        bool done = pg_hmac_init(ctx, g_secret, kSecretBytes) == 0 &&
                    pg_hmac_update(ctx, tenant->data, UUID_LEN) == 0 &&
                    pg_hmac_update(ctx, reinterpret_cast<const uint8*>(target), target_len) == 0 &&
                    pg_hmac_final(ctx, digest, sizeof digest) == 0;
        pg_hmac_free(ctx);
        return done;
    });
    if (!ok) throw Error(SqlState::kInternal, "could not compute a wake-up channel (HMAC-SHA-256 failed)");
    static const char kHex[] = "0123456789abcdef";
    std::memcpy(out, "baton_", 6);
    for (int i = 0; i < kDigestBytes; i++) {
        out[6 + 2 * i] = kHex[digest[i] >> 4];
        out[7 + 2 * i] = kHex[digest[i] & 0xF];
    }
    out[kChannelBytes - 1] = '\0';
}

}  // namespace

void channel(const pg_uuid_t* tenant, const text* target, char (&out)[kChannelBytes]) {
    if (!g_have_secret) {
        g_have_last = false;
        read_secret();
    }
    const char* chars = VARDATA_ANY(target);
    int len = static_cast<int>(VARSIZE_ANY_EXHDR(target));
    bool same = g_have_last && len == g_last_target_len && std::memcmp(&g_last_tenant, tenant, UUID_LEN) == 0 &&
                std::memcmp(g_last_target, chars, len) == 0;
    if (!same) {
        compute(tenant, chars, len, g_last_channel);
        if (len <= kTargetMaxBytes) {
            std::memcpy(&g_last_tenant, tenant, UUID_LEN);
            std::memcpy(g_last_target, chars, len);
            g_last_target_len = len;
            g_have_last = true;
        } else {
            g_have_last = false;
        }
    }
    std::memcpy(out, g_last_channel, kChannelBytes);
}

void enqueued(const pg_uuid_t* tenant, const text* target) {
    if (!settings::notify) return;
    char name[kChannelBytes];
    channel(tenant, target, name);
    guard([&name] { Async_Notify(name, nullptr); });
}

void forget(Oid relid) {
    if (relid == InvalidOid || relid == g_secret_relid) {
        g_have_secret = false;
        g_have_last = false;
    }
}

}  // namespace baton::pg::notify
