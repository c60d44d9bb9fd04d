// Unit tests for the strict JSON reader and writer (src/core/json.*).
#include "core/json.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "state_of.hpp"

namespace baton::json {

void PrintTo(Kind k, std::ostream* os) {
    *os << kind_name(k);
}

namespace {

using baton::test::error_of;
using baton::test::state_of;

constexpr std::optional<SqlState> k22023 = SqlState::kInvalidParameterValue;

// The SQLSTATE parse raised for a text, or nullopt when it accepted it.
std::optional<SqlState> parse_refusal(std::string_view text) {
    return state_of([&] { parse(text); });
}

// The detail of parse's refusal of a text; fails the test when it accepted it.
std::string parse_detail(std::string_view text) {
    auto e = error_of([&] { parse(text); });
    if (!e) {
        ADD_FAILURE() << "accepted: " << text;
        return {};
    }
    EXPECT_EQ(e->state(), SqlState::kInvalidParameterValue);
    EXPECT_EQ(e->message(), "invalid JSON text");
    return e->detail();
}

// The SQLSTATE write raised for a value, or nullopt when it wrote it.
std::optional<SqlState> write_refusal(const Value& v) {
    return state_of([&] { write(v); });
}

// n arrays, one inside the other.
std::string nested_arrays(int n) {
    return std::string(n, '[') + std::string(n, ']');
}

// n objects, one inside the other under key "k": {"k":{"k":{}}}.
std::string nested_objects(int n) {
    std::string s;
    for (int k = 1; k < n; ++k)
        s += "{\"k\":";
    s += "{}";
    s += std::string(n - 1, '}');
    return s;
}

// ---- scalars ---------------------------------------------------------------------------

TEST(JsonParse, Literals) {
    EXPECT_EQ(parse("null").kind, Kind::kNull);
    Value t = parse("true");
    EXPECT_EQ(t.kind, Kind::kBoolean);
    EXPECT_TRUE(t.b);
    Value f = parse("false");
    EXPECT_EQ(f.kind, Kind::kBoolean);
    EXPECT_FALSE(f.b);
}

TEST(JsonParse, LiteralsAreExact) {
    for (const char* text : {"nul", "nulll", "True", "FALSE", "NULL", "tru", "t", "f", "n", "truex",
                             "nan", "NaN", "Infinity", "-Infinity", "undefined"})
        EXPECT_EQ(parse_refusal(text), k22023) << text;
}

TEST(JsonParse, NumbersKeepTheirText) {
    for (const char* text : {"0", "-0", "1", "-1", "10", "123.456", "0.5", "-0.0", "1e5", "1E5",
                             "1e+5", "1e-5", "1.5E-300", "2.5e308", "-123456789.000e-0010",
                             "123456789012345678901234567890123456789012345678901234567890",
                             "1e99999999999", "0.00000000000000000000000000000000000000001"}) {
        Value v = parse(text);
        EXPECT_EQ(v.kind, Kind::kNumber) << text;
        EXPECT_EQ(v.text, text);
        EXPECT_EQ(write(v), text);
    }
}

TEST(JsonParse, MalformedNumbers) {
    for (const char* text : {"01",  "-01",   "00",    "007", "-",   "+1",   ".5",   "1.",
                             "-.5", "1.e5",  "1e",    "1e+", "1E-", "--1",  "0x10", "1_000",
                             "1 2", "1.2.3", "1e5e5", "- 1", "0.",  "01.5", "1ee5", "١"})
        EXPECT_EQ(parse_refusal(text), k22023) << text;
}

TEST(JsonParse, LeadingZeroDetail) {
    const std::string d = parse_detail("[01]");
    EXPECT_NE(d.find("leading zeros"), std::string::npos) << d;
    EXPECT_NE(d.find("byte offset 2"), std::string::npos) << d;
}

TEST(JsonParse, Strings) {
    EXPECT_EQ(parse("\"\"").text, "");
    EXPECT_EQ(parse("\"abc\"").text, "abc");
    EXPECT_EQ(parse("\"caf\xc3\xa9\"").text, "caf\xc3\xa9");
    EXPECT_EQ(parse("\"\xe2\x82\xac\"").text, "\xe2\x82\xac");
    EXPECT_EQ(parse("\"\xf0\x9f\x98\x80\"").text, "\xf0\x9f\x98\x80");
    EXPECT_EQ(parse("\"\xf4\x8f\xbf\xbf\"").text, "\xf4\x8f\xbf\xbf");  // U+10FFFF
    EXPECT_EQ(parse("\"\x7f\"").text, "\x7f");                          // DEL needs no escape
    EXPECT_EQ(parse("\"a'b\"").text, "a'b");
}

TEST(JsonParse, SimpleEscapes) {
    EXPECT_EQ(parse(R"("\"\\\/\b\f\n\r\t")").text, "\"\\/\b\f\n\r\t");
    EXPECT_EQ(parse(R"("a\nb")").text, "a\nb");
}

TEST(JsonParse, UnknownEscapesAreRefused) {
    for (const char* text :
         {R"("\a")", R"("\x41")", R"("\0")", R"("\U0041")", R"("\')", R"("\ ")", R"("\)", "\"\\"})
        EXPECT_EQ(parse_refusal(text), k22023) << text;
}

TEST(JsonParse, UnicodeEscapes) {
    EXPECT_EQ(parse(R"("\u0041")").text, "A");
    EXPECT_EQ(parse(R"("\u00e9")").text, "\xc3\xa9");
    EXPECT_EQ(parse(R"("\u00E9")").text, "\xc3\xa9");
    EXPECT_EQ(parse(R"("\u07ff")").text, "\xdf\xbf");
    EXPECT_EQ(parse(R"("\u0800")").text, "\xe0\xa0\x80");
    EXPECT_EQ(parse(R"("\u20AC")").text, "\xe2\x82\xac");
    EXPECT_EQ(parse(R"("\uffff")").text, "\xef\xbf\xbf");
    EXPECT_EQ(parse(R"("\u001f")").text, "\x1f");
    EXPECT_EQ(parse(R"("x\u0022y")").text, "x\"y");
}

TEST(JsonParse, SurrogatePairs) {
    EXPECT_EQ(parse(R"("\ud83d\ude00")").text, "\xf0\x9f\x98\x80");  // U+1F600
    EXPECT_EQ(parse(R"("\uD83D\uDE00")").text, "\xf0\x9f\x98\x80");
    EXPECT_EQ(parse(R"("\ud800\udc00")").text, "\xf0\x90\x80\x80");  // U+10000
    EXPECT_EQ(parse(R"("\udbff\udfff")").text, "\xf4\x8f\xbf\xbf");  // U+10FFFF
    EXPECT_EQ(parse(R"("a\ud834\udd1eb")").text,
              "a\xf0\x9d\x84\x9e"
              "b");
}

TEST(JsonParse, LoneSurrogatesAreRefused) {
    for (const char* text :
         {R"("\ud800")", R"("\udbff")", R"("\udc00")", R"("\udfff")", R"("\ud800x")",
          R"("\ud800\u0041")", R"("\ud800\ud800")", R"("\udc00\ud800")", R"("\ud800\n")",
          R"("\ud800\")", R"("\ud800\u")", R"("\ud800\udc0")", R"("\ud800\udc0g")"})
        EXPECT_EQ(parse_refusal(text), k22023) << text;
    EXPECT_NE(parse_detail(R"("\ud800")").find("surrogate"), std::string::npos);
    EXPECT_NE(parse_detail(R"("\udc00")").find("surrogate"), std::string::npos);
}

TEST(JsonParse, BadUnicodeEscapeDigits) {
    for (const char* text :
         {R"("\u")", R"("\u12")", R"("\u12G4")", R"("\u-123")", R"("\u 123")", R"("\u123")"})
        EXPECT_EQ(parse_refusal(text), k22023) << text;
}

TEST(JsonParse, NulEscapeIsRefusedAsInJsonb) {
    EXPECT_EQ(parse_refusal(R"("\u0000")"), k22023);
    EXPECT_EQ(parse_refusal(R"({"\u0000":1})"), k22023);
    EXPECT_NE(parse_detail(R"("a\u0000")").find("\\u0000"), std::string::npos);
}

TEST(JsonParse, ControlCharactersInStringsAreRefused) {
    for (int c = 0; c < 0x20; ++c) {
        std::string text = "\"a";
        text += static_cast<char>(c);
        text += "b\"";
        EXPECT_EQ(parse_refusal(text), k22023) << "byte " << c;
    }
    const std::string d = parse_detail("\"ab\ncd\"");
    EXPECT_NE(d.find("control character"), std::string::npos) << d;
    EXPECT_NE(d.find("byte offset 3"), std::string::npos) << d;
    EXPECT_NE(d.find("0x0a"), std::string::npos) << d;
}

TEST(JsonParse, InvalidUtf8IsRefused) {
    for (const char* text : {
             "\"\x80\"",              // lone continuation byte
             "\"\xbf\"",              //
             "\"\xc0\xaf\"",          // overlong '/'
             "\"\xc1\xbf\"",          // overlong
             "\"\xe0\x80\xaf\"",      // overlong 3-byte
             "\"\xe0\x9f\xbf\"",      // overlong 3-byte, top
             "\"\xf0\x80\x80\xaf\"",  // overlong 4-byte
             "\"\xf0\x8f\xbf\xbf\"",  // overlong 4-byte, top
             "\"\xed\xa0\x80\"",      // encoded high surrogate
             "\"\xed\xbf\xbf\"",      // encoded low surrogate
             "\"\xf4\x90\x80\x80\"",  // above U+10FFFF
             "\"\xf5\x80\x80\x80\"",  // never valid lead byte
             "\"\xff\"",              //
             "\"\xfe\"",              //
             "\"\xe2\x82\"",          // truncated 3-byte sequence
             "\"\xe2\x82",            // truncated at the end of the text
             "\"\xf0\x9f\x98\"",      // truncated 4-byte sequence
             "\"\xc3\"",              // truncated 2-byte sequence
             "\"\xc3\xc3\xa9\"",      // lead byte where a continuation belongs
         })
        EXPECT_EQ(parse_refusal(text), k22023) << text;
    EXPECT_NE(parse_detail("\"ab\x80\"").find("UTF-8"), std::string::npos);
}

TEST(JsonParse, BytesOutsideStringsMustBeJson) {
    EXPECT_EQ(parse_refusal("\xef\xbb\xbf{}"), k22023);  // a BOM
    EXPECT_EQ(parse_refusal("{}\xef\xbb\xbf"), k22023);
    EXPECT_EQ(parse_refusal("\xc3\xa9"), k22023);
    EXPECT_EQ(parse_refusal(std::string_view("\0", 1)), k22023);
    EXPECT_EQ(parse_refusal(std::string_view("[1,\0]", 5)), k22023);
    EXPECT_EQ(parse_refusal(std::string_view("\"a\0b\"", 5)), k22023);
    EXPECT_EQ(parse_refusal(std::string_view("{}\0", 3)), k22023);
}

// ---- structure -------------------------------------------------------------------------

TEST(JsonParse, ArraysAndObjects) {
    Value v = parse(R"({"a":[1,"two",true,null,{"b":[]}],"c":{},"":-2.5})");
    ASSERT_EQ(v.kind, Kind::kObject);
    ASSERT_EQ(v.members.size(), 3u);
    EXPECT_EQ(v.members[0].first, "a");
    EXPECT_EQ(v.members[1].first, "c");
    EXPECT_EQ(v.members[2].first, "");
    const Value& a = v.members[0].second;
    ASSERT_EQ(a.kind, Kind::kArray);
    ASSERT_EQ(a.items.size(), 5u);
    EXPECT_EQ(a.items[0].kind, Kind::kNumber);
    EXPECT_EQ(a.items[0].text, "1");
    EXPECT_EQ(a.items[1].kind, Kind::kString);
    EXPECT_EQ(a.items[1].text, "two");
    EXPECT_EQ(a.items[2].kind, Kind::kBoolean);
    EXPECT_EQ(a.items[3].kind, Kind::kNull);
    ASSERT_EQ(a.items[4].kind, Kind::kObject);
    const Value* b = find(a.items[4], "b");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->kind, Kind::kArray);
    EXPECT_TRUE(b->items.empty());
    EXPECT_EQ(v.members[1].second.kind, Kind::kObject);
    EXPECT_TRUE(v.members[1].second.members.empty());
    EXPECT_EQ(v.members[2].second.text, "-2.5");
}

TEST(JsonParse, Whitespace) {
    Value v = parse(" \t\r\n{ \"a\" : [ 1 , 2 ] ,\n\"b\"\t:\r{ } } \n");
    ASSERT_EQ(v.kind, Kind::kObject);
    EXPECT_EQ(write(v), R"({"a":[1,2],"b":{}})");
    EXPECT_EQ(parse(" [ ] ").items.size(), 0u);
    EXPECT_EQ(parse("\t1\t").text, "1");
}

TEST(JsonParse, OnlyRfcWhitespace) {
    for (const char* text : {"\f1", "1\f", "\v1", "[1,\v2]",
                             "\xc2\xa0"
                             "1",
                             "1\xc2\xa0"})
        EXPECT_EQ(parse_refusal(text), k22023) << text;
}

TEST(JsonParse, EmptyAndBlankTexts) {
    EXPECT_EQ(parse_refusal(""), k22023);
    EXPECT_EQ(parse_refusal("   "), k22023);
    EXPECT_EQ(parse_refusal("\n"), k22023);
    EXPECT_NE(parse_detail("").find("the end of the text"), std::string::npos);
}

TEST(JsonParse, TrailingCommasAreRefused) {
    for (const char* text : {"[1,]", "[1,2,]", "{\"a\":1,}", "[,]", "[,1]", "{,}", "{,\"a\":1}",
                             "[1,,2]", "{\"a\":1,,\"b\":2}", "[1 2]", "{\"a\":1 \"b\":2}"})
        EXPECT_EQ(parse_refusal(text), k22023) << text;
}

TEST(JsonParse, MalformedObjects) {
    for (const char* text :
         {"{", "}", "{\"a\"}", "{\"a\" 1}", "{\"a\":}", "{a:1}", "{'a':1}", "{1:1}", "{null:1}",
          "{\"a\"::1}", "{\"a\":1", "{\"a\":1]", "[1}", "[", "]", "[[]", "[]]", "{}}", "{\"a\",1}"})
        EXPECT_EQ(parse_refusal(text), k22023) << text;
}

TEST(JsonParse, OneValuePerText) {
    for (const char* text :
         {"1 2", "{}{}", "[][]", "null null", "\"a\"\"b\"", "{} x", "1,", "[1]]", "true false"})
        EXPECT_EQ(parse_refusal(text), k22023) << text;
}

TEST(JsonParse, NoCommentsNoSingleQuotes) {
    for (const char* text : {"// c\n1", "/* c */ 1", "1 // c", "# c\n1", "'a'", "['a']"})
        EXPECT_EQ(parse_refusal(text), k22023) << text;
}

TEST(JsonParse, EveryProperPrefixIsTruncated) {
    const std::string doc =
        "{\"a\":[1,-2.5e+3,\"x\\u00e9\\ud83d\\ude00y\\n\",true,false,null,{\"b\":{}}],"
        "\"c\":\"\xc3\xa9\"}";
    ASSERT_EQ(parse_refusal(doc), std::nullopt);
    for (std::size_t len = 0; len < doc.size(); ++len)
        EXPECT_EQ(parse_refusal(std::string_view(doc).substr(0, len)), k22023)
            << doc.substr(0, len);
}

TEST(JsonParse, DetailNamesTheOffsetAndWhatWasFound) {
    std::string d = parse_detail("[1,]");
    EXPECT_NE(d.find("byte offset 3"), std::string::npos) << d;
    EXPECT_NE(d.find("\"]\""), std::string::npos) << d;
    d = parse_detail("{\"a\" 1}");
    EXPECT_NE(d.find("\":\""), std::string::npos) << d;
    EXPECT_NE(d.find("byte offset 5"), std::string::npos) << d;
    d = parse_detail("[1");
    EXPECT_NE(d.find("the end of the text"), std::string::npos) << d;
    d = parse_detail("[\x01]");
    EXPECT_NE(d.find("byte 0x01"), std::string::npos) << d;
}

TEST(JsonParse, DuplicateKeysAreKeptAndTheLastWins) {
    Value v = parse(R"({"a":1,"b":2,"a":3})");
    ASSERT_EQ(v.members.size(), 3u);
    const Value* a = find(v, "a");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->text, "3");
    EXPECT_EQ(find(v, "b")->text, "2");
    EXPECT_EQ(write(v), R"({"a":1,"b":2,"a":3})");
}

TEST(JsonFind, MissingKeysAndNonObjects) {
    Value v = parse(R"({"a":null,"":1,"A":2})");
    ASSERT_NE(find(v, "a"), nullptr);
    EXPECT_EQ(find(v, "a")->kind, Kind::kNull);
    EXPECT_EQ(find(v, "b"), nullptr);
    EXPECT_EQ(find(v, "")->text, "1");
    EXPECT_EQ(find(v, "A")->text, "2");
    EXPECT_EQ(find(v, "a "), nullptr);
    EXPECT_EQ(find(parse("[\"a\"]"), "a"), nullptr);
    EXPECT_EQ(find(parse("\"a\""), "a"), nullptr);
    EXPECT_EQ(find(parse("{}"), "a"), nullptr);
    // Keys compare as decoded text.
    EXPECT_NE(find(parse(R"({"\u0061":1})"), "a"), nullptr);
}

// ---- depth -----------------------------------------------------------------------------

TEST(JsonDepth, TwoHundredLevelsAreAccepted) {
    EXPECT_EQ(parse_refusal(nested_arrays(kMaxDepth)), std::nullopt);
    EXPECT_EQ(parse_refusal(nested_objects(kMaxDepth)), std::nullopt);
    Value v = parse(nested_arrays(kMaxDepth));
    EXPECT_EQ(write(v), nested_arrays(kMaxDepth));
}

TEST(JsonDepth, TwoHundredAndOneAreRefused) {
    EXPECT_EQ(parse_refusal(nested_arrays(kMaxDepth + 1)), k22023);
    EXPECT_EQ(parse_refusal(nested_objects(kMaxDepth + 1)), k22023);
    const std::string d = parse_detail(nested_arrays(kMaxDepth + 1));
    EXPECT_NE(d.find("200"), std::string::npos) << d;
    EXPECT_NE(d.find("byte offset 200"), std::string::npos) << d;
}

TEST(JsonDepth, HugeNestingFailsWithoutOverflow) {
    EXPECT_EQ(parse_refusal(std::string(1000000, '[')), k22023);
    EXPECT_EQ(parse_refusal(nested_arrays(100000)), k22023);
    std::string objects;
    for (int k = 0; k < 100000; ++k)
        objects += "{\"a\":";
    EXPECT_EQ(parse_refusal(objects), k22023);
}

TEST(JsonDepth, ScalarsDoNotCount) {
    // 200 arrays around a string, number and empty object: the object is level 201.
    const std::string inner =
        std::string(kMaxDepth - 1, '[') + "[\"s\",1,null]" + std::string(kMaxDepth - 1, ']');
    EXPECT_EQ(parse_refusal(inner), std::nullopt);
    const std::string deeper = std::string(kMaxDepth, '[') + "{}" + std::string(kMaxDepth, ']');
    EXPECT_EQ(parse_refusal(deeper), k22023);
}

TEST(JsonDepth, WriteRefusesWhatParseWould) {
    Value v = make_array({});
    for (int k = 1; k < kMaxDepth; ++k)
        v = make_array({std::move(v)});
    EXPECT_EQ(write_refusal(v), std::nullopt);  // 200 levels
    v = make_object({{"k", std::move(v)}});
    EXPECT_EQ(write_refusal(v), k22023);  // 201 levels
}

// ---- writing ---------------------------------------------------------------------------

TEST(JsonWrite, Compact) {
    EXPECT_EQ(write(make_null()), "null");
    EXPECT_EQ(write(make_bool(true)), "true");
    EXPECT_EQ(write(make_bool(false)), "false");
    EXPECT_EQ(write(make_int(-42)), "-42");
    EXPECT_EQ(write(make_number("1.50e+10")), "1.50e+10");
    EXPECT_EQ(write(make_string("x")), "\"x\"");
    EXPECT_EQ(write(make_array({})), "[]");
    EXPECT_EQ(write(make_object({})), "{}");
    EXPECT_EQ(write(make_object({{"a", make_array({make_int(1), make_null()})},
                                 {"b", make_object({{"c", make_string("d")}})}})),
              R"({"a":[1,null],"b":{"c":"d"}})");
}

TEST(JsonWrite, StringEscapes) {
    EXPECT_EQ(write(make_string("\"\\/\b\f\n\r\t")), R"("\"\\/\b\f\n\r\t")");
    EXPECT_EQ(write(make_string("\x01\x1f\x7f")), "\"\\u0001\\u001f\x7f\"");
    EXPECT_EQ(write(make_string("caf\xc3\xa9 \xf0\x9f\x98\x80")),
              "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
    EXPECT_EQ(write(make_object({{"k\"\n", make_null()}})), R"({"k\"\n":null})");
}

TEST(JsonWrite, RefusesWhatItCannotWrite) {
    for (const char* text :
         {"", "01", "-", "1.", ".5", "abc", "NaN", "Infinity", " 1", "1 ", "+1", "0x1", "1e"})
        EXPECT_EQ(write_refusal(make_number(text)), k22023) << text;
    EXPECT_EQ(write_refusal(make_string("a\x80")), k22023);
    EXPECT_EQ(write_refusal(make_string("\xed\xa0\x80")), k22023);  // CESU-style surrogate
    EXPECT_EQ(write_refusal(make_string(std::string("a\0b", 3))), k22023);
    EXPECT_EQ(write_refusal(make_object({{std::string("\0", 1), make_null()}})), k22023);
    EXPECT_EQ(write_refusal(make_array({make_string("\xff")})), k22023);
    auto e = error_of([] { write(make_string("a\xc0")); });
    ASSERT_TRUE(e);
    EXPECT_NE(e->detail().find("UTF-8"), std::string::npos) << e->detail();
}

TEST(JsonRoundTrip, CompactTextsComeBackByteForByte) {
    for (const char* text :
         {"null", "true", "false", "0", "-0", "1.5e-7", "\"\"", "[]", "{}", R"([[],[[]],{}])",
          R"({"a":1,"b":[true,false,null],"c":{"d":"e"}})", R"(["\"\\\b\f\n\r\t\u0001"])",
          R"({"":"","a":{"":{}}})", "123456789012345678901234567890.123456789e-123456",
          "{\"\xc3\xa9\":\"\xf0\x9f\x98\x80\"}", R"({"a":1,"a":2})"})
        EXPECT_EQ(write(parse(text)), text);
}

