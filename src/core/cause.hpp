// The shape rule for a binding's "cause": absent, or an object with exactly one key,
// event (a string), schedule (a string naming a timestamptz) or webhook (a string naming
// a uuid). The Postgres layer reads the jsonb into a CauseView; the core judges its shape;
// the Postgres layer then parses the schedule or webhook value with Postgres' own input
// functions.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <string>
#include <vector>

namespace baton::cause {

enum class JsonKind { kNull, kString, kNumber, kBool, kArray, kObject };

// One key of the cause object and the kind of its value.
struct Field {
    std::string key;
    JsonKind kind;
};

// What the Postgres layer saw under binding -> 'cause'.
struct View {
    bool present = false;              // the binding has a "cause" key
    JsonKind kind = JsonKind::kNull;   // the kind of its value
    std::vector<Field> fields;         // the keys, when the value is an object
};

enum class Kind { kNone, kEvent, kSchedule, kWebhook };

// Returns which cause it is (kNone when absent); throws 22023 for any other shape.
Kind check(const View& view);

// The name of a JSON kind, for error details.
const char* kind_name(JsonKind kind);

}  // namespace baton::cause
