// task.h: Task, the unit of work a stream queues and runs (internal).
#ifndef ACCINTE_SRC_TASK_H_
#define ACCINTE_SRC_TASK_H_

#include <accinte/accinte.h>

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace accinte {

// Note [accinte tasks without allocation]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every launch queues a Task: a move-only callable returning acError_t, in
// the role std::function<acError_t()> would play. std::function keeps
// anything larger than two pointers on the heap, and a kernel launch's task
// (the function, its user data, its name and its activity correlation) is
// four words: one allocation on the launching thread and one free on the
// worker for every kernel, a malloc arena shared by the two threads. A Task
// keeps callables of up to kInlineBytes in place, so a kernel launch, a host
// function or an event record queues without allocating; larger ones (a copy
// carries the allocations it touches) go to the heap as before.
class Task {
 public:
  static constexpr size_t kInlineBytes = 48;

  Task() noexcept = default;
  Task(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor): like std::function
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Task> &&
                                              !std::is_same_v<std::decay_t<F>, std::nullptr_t>>>
  Task(F&& f) {  // NOLINT(google-explicit-constructor): lambdas convert, as to std::function
    using Fn = std::decay_t<F>;
    if constexpr (fitsInline<Fn>()) {
      new (buffer_) Fn(std::forward<F>(f));
      ops_ = &kInlineOps<Fn>;
    } else {
      *reinterpret_cast<Fn**>(buffer_) = new Fn(std::forward<F>(f));
      ops_ = &kHeapOps<Fn>;
    }
  }
  Task(Task&& other) noexcept { take(other); }
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  Task& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  ~Task() { reset(); }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  explicit operator bool() const noexcept { return ops_ != nullptr; }
  // Runs the callable; must not be empty. Const like std::function's call:
  // a graph's nodes run from a shared, sealed body.
  acError_t operator()() const { return ops_->invoke(const_cast<unsigned char*>(buffer_)); }

 private:
  struct Ops {
    acError_t (*invoke)(void* storage);
    void (*relocate)(void* from, void* to) noexcept;  // move-constructs to, destroys from
    void (*destroy)(void* storage) noexcept;
  };

  template <class Fn>
  static constexpr bool fitsInline() {
    return sizeof(Fn) <= kInlineBytes && alignof(Fn) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<Fn>;
  }

  template <class Fn>
  static constexpr Ops kInlineOps = {
      [](void* s) -> acError_t { return (*static_cast<Fn*>(s))(); },
      [](void* from, void* to) noexcept {
        new (to) Fn(std::move(*static_cast<Fn*>(from)));
        static_cast<Fn*>(from)->~Fn();
      },
      [](void* s) noexcept { static_cast<Fn*>(s)->~Fn(); },
  };
  template <class Fn>
  static constexpr Ops kHeapOps = {
      [](void* s) -> acError_t { return (**static_cast<Fn**>(s))(); },
      [](void* from, void* to) noexcept { *static_cast<Fn**>(to) = *static_cast<Fn**>(from); },
      [](void* s) noexcept { delete *static_cast<Fn**>(s); },
  };

  void take(Task& other) noexcept {
    if (other.ops_ != nullptr) {
      other.ops_->relocate(other.buffer_, buffer_);
      ops_ = std::exchange(other.ops_, nullptr);
    }
  }
  void reset() noexcept {
    if (ops_ != nullptr) {
      std::exchange(ops_, nullptr)->destroy(buffer_);
    }
  }

  alignas(std::max_align_t) unsigned char buffer_[kInlineBytes];
  const Ops* ops_ = nullptr;
};

}  // namespace accinte

#endif  // ACCINTE_SRC_TASK_H_