TEST(JsonRoundTrip, EscapedInputComesBackNormalised) {
    EXPECT_EQ(write(parse(R"("\/\u0041\u00e9\ud83d\ude00\u001F")")),
              "\"/A\xc3\xa9\xf0\x9f\x98\x80\\u001f\"");
}

TEST(JsonRoundTrip, EveryByteOfEveryControlCharacter) {
    std::string all;
    for (int c = 1; c < 0x80; ++c)
        all += static_cast<char>(c);
    all += "\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf";
    Value v = make_object({{all, make_string(all)}});
    const std::string text = write(v);
    Value back = parse(text);
    EXPECT_EQ(back, v);
    EXPECT_EQ(back.members[0].first, all);
    EXPECT_EQ(write(back), text);
}

// A random value of at most `depth` more levels, for round trips.
Value random_value(std::mt19937& rng, int depth) {
    std::uniform_int_distribution<int> kind(0, depth > 0 ? 5 : 3);
    std::uniform_int_distribution<int> len(0, 6);
    const char* numbers[] = {"0", "-1", "3.25", "1e10", "-0.5E-3", "18446744073709551616"};
    const char* pieces[] = {"a", "\"", "\\", "\n", "\x01", "\xc3\xa9", "\xf0\x9f\x98\x80",
                            "/", " "};
    auto text = [&] {
        std::string s;
        for (int k = len(rng); k > 0; --k)
            s += pieces[rng() % 9];
        return s;
    };
    switch (kind(rng)) {
        case 0:
            return make_null();
        case 1:
            return make_bool(rng() % 2 == 0);
        case 2:
            return make_number(numbers[rng() % 6]);
        case 3:
            return make_string(text());
        case 4: {
            std::vector<Value> items;
            for (int k = len(rng); k > 0; --k)
                items.push_back(random_value(rng, depth - 1));
            return make_array(std::move(items));
        }
        default: {
            std::vector<std::pair<std::string, Value>> members;
            for (int k = len(rng); k > 0; --k)
                members.emplace_back(text(), random_value(rng, depth - 1));
            return make_object(std::move(members));
        }
    }
}

