// The documented limits on arguments (docs/internals/choices.md, "Limits on arguments").
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <cstdint>

namespace baton::limits {

constexpr std::int64_t kUsecPerSec = 1000000;
constexpr std::int64_t kUsecPerDay = 86400 * kUsecPerSec;

constexpr int kTargetMaxChars = 200;
constexpr int kDedupKeyMaxChars = 256;
constexpr int kKeyMaxChars = 256;
constexpr int kMaxAttempts = 1000;
constexpr int kMaxItems = 10000;
constexpr int kMaxBatchItems = 10000;
constexpr int kMaxReapRows = 100000;
constexpr int kMaxFinishBatch = 1000;
constexpr int kMaxErrorBytes = 65536;
constexpr std::int64_t kMaxLeaseUsec = 365 * kUsecPerDay;
constexpr std::int64_t kMaxDelayUsec = 365 * kUsecPerDay;
constexpr int kDefaultMaxPayloadBytes = 1024 * 1024;
constexpr std::int64_t kBackoffBaseUsec = kUsecPerSec;
constexpr std::int64_t kBackoffCapUsec = 3600 * kUsecPerSec;

}  // namespace baton::limits
