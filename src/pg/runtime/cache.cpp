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
    int flags = HASH_ELEM | HASH_CONTEXT;
    if (hash_ != nullptr) {
        info.hash = hash_;
        info.match = match_;
        flags |= HASH_FUNCTION | HASH_COMPARE;
    } else {
        flags |= HASH_BLOBS;
    }
    htab_ = hash_create(name_, cap_ < 64 ? cap_ : 64, &info, flags);
    if (forgets_ != Forgets::kNothing) invalidation::subscribe(this);
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