TEST(JsonRoundTrip, RandomValues) {
    std::mt19937 rng(20240611);
    for (int k = 0; k < 2000; ++k) {
        const Value v = random_value(rng, 4);
        const std::string text = write(v);
        const Value back = parse(text);
        ASSERT_EQ(back, v) << text;
        ASSERT_EQ(write(back), text);
    }
}

TEST(JsonRobustness, MutatedTextsNeverCrash) {
    // A fuzzing smoke test: flip, insert and delete bytes of valid texts. Each result is
    // either refused with 22023 or read, and then written and read back unchanged.
    std::mt19937 rng(7);
    const std::vector<std::string> seeds = {
        R"({"start":"a","stages":{"a":{"next":["b",{"to":"@finish","when":"$.x > 1"}]}}})",
        R"([1,-2.5e3,"x\u00e9\ud83d\ude00",true,false,null,{"b":[[]]}])",
        "{\"\xc3\xa9\":\"\xf0\x9f\x98\x80\"}",
    };
    const char alphabet[] = "{}[]\",:\\u0123456789abcdefE+-. \t\nnulltruefalse\x80\xc3\xed\xf0";
    int accepted = 0;
    for (int k = 0; k < 20000; ++k) {
        std::string s = seeds[rng() % seeds.size()];
        for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
            const std::size_t at = s.empty() ? 0 : rng() % s.size();
            const char c = alphabet[rng() % (sizeof alphabet - 1)];
            switch (rng() % 3) {
                case 0:
                    if (!s.empty())
                        s[at] = c;
                    break;
                case 1:
                    s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), c);
                    break;
                default:
                    if (!s.empty())
                        s.erase(at, 1);
            }
        }
        try {
            const Value v = parse(s);
            ++accepted;
            const std::string text = write(v);
            ASSERT_EQ(parse(text), v) << s;
            ASSERT_EQ(write(parse(text)), text);
        } catch (const Error& e) {
            ASSERT_EQ(e.state(), SqlState::kInvalidParameterValue) << s;
        }
    }
    EXPECT_GT(accepted, 0);
}

