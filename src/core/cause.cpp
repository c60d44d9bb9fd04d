// The cause shape rule (see cause.hpp).
#include "core/cause.hpp"

#include "core/error.hpp"

namespace baton::cause {

const char* kind_name(JsonKind kind) {
    switch (kind) {
        case JsonKind::kNull: return "null";
        case JsonKind::kString: return "string";
        case JsonKind::kNumber: return "number";
        case JsonKind::kBool: return "boolean";
        case JsonKind::kArray: return "array";
        case JsonKind::kObject: return "object";
    }
    return "null";
}

Kind check(const View& view) {
    if (!view.present) return Kind::kNone;
    if (view.kind != JsonKind::kObject)
        throw_invalid_argument("binding", std::string("binding.cause must be an object, not ") +
                                              kind_name(view.kind) + ".");
    if (view.fields.size() != 1)
        throw_invalid_argument("binding", "binding.cause has exactly one of event, schedule or webhook; it has " +
                                              std::to_string(view.fields.size()) + " keys.");
    const Field& f = view.fields.front();
    Kind kind;
    if (f.key == "event")
        kind = Kind::kEvent;
    else if (f.key == "schedule")
        kind = Kind::kSchedule;
    else if (f.key == "webhook")
        kind = Kind::kWebhook;
    else
        throw_invalid_argument("binding", "binding.cause has an unknown key \"" + clip(f.key) +
                                              "\"; expected event, schedule or webhook.");
    if (f.kind != JsonKind::kString)
        throw_invalid_argument("binding", "binding.cause." + f.key + " must be a string, not " +
                                              kind_name(f.kind) + ".");
    return kind;
}

}  // namespace baton::cause
