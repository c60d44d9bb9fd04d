// Unit tests for the extension's versions (src/core/version.*).
#include "core/version.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"

namespace baton::version {
namespace {

TEST(Version, ComparesPartsAsNumbers) {
    EXPECT_LT(compare("0.9.0", "0.10.0"), 0);
    EXPECT_GT(compare("0.10.0", "0.9.0"), 0);
    EXPECT_LT(compare("0.11.0", "0.12.0"), 0);
    EXPECT_LT(compare("0.11.9", "1.0.0"), 0);
    EXPECT_EQ(compare("0.11.0", "0.11.0"), 0);
    EXPECT_EQ(compare("0.010.0", "0.10.0"), 0);
}

TEST(Version, MissingPartsCountAsZero) {
    EXPECT_EQ(compare("1.0", "1.0.0"), 0);
    EXPECT_LT(compare("1.0", "1.0.1"), 0);
    EXPECT_EQ(compare("", "0"), 0);
}

TEST(Version, TextAfterTheDigitsOrdersEqualNumbers) {
    EXPECT_LT(compare("1.0.0", "1.0.0rc1"), 0);
    EXPECT_LT(compare("1.0.0beta", "1.0.0rc1"), 0);
    EXPECT_GT(compare("1.0.1beta", "1.0.0rc1"), 0);
}

TEST(Version, OlderSchemaRefusedNamingBothVersions) {
    EXPECT_NO_THROW(require_not_older("0.11.0", "0.11.0"));
    EXPECT_NO_THROW(require_not_older("0.12.0", "0.11.0"));
    try {
        require_not_older("0.9.0", "0.11.0");
        FAIL() << "an older schema passed";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.code()), "55000");
        EXPECT_EQ(e.message(), "extension \"pg_baton\" is installed at version 0.9.0, older than its library's version 0.11.0");
        EXPECT_EQ(e.hint(), "Run ALTER EXTENSION pg_baton UPDATE in this database.");
        EXPECT_FALSE(e.detail().empty());
    }
}

}  // namespace
}  // namespace baton::version
