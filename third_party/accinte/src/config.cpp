// config.cpp: the runtime's configuration, read from the environment once.
//
// Invalid values never fail a call: they fall back to the default, so a typo
// in the environment still yields a working (if differently sized) runtime.
#include "runtime.h"

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace accinte {
namespace {

constexpr int kDefaultDeviceCount = 2;
constexpr size_t kDefaultDeviceMemory = size_t{4} << 30;
constexpr size_t kDefaultLaunchQueueDepth = 1024;
constexpr size_t kMaxLaunchQueueDepth = size_t{1} << 20;
constexpr int kDefaultSpinMicroseconds = 50;
constexpr int kDefaultLaunchLatencyMicroseconds = 20;
constexpr int kMaxMicroseconds = 1000000;

// ACCINTE_DEVICE_COUNT: a decimal integer in [1, ACCINTE_MAX_DEVICE_COUNT].
int parseDeviceCount(const char* text) {
  if (text == nullptr || *text == '\0') {
    return kDefaultDeviceCount;
  }
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < 1 || value > ACCINTE_MAX_DEVICE_COUNT) {
    return kDefaultDeviceCount;
  }
  return static_cast<int>(value);
}

// ACCINTE_DEVICE_MEMORY: a positive decimal byte count with an optional
// binary suffix K, M, G or T (either case), e.g. "512M".
size_t parseDeviceMemory(const char* text) {
  if (text == nullptr || *text == '\0' || !std::isdigit(static_cast<unsigned char>(*text))) {
    return kDefaultDeviceMemory;
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (errno != 0 || value == 0) {
    return kDefaultDeviceMemory;
  }
  int shift = 0;
  switch (std::toupper(static_cast<unsigned char>(*end))) {
    case '\0': shift = 0; break;
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: return kDefaultDeviceMemory;
  }
  if (shift != 0 && end[1] != '\0') {
    return kDefaultDeviceMemory;
  }
  if (value > (static_cast<unsigned long long>(SIZE_MAX) >> shift)) {
    return kDefaultDeviceMemory;
  }
  return static_cast<size_t>(value) << shift;
}

// ACCINTE_LAUNCH_QUEUE_DEPTH: a decimal integer in [1, 2^20].
size_t parseLaunchQueueDepth(const char* text) {
  if (text == nullptr || !std::isdigit(static_cast<unsigned char>(*text))) {
    return kDefaultLaunchQueueDepth;
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < 1 || value > kMaxLaunchQueueDepth) {
    return kDefaultLaunchQueueDepth;
  }
  return static_cast<size_t>(value);
}

// The default spin (Note [accinte spin before sleeping]): the same on every
// machine, since the spin yields the processor between reads.
int defaultSpinMicroseconds() {
  return kDefaultSpinMicroseconds;
}

// A duration in microseconds: a decimal integer in [0, 1000000].
int parseMicroseconds(const char* text, int fallback) {
  if (text == nullptr || !std::isdigit(static_cast<unsigned char>(*text))) {
    return fallback;
  }
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < 0 || value > kMaxMicroseconds) {
    return fallback;
  }
  return static_cast<int>(value);
}

bool parseStrict(const char* text) {
  return text != nullptr && std::strcmp(text, "1") == 0;
}

}  // namespace

const Config& config() {
  // A function-local static: initialised exactly once, thread-safe.
  static const Config kConfig{
      parseDeviceCount(std::getenv("ACCINTE_DEVICE_COUNT")),
      parseDeviceMemory(std::getenv("ACCINTE_DEVICE_MEMORY")),
      parseStrict(std::getenv("ACCINTE_STRICT")),
      parseLaunchQueueDepth(std::getenv("ACCINTE_LAUNCH_QUEUE_DEPTH")),
      // ACCINTE_SPIN_US=0 sleeps at once.
      parseMicroseconds(std::getenv("ACCINTE_SPIN_US"), defaultSpinMicroseconds()),
      parseMicroseconds(std::getenv("ACCINTE_LAUNCH_LATENCY_US"),
                        kDefaultLaunchLatencyMicroseconds),
  };
  return kConfig;
}

}  // namespace accinte

extern "C" int acIsStrict(void) {
  return accinte::config().strict ? 1 : 0;
}
