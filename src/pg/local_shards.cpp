// This node's own shards of pg_baton's tables (see local_shards.hpp).
#include "pg/local_shards.hpp"

namespace baton::pg::local_shards {

namespace {

KeptPlan g_placements = {
    "SELECT lp.worker, lp.table_name, lp.shard FROM " BATON_LOCAL_PLACEMENTS " ORDER BY lp.shard", 0, {}, nullptr};

}  // namespace

std::string Placements::relation(std::string_view table) const {
    std::string sql;
    for (const auto& [name, shard] : shards) {
        if (name != table) continue;
        sql += sql.empty() ? "(SELECT * FROM " : " UNION ALL SELECT * FROM ";
        sql += shard;
    }
    return sql.empty() ? sql : sql + ")";
}

Placements read(Spi& spi) {
    Placements here;
    std::uint64_t rows = spi.run(g_placements, nullptr, nullptr);
    for (std::uint64_t r = 0; r < rows; r++) {
        here.worker = spi.bool_at(r, 1);
        const char* table = spi.cstring_at(r, 2);
        const char* shard = spi.cstring_at(r, 3);
        if (table != nullptr && shard != nullptr) here.shards.emplace_back(table, shard);
    }
    return here;
}

}  // namespace baton::pg::local_shards
