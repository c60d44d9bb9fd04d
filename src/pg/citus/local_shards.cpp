// This node's own shards of pg_baton's tables (see local_shards.hpp).
#include <string>
#include <utility>
#include <vector>

#include "pg/citus/citus.hpp"
#include "pg/citus/local_shards.hpp"

namespace baton::pg::local_shards {

namespace {

KeptPlan g_placements = {
    "SELECT lp.worker, lp.table_name, lp.shard FROM " BATON_LOCAL_PLACEMENTS " ORDER BY lp.shard", 0, {}, nullptr};

// This node's placements, copied out of SPI memory.
struct Placements {
    bool worker = false;
    std::vector<std::pair<std::string, std::string>> shards;  // (table_name, shard), by name
};

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

// The node's shards of `table` as one relation for a FROM clause, "(SELECT * FROM
// baton.deliveries_102008 UNION ALL ...) "; "" when it holds none.
std::string relation(const Placements& here, std::string_view table) {
    std::string sql;
    for (const auto& [name, shard] : here.shards) {
        if (name != table) continue;
        sql += sql.empty() ? "(SELECT * FROM " : " UNION ALL SELECT * FROM ";
        sql += shard;
    }
    return sql.empty() ? sql : sql + ") ";
}

}  // namespace

bool run_on_own_shards(Spi& spi, const KeptPlan& plan, const Datum* values, std::initializer_list<std::string_view> tables,
                       std::uint64_t* rows) {
    if (!citus::distributed()) return false;
    Placements here = read(spi);
    if (!here.worker) return false;
    std::string sql = plan.sql;
    for (std::string_view table : tables) {
        std::string shards = relation(here, table);
        if (shards.empty()) {
            *rows = 0;
            return true;
        }
        std::string name = "baton." + std::string(table) + " ";
        for (std::size_t at = sql.find(name); at != std::string::npos; at = sql.find(name, at + shards.size()))
            sql.replace(at, name.size(), shards);
    }
    *rows = spi.run_once(sql.c_str(), plan.nargs, plan.argtypes, values);
    return true;
}

}  // namespace baton::pg::local_shards