TEST(JsonRobustness, RandomBytesNeverCrash) {
    std::mt19937 rng(99);
    for (int k = 0; k < 20000; ++k) {
        std::string s(rng() % 24, '\0');
        for (char& c : s)
            c = static_cast<char>(rng() % 256);
        try {
            const Value v = parse(s);
            ASSERT_EQ(parse(write(v)), v);
        } catch (const Error& e) {
            ASSERT_EQ(e.state(), SqlState::kInvalidParameterValue);
        }
    }
}

// ---- integers --------------------------------------------------------------------------

TEST(JsonInteger, IsInteger) {
    for (const char* text : {"0", "-0", "7", "-7", "1000", "9223372036854775807",
                             "-9223372036854775808", "123456789012345678901234567890"})
        EXPECT_TRUE(is_integer(parse(text))) << text;
    for (const char* text : {"1.0", "1.5", "1e2", "1E0", "-0.0", "10e-1", "0.0"})
        EXPECT_FALSE(is_integer(parse(text))) << text;
    for (const char* text : {"\"1\"", "true", "null", "[1]", "{\"a\":1}"})
        EXPECT_FALSE(is_integer(parse(text))) << text;
    EXPECT_FALSE(is_integer(make_number("01")));
    EXPECT_FALSE(is_integer(make_number("")));
    EXPECT_FALSE(is_integer(make_number("-")));
    EXPECT_FALSE(is_integer(make_number("12a")));
}

