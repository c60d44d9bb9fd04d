// Unit tests for classifying an in-flight exception into a report (src/core/report.*).
#include "core/report.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "core/error.hpp"
#include "state_of.hpp"

namespace baton {
namespace {

// Throws `thrown` and describes it from inside the catch block, as the boundary does.
template <typename T>
Report describe(T&& thrown) {
    Report r;
    try {
        throw std::forward<T>(thrown);
    } catch (...) {
        describe_current_exception(r);
    }
    return r;
}

// True when the first `cap` bytes of buf hold a terminator.
bool terminated(const char* buf, std::size_t cap) {
    return std::memchr(buf, '\0', cap) != nullptr;
}

// Strict structural UTF-8 check: every lead byte is followed by exactly its continuation
// bytes, and no sequence is cut short by the end of the string.
bool valid_utf8(const std::string& s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto b = static_cast<unsigned char>(s[i]);
        std::size_t len;
        if (b < 0x80)
            len = 1;
        else if ((b & 0xE0) == 0xC0)
            len = 2;
        else if ((b & 0xF0) == 0xE0)
            len = 3;
        else if ((b & 0xF8) == 0xF0)
            len = 4;
        else
            return false;  // a stray continuation byte or an invalid lead byte
        if (i + len > s.size())
            return false;
        for (std::size_t k = 1; k < len; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
                return false;
        i += len;
    }
    return true;
}

std::string repeat(const std::string& unit, std::size_t times) {
    std::string out;
    out.reserve(unit.size() * times);
    for (std::size_t i = 0; i < times; ++i)
        out += unit;
    return out;
}

// Checks one truncated field: terminated, valid UTF-8, a prefix of the source, and cut
// no more than one character short of the room available.
void expect_clean_cut(const char* field, const std::string& source, std::size_t char_bytes) {
    ASSERT_TRUE(terminated(field, Report::kTextMax));
    const std::string got(field);
    EXPECT_LT(got.size(), Report::kTextMax);
    EXPECT_GT(got.size() + char_bytes, Report::kTextMax - 1) << "cut more than one character";
    EXPECT_TRUE(valid_utf8(got)) << "cut inside a character at byte " << got.size();
    EXPECT_EQ(source.compare(0, got.size(), got), 0) << "not a prefix of the source";
}

// ---------------------------------------------------------------- classification

TEST(DescribeException, BatonErrorKeepsStateAndTexts) {
    Report r = describe(Error(SqlState::kLeaseLost, "lease lost on delivery 42",
                              "generation 3 no longer holds the row", "claim it again"));
    EXPECT_EQ(r.state, SqlState::kLeaseLost);
    EXPECT_STREQ(r.message, "lease lost on delivery 42");
    EXPECT_STREQ(r.detail, "generation 3 no longer holds the row");
    EXPECT_STREQ(r.hint, "claim it again");
}

TEST(DescribeException, BatonErrorKeepsEveryState) {
    for (int i = 0; i <= static_cast<int>(SqlState::kInternal); ++i) {
        const auto s = static_cast<SqlState>(i);
        Report r = describe(Error(s, "m"));
        EXPECT_EQ(r.state, s) << sqlstate_code(s);
        EXPECT_STREQ(r.message, "m");
        EXPECT_STREQ(r.detail, "");
        EXPECT_STREQ(r.hint, "");
    }
}

TEST(DescribeException, BadAllocIsOutOfMemory) {
    Report r = describe(std::bad_alloc());
    EXPECT_EQ(r.state, SqlState::kOutOfMemory);
    EXPECT_STRNE(r.message, "");
    EXPECT_STREQ(r.hint, "");
}

TEST(DescribeException, DerivedBadAllocIsOutOfMemory) {
    Report r = describe(std::bad_array_new_length());
    EXPECT_EQ(r.state, SqlState::kOutOfMemory);
}

TEST(DescribeException, StdExceptionIsInternalWithWhatAsDetail) {
    Report r = describe(std::runtime_error("vector index 7 out of range"));
    EXPECT_EQ(r.state, SqlState::kInternal);
    EXPECT_STRNE(r.message, "");
    EXPECT_STRNE(r.message, "vector index 7 out of range");
    EXPECT_STREQ(r.detail, "vector index 7 out of range");
    EXPECT_STREQ(r.hint, "");

    Report l = describe(std::logic_error("broken invariant"));
    EXPECT_EQ(l.state, SqlState::kInternal);
    EXPECT_STREQ(l.detail, "broken invariant");
}

TEST(DescribeException, ThrownIntIsInternal) {
    Report r = describe(42);
    EXPECT_EQ(r.state, SqlState::kInternal);
    EXPECT_STRNE(r.message, "");
    EXPECT_STRNE(r.detail, "");
    EXPECT_STREQ(r.hint, "");
}

TEST(DescribeException, ThrownCStringIsInternal) {
    Report r = describe("not an exception object");
    EXPECT_EQ(r.state, SqlState::kInternal);
    EXPECT_STRNE(r.message, "");
}

// A Report reused after an earlier error must not keep any of its old texts.
TEST(DescribeException, ReusedReportLeavesNoStaleText) {
    for (int kind = 0; kind < 4; ++kind) {
        Report r;
        r.state = SqlState::kDedupConflict;
        std::memset(r.message, 'Q', sizeof r.message);  // deliberately unterminated
        std::memset(r.detail, 'Q', sizeof r.detail);
        std::memset(r.hint, 'Q', sizeof r.hint);
        try {
            switch (kind) {
                case 0:
                    throw Error(SqlState::kNotFound, "no such delivery");
                case 1:
                    throw std::bad_alloc();
                case 2:
                    throw std::runtime_error("boom");
                default:
                    throw 7;
            }
        } catch (...) {
            describe_current_exception(r);
        }
        SCOPED_TRACE(kind);
        ASSERT_TRUE(terminated(r.message, sizeof r.message));
        ASSERT_TRUE(terminated(r.detail, sizeof r.detail));
        ASSERT_TRUE(terminated(r.hint, sizeof r.hint));
        EXPECT_EQ(std::string(r.message).find('Q'), std::string::npos) << r.message;
        EXPECT_EQ(std::string(r.detail).find('Q'), std::string::npos) << r.detail;
        EXPECT_STREQ(r.hint, "");
        EXPECT_NE(r.state, SqlState::kDedupConflict);
    }
}

// ---------------------------------------------------------------- truncation

TEST(DescribeException, LongAsciiTextsAreCutToTheBuffer) {
    const std::string m(5000, 'm'), d(5000, 'd'), h(5000, 'h');
    Report r = describe(Error(SqlState::kCorruptHistory, m, d, h));
    EXPECT_EQ(r.state, SqlState::kCorruptHistory);
    EXPECT_EQ(std::string(r.message), m.substr(0, Report::kTextMax - 1));
    EXPECT_EQ(std::string(r.detail), d.substr(0, Report::kTextMax - 1));
    EXPECT_EQ(std::string(r.hint), h.substr(0, Report::kTextMax - 1));
}

TEST(DescribeException, LongUtf8TextsAreCutAtACharacterBoundary) {
    const std::string e_acute = "\xC3\xA9";  // é, two bytes
    const std::string text = repeat(e_acute, 2500);
    ASSERT_EQ(text.size(), 5000u);
    Report r = describe(Error(SqlState::kInvalidState, text, text, text));
    EXPECT_EQ(r.state, SqlState::kInvalidState);
    expect_clean_cut(r.message, text, 2);
    expect_clean_cut(r.detail, text, 2);
    expect_clean_cut(r.hint, text, 2);
}

TEST(DescribeException, LongWhatIsCutAtACharacterBoundary) {
    const std::string text = repeat("\xC3\xA9", 2500);
    Report r = describe(std::runtime_error(text));
    EXPECT_EQ(r.state, SqlState::kInternal);
    expect_clean_cut(r.detail, text, 2);
}

// Every alignment of 2-, 3- and 4-byte characters against the buffer end.
TEST(DescribeException, CutIsCleanForEveryAlignmentAndWidth) {
    const std::string units[] = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"};  // é € 😀
    for (const std::string& unit : units) {
        for (std::size_t lead = 0; lead < 4; ++lead) {
            const std::string text = std::string(lead, 'a') + repeat(unit, 5000 / unit.size());
            SCOPED_TRACE("width " + std::to_string(unit.size()) + ", lead " + std::to_string(lead));
            Report r = describe(Error(SqlState::kInternal, text));
            expect_clean_cut(r.message, text, unit.size());
        }
    }
}

// ---------------------------------------------------------------- copy_text

TEST(CopyText, CapacityZeroWritesNothing) {
    char buf[4] = {'#', '#', '#', '#'};
    copy_text(buf, 0, "abc");
    EXPECT_EQ(buf[0], '#');
    copy_text(nullptr, 0, "abc");  // no byte may be touched, so no buffer is needed
}

TEST(CopyText, CapacityOneGivesTheEmptyString) {
    char buf[4] = {'#', '#', '#', '#'};
    copy_text(buf, 1, "abc");
    EXPECT_EQ(buf[0], '\0');
    EXPECT_EQ(buf[1], '#');
}

TEST(CopyText, NullSourceGivesTheEmptyString) {
    char buf[4] = {'#', '#', '#', '#'};
    copy_text(buf, sizeof buf, nullptr);
    EXPECT_EQ(buf[0], '\0');
}

TEST(CopyText, FitsExactlyOrCutsByOne) {
    char buf[8];
    std::memset(buf, '#', sizeof buf);
    copy_text(buf, 4, "abc");
    EXPECT_STREQ(buf, "abc");
    std::memset(buf, '#', sizeof buf);
    copy_text(buf, 4, "abcd");
    EXPECT_STREQ(buf, "abc");
    EXPECT_EQ(buf[4], '#');
    copy_text(buf, 4, "");
    EXPECT_STREQ(buf, "");
}

TEST(CopyText, NeverWritesPastCapacity) {
    char buf[64];
    std::memset(buf, '#', sizeof buf);
    copy_text(buf, 10, std::string(100, 'x').c_str());
    EXPECT_EQ(std::string(buf), std::string(9, 'x'));
    for (std::size_t i = 10; i < sizeof buf; ++i)
        EXPECT_EQ(buf[i], '#') << "byte " << i;
}

TEST(CopyText, NeverSplitsACharacter) {
    char buf[8];
    copy_text(buf, 2, "\xC3\xA9");  // é needs 2 bytes + terminator
    EXPECT_STREQ(buf, "");
    copy_text(buf, 3, "\xC3\xA9");
    EXPECT_STREQ(buf, "\xC3\xA9");
    copy_text(buf, 3, "a\xC3\xA9");
    EXPECT_STREQ(buf, "a");
    copy_text(buf, 3, "\xE2\x82\xAC");  // € needs 3 bytes + terminator
    EXPECT_STREQ(buf, "");
    copy_text(buf, 4, "\xE2\x82\xAC");
    EXPECT_STREQ(buf, "\xE2\x82\xAC");
    copy_text(buf, 4, "\xF0\x9F\x98\x80");  // 😀 needs 4 bytes + terminator
    EXPECT_STREQ(buf, "");
    copy_text(buf, 5, "\xF0\x9F\x98\x80");
    EXPECT_STREQ(buf, "\xF0\x9F\x98\x80");
    copy_text(buf, 6, "ab\xF0\x9F\x98\x80");
    EXPECT_STREQ(buf, "ab");
}

TEST(Describe, KeepsTheErrorsPlaceAndNoneForOtherExceptions) {
    const Report r = describe(Error(SqlState::kNotFound, "no such run", {}, {}, Where{"src/api/runs.cpp", 42, "get"}));
    EXPECT_STREQ(r.file, "src/api/runs.cpp");
    EXPECT_EQ(r.line, 42);
    EXPECT_STREQ(r.function, "get");
    const Report o = describe(std::runtime_error("boom"));
    EXPECT_EQ(o.file, nullptr);
    EXPECT_EQ(o.function, nullptr);
    EXPECT_EQ(o.line, 0);
}

TEST(CopyText, DescribeIsNoexcept) {
    static_assert(noexcept(describe_current_exception(std::declval<Report&>())));
    static_assert(noexcept(copy_text(nullptr, 0, nullptr)));
}

}  // namespace
}  // namespace baton
