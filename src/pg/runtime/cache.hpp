// Per-backend caches, kept across calls and transactions and forgotten by
// pg/runtime/invalidation: Map, a hash table of plain entries over Postgres' dynahash,
// and Value, one kept value. Each subscribes itself to the invalidations when it first
// keeps something (before that it has nothing to forget); _PG_init lists none of them.
//
// Both are meant as static objects: their constructors are constexpr, so a global runs
// no code when the library loads, and nothing in them has a destructor. A Map's entries
// live in the table's own memory context (a child of CacheMemoryContext, made on first
// use), and hold only plain data: no C++ object with a destructor is ever kept there.
//
// An invalidation never frees memory: it only marks entries (or the value) forgotten,
// so a pointer a caller holds across a lock (which may run the callbacks) stays
// readable; the caller looks again after the lock to learn whether it still stands.
#pragma once

#include <cstddef>
#include <cstring>
#include <cstdint>
#include <type_traits>

#include "pg/runtime/invalidation.hpp"
#include "pg/runtime/postgres.hpp"

namespace baton::pg::cache {

// What an invalidation makes a cache forget.
enum class Forgets {
    kNothing,     // nothing: the cache checks its entries itself (a transaction, a relfile)
    kEverything,  // every entry, whatever relation the invalidation names
    kDependents,  // the entries that depend on the relation named (Map: its Depends;
                  // Value: the relid given to set()); everything on a reset (InvalidOid)
};

// The part of Map that does not depend on its types (cache.cpp).
class Table : protected invalidation::Subscriber {
public:
    constexpr Table(const char* name, Size keysize, Size slotsize, Size generation_at, long cap, Forgets forgets,
                    HashValueFunc hash, HashCompareFunc match, bool (*depends)(const void* slot, Oid relid))
        : invalidation::Subscriber{forget_relation, nullptr, false},
          name_(name),
          keysize_(keysize),
          slotsize_(slotsize),
          generation_at_(generation_at),
          cap_(cap),
          forgets_(forgets),
          hash_(hash),
          match_(match),
          depends_(depends) {}

    // The current generation: entries kept under an older one are forgotten. Taken
    // before a read whose answer enter() keeps under it, it subscribes the table first,
    // so that an invalidation during the read moves it.
    std::uint64_t generation() {
        if (forgets_ != Forgets::kNothing) invalidation::subscribe(this);
        return generation_;
    }
    // Forgets every entry (without freeing: see above).
    void forget_all() { generation_++; }

protected:
    std::uint64_t generation_now() const { return generation_; }
    // The slot of key kept under `generation`, nullptr when there is none. Raises no error.
    void* find_slot(const void* key, std::uint64_t generation) const {
        if (htab_ == nullptr) return nullptr;
        void* slot = hash_search(htab_, key, HASH_FIND, nullptr);
        return slot != nullptr && generation_of(slot) == generation ? slot : nullptr;
    }
    // The slot of key, made if absent (its value zeroed), kept under `generation`.
    // Postgres calls only (out of memory raises an error).
    void* enter_slot(const void* key, std::uint64_t generation);
    // Drops the slot of key, if any. Raises no error.
    void remove_slot(const void* key);

private:
    std::uint64_t& generation_of(void* slot) const {
        return *reinterpret_cast<std::uint64_t*>(static_cast<char*>(slot) + generation_at_);
    }
    void create();
    static uint32 words_hash(const void* key, Size keysize);
    static void forget_relation(invalidation::Subscriber* self, Oid relid);

    const char* name_;
    Size keysize_;
    Size slotsize_;
    Size generation_at_;
    long cap_;
    Forgets forgets_;
    HashValueFunc hash_;      // nullptr: the key's bytes (words_hash(), compared by memcmp)
    HashCompareFunc match_;   // with hash_
    bool (*depends_)(const void* slot, Oid relid);
    HTAB* htab_ = nullptr;    // made on first enter
    std::uint64_t generation_ = 1;  // 0 marks a slot forgotten by its relation
};

// A key hashed and compared as its bytes (Table::words_hash(), memcmp): a plain struct
// whose padding is zeroed, or a scalar.
struct Blobs {};

// A key of a tenant and a target's bytes (at most MaxBytes), hashed and compared up to
// target_len (the rest of `target` is never read); its own Hashing. make() returns false
// for a target longer than MaxBytes, which the caller does not keep.
template <int MaxBytes>
struct TenantTarget {
    pg_uuid_t tenant;
    int target_len;
    char target[MaxBytes];

