#include <csrc/runtime/AccInteLifecycle.h>

#include <c10/util/Exception.h>

#include <array>
#include <mutex>

namespace c10::accinte {
namespace {

std::mutex g_mutex;
std::array<LifecycleHooks, 8> g_hooks; // guarded by g_mutex
size_t g_count = 0;                    // guarded by g_mutex

template <typename Pick>
void run_each(Pick pick) {
  std::array<LifecycleHooks, 8> hooks;
  size_t count = 0;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    hooks = g_hooks;
    count = g_count;
  }
  for (size_t i = 0; i < count; ++i) { // without the lock: a hook may allocate
    if (void (*hook)() = pick(hooks[i])) {
      hook();
    }
  }
}

} // namespace

void add_lifecycle_hooks(LifecycleHooks hooks) {
  std::lock_guard<std::mutex> lock(g_mutex);
  TORCH_INTERNAL_ASSERT(g_count < g_hooks.size(), "accinte: too many lifecycle hooks");
  g_hooks[g_count++] = hooks;
}

void run_init_hooks() {
  run_each([](const LifecycleHooks& h) { return h.init; });
}

void run_empty_cache_hooks() {
  run_each([](const LifecycleHooks& h) { return h.empty_cache; });
}

} // namespace c10::accinte
