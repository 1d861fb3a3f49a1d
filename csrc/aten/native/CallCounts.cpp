#include <csrc/aten/native/CallCounts.h>

#include <map>
#include <mutex>
#include <string>

namespace at::native::accinte {
namespace {

std::mutex g_mutex;
std::map<std::string, int64_t, std::less<>> g_counts; // guarded by g_mutex

} // namespace

void count_call(std::string_view name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_counts.find(name);
  if (it == g_counts.end()) {
    it = g_counts.emplace(std::string(name), 0).first;
  }
  ++it->second;
}

int64_t call_count(std::string_view name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = g_counts.find(name);
  return it == g_counts.end() ? 0 : it->second;
}

} // namespace at::native::accinte