    static bool make(TenantTarget* key, const pg_uuid_t* tenant, const char* bytes, int len) {
        if (len > MaxBytes) return false;
        key->tenant = *tenant;
        key->target_len = len;
        std::memcpy(key->target, bytes, len);
        return true;
    }
    static uint32 hash(const TenantTarget& k) {
        return hash_bytes(reinterpret_cast<const unsigned char*>(&k), offsetof(TenantTarget, target) + k.target_len);
    }
    static bool equal(const TenantTarget& a, const TenantTarget& b) {
        return a.target_len == b.target_len && std::memcmp(&a, &b, offsetof(TenantTarget, target) + a.target_len) == 0;
    }
};

// A hash table of Value by Key, at most `cap` entries: reaching the cap empties it (a
// backend that serves millions of tenants keeps the last ones it met, not all). Key and
// Value are plain data. Hashing is Blobs, or a type with
//   static uint32 hash(const Key&); static bool equal(const Key&, const Key&);
// for keys compared by part of their bytes (a length and the bytes it counts).
// Depends(key, value, relid), for Forgets::kDependents: the entry depends on relid.
template <typename Key, typename Value, typename Hashing = Blobs,
          bool (*Depends)(const Key&, const Value&, Oid) = nullptr>
class Map : public Table {
    struct Slot {
        Key key;  // first: dynahash's key
        std::uint64_t generation;
        Value value;
    };
    static_assert(std::is_trivially_copyable_v<Key> && std::is_trivially_destructible_v<Key>, "plain keys only");
    static_assert(std::is_trivially_copyable_v<Value> && std::is_trivially_destructible_v<Value>,
                  "plain values only: dynahash frees an entry without running a destructor");
    static_assert(std::is_standard_layout_v<Slot>, "plain keys and values only");

    static uint32 hash(const void* key, Size) { return Hashing::hash(*static_cast<const Key*>(key)); }
    static int match(const void* a, const void* b, Size) {
        return Hashing::equal(*static_cast<const Key*>(a), *static_cast<const Key*>(b)) ? 0 : 1;
    }
    static bool depends(const void* slot, Oid relid) {
        const Slot* s = static_cast<const Slot*>(slot);
        return Depends(s->key, s->value, relid);
    }
    static constexpr HashValueFunc hash_function() {
        if constexpr (std::is_same_v<Hashing, Blobs>) return nullptr;
        else return &Map::hash;
    }
    static constexpr HashCompareFunc match_function() {
        if constexpr (std::is_same_v<Hashing, Blobs>) return nullptr;
        else return &Map::match;
    }
    static constexpr bool (*depends_function())(const void*, Oid) {
        if constexpr (Depends == nullptr) return nullptr;
        else return &Map::depends;
    }

public:
    constexpr Map(const char* name, long cap, Forgets forgets)
        : Table(name, sizeof(Key), sizeof(Slot), offsetof(Slot, generation), cap, forgets,
                hash_function(), match_function(), depends_function()) {}

    // The value kept for key, nullptr when there is none (or it was forgotten). Raises
    // no error. Valid until the next enter() (the cap may empty the table).
    Value* find(const Key& key) { return find(key, generation_now()); }
    // The value kept for key under `generation` (one taken earlier): nullptr when an
    // invalidation came since.
    Value* find(const Key& key, std::uint64_t generation) const {
        Slot* s = static_cast<Slot*>(find_slot(&key, generation));
        return s != nullptr ? &s->value : nullptr;
    }
    // The value of key, to fill in: the kept one, or a new one zeroed. Postgres calls
    // only. Valid until the next enter().
    Value* enter(const Key& key) { return enter(key, generation_now()); }
    // The same, kept under `generation`: when an invalidation came since it was taken,
    // the entry is forgotten already.
    Value* enter(const Key& key, std::uint64_t generation) {
        return &static_cast<Slot*>(enter_slot(&key, generation))->value;
    }
    // Drops key's entry. Raises no error.
    void remove(const Key& key) { remove_slot(&key); }
};

// One kept value: unknown at first and after the invalidation it depends on.
template <typename T>
class Value : invalidation::Subscriber {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>, "plain values only");

public:
    constexpr Value() : invalidation::Subscriber{forget_relation, nullptr, false} {}

    // The kept value, nullptr when unknown.
    T* get() { return known_ ? &value_ : nullptr; }
    // Keeps value until the next invalidation, whatever it names. Raises no error.
    T& set(const T& value) { return set(value, InvalidOid); }
    // Keeps value until an invalidation of relid, or of everything (InvalidOid: any
    // invalidation). Raises no error.
    T& set(const T& value, Oid relid) {
        invalidation::subscribe(this);
        value_ = value;
        relid_ = relid;
        known_ = true;
        return value_;
    }
    // Forgets the value now.
    void forget() { known_ = false; }

private:
    static void forget_relation(invalidation::Subscriber* self, Oid relid) {
        Value* v = static_cast<Value*>(self);
        if (relid == InvalidOid || !OidIsValid(v->relid_) || relid == v->relid_) v->known_ = false;
    }

    T value_{};
    Oid relid_ = InvalidOid;
    bool known_ = false;
};

}  // namespace baton::pg::cache