TEST(JsonInteger, AsInt64) {
    EXPECT_EQ(as_int64(parse("0")), 0);
    EXPECT_EQ(as_int64(parse("-0")), 0);
    EXPECT_EQ(as_int64(parse("42")), 42);
    EXPECT_EQ(as_int64(parse("-42")), -42);
    EXPECT_EQ(as_int64(parse("9223372036854775807")), std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ(as_int64(parse("-9223372036854775808")), std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(as_int64(parse("9223372036854775808")), std::nullopt);
    EXPECT_EQ(as_int64(parse("-9223372036854775809")), std::nullopt);
    EXPECT_EQ(as_int64(parse("18446744073709551616")), std::nullopt);
    EXPECT_EQ(as_int64(parse("99999999999999999999999")), std::nullopt);
    EXPECT_EQ(as_int64(parse("1.0")), std::nullopt);
    EXPECT_EQ(as_int64(parse("1e2")), std::nullopt);
    EXPECT_EQ(as_int64(parse("\"5\"")), std::nullopt);
    EXPECT_EQ(as_int64(parse("true")), std::nullopt);
    EXPECT_EQ(as_int64(make_number("007")), std::nullopt);
}

TEST(JsonInteger, MakeIntRoundTrips) {
    for (std::int64_t n :
         {std::int64_t{0}, std::int64_t{-1}, std::int64_t{123456789},
          std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()}) {
        const Value v = make_int(n);
        EXPECT_EQ(v.kind, Kind::kNumber);
        EXPECT_EQ(as_int64(v), n);
        EXPECT_EQ(as_int64(parse(write(v))), n);
    }
}

// ---- helpers ---------------------------------------------------------------------------

TEST(JsonHelpers, KindNames) {
    EXPECT_STREQ(kind_name(Kind::kNull), "null");
    EXPECT_STREQ(kind_name(Kind::kBoolean), "boolean");
    EXPECT_STREQ(kind_name(Kind::kNumber), "number");
    EXPECT_STREQ(kind_name(Kind::kString), "string");
    EXPECT_STREQ(kind_name(Kind::kArray), "array");
    EXPECT_STREQ(kind_name(Kind::kObject), "object");
}

TEST(JsonHelpers, Equality) {
    EXPECT_EQ(parse("[1,{\"a\":null}]"), parse("[ 1 , { \"a\" : null } ]"));
    EXPECT_NE(parse("1"), parse("1.0"));
    EXPECT_NE(parse("{\"a\":1,\"b\":2}"), parse("{\"b\":2,\"a\":1}"));
    EXPECT_NE(parse("true"), parse("false"));
    EXPECT_NE(parse("\"1\""), parse("1"));
    EXPECT_NE(parse("[]"), parse("{}"));
    EXPECT_EQ(make_null(), parse("null"));
}

TEST(JsonHelpers, Excerpt) {
    EXPECT_EQ(excerpt("abc"), "\"abc\"");
    EXPECT_EQ(excerpt(""), "\"\"");
    EXPECT_EQ(excerpt("a\"b\\c\nd\te\x01"), "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
    EXPECT_EQ(excerpt("a\x80z"), "\"a\\x80z\"");
    EXPECT_EQ(excerpt("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
    EXPECT_EQ(excerpt(std::string(64, 'x')), "\"" + std::string(64, 'x') + "\"");
    EXPECT_EQ(excerpt(std::string(65, 'x')), "\"" + std::string(64, 'x') + "\"...");
    EXPECT_EQ(excerpt(std::string(10000, 'x'), 5), "\"xxxxx\"...");
    // A multibyte character that would cross the limit is left out whole.
    EXPECT_EQ(excerpt("abcd\xc3\xa9", 5), "\"abcd\"...");
    EXPECT_EQ(excerpt(std::string("a\0b", 3)), "\"a\\u0000b\"");
}

}  // namespace
}  // namespace baton::json
