// Per-backend caches over dynahash (see cache.hpp).
#include <cstring>

#include "pg/runtime/cache.hpp"

namespace baton::pg::cache {

// The table in its own memory context under CacheMemoryContext (TopMemoryContext before
// the relation cache exists; dynahash makes the context a child of the one given), subscribed to the invalidations when any can make it
// forget something.
void Table::create() {
    HASHCTL info;
    std::memset(&info, 0, sizeof info);
    info.keysize = keysize_;
    info.entrysize = slotsize_;
    info.hcxt = CacheMemoryContext != nullptr ? CacheMemoryContext : TopMemoryContext;
    int flags = HASH_ELEM | HASH_CONTEXT | HASH_FUNCTION;
    if (hash_ != nullptr) {
        info.hash = hash_;
        info.match = match_;
        flags |= HASH_COMPARE;
    } else {
        info.hash = words_hash;  // compared as bytes (memcmp), dynahash's default
    }
    htab_ = hash_create(name_, cap_ < 64 ? cap_ : 64, &info, flags);
    if (forgets_ != Forgets::kNothing) invalidation::subscribe(this);
}

// A key hashed as its bytes: a word at a time when its size is a multiple of four (a
// uuid, an oid, a pointer, an int64), then mixed once, cheaper than hash_bytes()
// (HASH_BLOBS' hash for any size but four) for the short keys the hot paths look up
// on every call.
uint32 Table::words_hash(const void* key, Size keysize) {
    if (keysize % sizeof(uint32) != 0) return hash_bytes(static_cast<const unsigned char*>(key), static_cast<int>(keysize));
    const char* bytes = static_cast<const char*>(key);
    uint32 h = static_cast<uint32>(keysize);
    for (Size i = 0; i < keysize; i += sizeof(uint32)) {
        uint32 word;
        std::memcpy(&word, bytes + i, sizeof word);
        h = pg_rotate_left32(h, 5) ^ word;
    }
    return murmurhash32(h);
}

// At the cap, a new key empties the table first: its memory goes back with the context.
void* Table::enter_slot(const void* key, std::uint64_t generation) {
    if (htab_ == nullptr) {
        create();
    } else if (hash_get_num_entries(htab_) >= cap_ && hash_search(htab_, key, HASH_FIND, nullptr) == nullptr) {
        HTAB* full = htab_;
        htab_ = nullptr;
        hash_destroy(full);
        create();
    }
    bool found = false;
    void* slot = hash_search(htab_, key, HASH_ENTER, &found);
    if (!found) std::memset(static_cast<char*>(slot) + keysize_, 0, slotsize_ - keysize_);
    generation_of(slot) = generation;
    return slot;
}

void Table::remove_slot(const void* key) {
    if (htab_ != nullptr) (void)hash_search(htab_, key, HASH_REMOVE, nullptr);
}

// Marks forgotten what the invalidation touches; frees nothing (see cache.hpp).
void Table::forget_relation(invalidation::Subscriber* self, Oid relid) {
    Table* t = static_cast<Table*>(self);
    if (relid == InvalidOid || t->forgets_ == Forgets::kEverything || t->depends_ == nullptr) {
        t->forget_all();  // even when empty: a generation taken before a read moves
        return;
    }
    if (t->htab_ == nullptr || hash_get_num_entries(t->htab_) == 0) return;
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, t->htab_);
    while (void* slot = hash_seq_search(&scan))
        if (t->depends_(slot, relid)) t->generation_of(slot) = 0;
}

}  // namespace baton::pg::cache
