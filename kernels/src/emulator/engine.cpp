// The kernel emulator's engine (cuda_emulator.hpp): a block's threads as fibers on one host
// thread, barriers and warp operations, the blocks of a launch over host threads, and a
// launch's failure reported with the kernel, grid, block and thread.
#include "../cuda_emulator.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <ucontext.h>

#include <boost/context/detail/fcontext.hpp>
#include <boost/context/pooled_fixedsize_stack.hpp>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#define CUNUMPY_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CUNUMPY_TSAN 1
#endif
#endif
#ifndef CUNUMPY_TSAN
#define CUNUMPY_TSAN 0
#endif
#if CUNUMPY_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <cunumpy/errors.hpp>
#include <cunumpy/internal/emulated_arena.hpp>
#include <cunumpy/internal/text.hpp>
#include <cunumpy/memory_block.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "library.hpp"

namespace cunumpy::detail {
namespace ctx = boost::context;
namespace fc = boost::context::detail;  // fcontext_t and transfer_t; the switch off x86-64

namespace {

// ---- one block on one host thread ---------------------------------------------------------

// The context switch.  On x86-64 (ELF) our own: it saves the six callee-saved registers and the
// stack pointer and returns into the other stack, a call and a return the processor's
// return-address predictor follows.  Boost.Context's jump_fcontext also saves and restores the
// x87 control word and MXCSR at every switch (fnstcw and fldcw are microcoded, slow on AMD
// Zen); a block's threads share their host thread's floating-point environment, as kernels
// never change it.  Elsewhere (AArch64) Boost's make_fcontext and jump_fcontext, which return
// with `ret` too.
#if defined(__x86_64__) && defined(__ELF__)
extern "C" fc::transfer_t cunumpy_emulator_switch(fc::fcontext_t to, void* data);
extern "C" void cunumpy_emulator_start();
asm(R"(
        .text
        .p2align 4
        .globl  cunumpy_emulator_switch
        .hidden cunumpy_emulator_switch
        .type   cunumpy_emulator_switch, @function
cunumpy_emulator_switch:
        .cfi_startproc
        pushq   %rbp
        pushq   %rbx
        pushq   %r15
        pushq   %r14
        pushq   %r13
        pushq   %r12
        movq    %rsp, %rax
        movq    %rdi, %rsp
        popq    %r12
        popq    %r13
        popq    %r14
        popq    %r15
        popq    %rbx
        popq    %rbp
        movq    %rsi, %rdx
        ret
        .cfi_endproc
        .size   cunumpy_emulator_switch, .-cunumpy_emulator_switch

        .p2align 4
        .globl  cunumpy_emulator_start
        .hidden cunumpy_emulator_start
        .type   cunumpy_emulator_start, @function
cunumpy_emulator_start:
        .cfi_startproc
        .cfi_undefined rip
        movq    %rax, %rdi
        movq    %rdx, %rsi
        callq   *%r12
        ud2
        .cfi_endproc
        .size   cunumpy_emulator_start, .-cunumpy_emulator_start
)");
inline fc::transfer_t jump(fc::fcontext_t to) {
  return cunumpy_emulator_switch(to, nullptr);
}
// A new context on the stack whose top is `sp`: the first switch to it returns into
// cunumpy_emulator_start, which calls `fn` with the switch's transfer (r12 holds `fn`).
fc::fcontext_t make_context(void* sp, std::size_t, void (*fn)(fc::transfer_t)) {
  auto top = reinterpret_cast<std::uintptr_t>(sp) & ~std::uintptr_t{15};
  top -= 16;
  auto* frame = reinterpret_cast<void**>(top) - 7;  // r12, r13, r14, r15, rbx, rbp, return
  std::memset(frame, 0, 7 * sizeof(void*));
  frame[0] = reinterpret_cast<void*>(fn);
  frame[6] = reinterpret_cast<void*>(&cunumpy_emulator_start);
  return frame;
}
#else
inline fc::transfer_t jump(fc::fcontext_t to) {
  return fc::jump_fcontext(to, nullptr);
}
fc::fcontext_t make_context(void* sp, std::size_t size, void (*fn)(fc::transfer_t)) {
  return fc::make_fcontext(sp, size, fn);
}
#endif

// Stack bounds, for AddressSanitizer's fiber annotations (it must know which stack runs, or it
// takes a switch for an overflow), and ThreadSanitizer's fiber of that stack (it keeps a
// shadow call stack and a clock per fiber; a switch between a block's threads orders them,
// as they run on one host thread).  Without the sanitizers the annotations compile to nothing.
struct StackBounds {
  const void* bottom = nullptr;
  std::size_t size = 0;
  void* tsan_fiber = nullptr;
};
#if defined(__SANITIZE_ADDRESS__)
inline void asan_start_switch(void** fake, const StackBounds& to) {
  __sanitizer_start_switch_fiber(fake, to.bottom, to.size);
}
inline void asan_finish_switch(void* fake) {
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
}
#else
inline void asan_start_switch(void**, const StackBounds&) {}
inline void asan_finish_switch(void*) {}
#endif
#if CUNUMPY_TSAN
inline void* tsan_create_fiber() {
  return __tsan_create_fiber(0);
}
inline void tsan_destroy_fiber(void* fiber) {
  if (fiber != nullptr) __tsan_destroy_fiber(fiber);
}
inline void* tsan_current_fiber() {
  return __tsan_get_current_fiber();
}
#else
inline void* tsan_create_fiber() {
  return nullptr;
}
inline void tsan_destroy_fiber(void*) {}
inline void* tsan_current_fiber() {
  return nullptr;
}
#endif
// What comes right before a switch to the stack `to`.
inline void start_switch(void** fake, const StackBounds& to) {
#if CUNUMPY_TSAN
  __tsan_switch_to_fiber(to.tsan_fiber, 0);
#endif
  asan_start_switch(fake, to);
}

// The calling host thread's own stack.
StackBounds host_thread_stack() {
  StackBounds b;
  b.tsan_fiber = tsan_current_fiber();
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      b.bottom = addr;  // (not b = {addr, size}: that would drop the fiber)
      b.size = size;
    }
    pthread_attr_destroy(&attr);
  }
  return b;
}

// Thrown into suspended threads when their block fails, so that they unwind through the
// emulator's own code (annotated switches) instead of Boost's forced unwinding.
struct LaneAborted {};

struct Lane {
  fc::fcontext_t context = nullptr;  // the thread's context while it is suspended
  ctx::stack_context stack_context;  // its stack, from the host thread's pool
  StackBounds stack() const {
    return {static_cast<const char*>(stack_context.sp) - stack_context.size, stack_context.size,
            tsan_fiber};
  }
  void* tsan_fiber = nullptr;  // ThreadSanitizer's fiber of the stack
  void* fake_stack = nullptr;  // ASan's, while suspended
  bool retire = false;         // the pool ends: return instead of waiting for the next block
  uint3 thread{};
  unsigned waiting_round = 0;  // at the __syncthreads of that round (BlockRun::round)
  bool done = false;
  bool at_warp = false;  // at a warp operation: what it brings, what it gets
  int op = 0, arg = 0, width = 32;
  unsigned mask = 0;
  unsigned long long value = 0, result = 0;
};

// A round of a block runs its runnable threads in index order, each switching straight to the
// next one when it reaches a barrier or a warp operation (one switch per arrival); the last
// switches back to the scheduler, which opens the barrier or completes the warp operations.
struct BlockRun {
  std::vector<unsigned char> shared;  // dynamic shared memory of the block
  std::span<Lane> lanes;              // the block's threads (of the host thread's lane pool)
  Lane* current = nullptr;
  bool fibers = false;
  std::exception_ptr failure;
  std::optional<uint3> failed_thread;  // the thread that failed, where known
  fc::fcontext_t scheduler = nullptr;  // the scheduler's context while a round runs
  // Kept as the threads arrive, so a round's end needs no pass over the block's threads: the
  // barrier of `round` opens by counting on to the next round.
  unsigned round = 1;
  std::size_t n_waiting = 0, n_done = 0, n_warp = 0;
  Lane* resumer = nullptr;           // who switched last (nullptr: the scheduler)
  bool aborting = false;             // the block failed: suspended threads unwind
  EmulatedKernel* kernel = nullptr;  // what the block's threads run
  uint3 block{};                     // which block
  void** args = nullptr;
  StackBounds host_stack;  // the scheduler's stack
  void* host_fake_stack = nullptr;
  // The exchanges of the warp and block reductions (reduce.cuh): each warp's values at a
  // warp_gather, the block's at a block exchange (a barrier that gathers).
  std::unique_ptr<cunumpy_emulator::WarpValues[]> warp_values;
  std::unique_ptr<cunumpy_emulator::BlockValues> block_values;
  // cunumpy_block_sum_to without a barrier: the kernel's side counts (reduce.cuh); here the
  // storage, made current and reset at a block's first call.
  cunumpy_emulator::BlockSums sums{};
  std::vector<std::unique_ptr<cunumpy_emulator::BlockSum>> sum_values;
  std::vector<int> sum_counts;
  std::vector<unsigned> sum_calls;
  std::vector<cunumpy_emulator::BlockSum*> sum_pointers;
  unsigned long serial = 0;  // the block's (Index::serial)
  std::size_t threads = 0;   // the block's
  // Atomic counting: the launch's atomics on global and on shared memory, and which pages of
  // memory are global (the emulated device's mappings are whole pages of their own).
  long long atomics_global = 0, atomics_shared = 0;
  struct Page {
    std::uintptr_t page = ~std::uintptr_t(0);
    bool global = false;
  };
  std::array<Page, 64> atomic_pages{};
  // A kernel run in regions: the block's exchange slots and its threads' state.
  cunumpy_emulator::RegionRun regions{};
  std::vector<unsigned long long> region_values, region_results;
  std::vector<int> region_args, region_widths;
  std::vector<long> region_nexts;
  std::vector<std::max_align_t> region_state;
};

// Blocks begun on this host thread: each block's Index::serial.
thread_local unsigned long t_blocks = 0;

thread_local BlockRun* t_run = nullptr;

std::string ranges(const std::vector<unsigned>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ", ";
    s += std::to_string(ids[i]);
    if (j > i) {  // appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on "-" + string
      s += '-';
      s += std::to_string(ids[j]);
    }
    i = j + 1;
  }
  return s;
}

std::string block_name(const uint3& b) {
  return dims_text(b.x, b.y, b.z);
}

bool is_waiting(const BlockRun& run, const Lane& lane) {
  return lane.waiting_round == run.round;
}

// The next thread from `from` (to `end`, else the block's end) that can run in this round, or
// nullptr.
Lane* next_runnable(BlockRun& run, Lane* from, Lane* end = nullptr) {
  if (end == nullptr) end = run.lanes.data() + run.lanes.size();
  for (Lane* l = from; l < end; ++l)
    if (!l->done && !is_waiting(run, *l) && !l->at_warp) return l;
  return nullptr;
}

bool resolve_warp(BlockRun& run, std::size_t base, std::size_t& released);

// Keeps the context that just switched to us where it belongs.
void park(BlockRun& run, fc::fcontext_t from) {
  if (run.resumer != nullptr) {
    run.resumer->context = from;
  } else {
    run.scheduler = from;
  }
}

// Who runs after `me` (which has stopped: at a barrier, at a warp operation or returned): the
// next runnable thread of its warp; else, when every live lane of the warp waits at a warp
// operation, that operation is completed and the warp's first lane goes on (a warp runs on in
// lock step, its 32 stacks in the caches, instead of waiting for the block's other warps);
// else the next runnable thread of the block; nullptr: the scheduler.
Lane* next_after(BlockRun& run, Lane* me) {
  if (run.failure) return nullptr;
  Lane* const first = run.lanes.data();
  const auto base = static_cast<std::size_t>(me - first) / 32 * 32;
  Lane* const warp_end = first + std::min(base + 32, run.lanes.size());
  if (Lane* next = next_runnable(run, me + 1, warp_end)) return next;
  if (run.n_warp > 0) {
    std::size_t released = 0;
    if (resolve_warp(run, base, released)) {
      run.n_warp -= released;
      return next_runnable(run, first + base, warp_end);
    }
    if (run.failure) return nullptr;
  }
  return next_runnable(run, warp_end);
}

// Where `me` hands over to `next` (made current; nullptr: the scheduler, also after a
// failure).  `to` receives the bounds of the stack it goes to.
fc::fcontext_t hand_over(BlockRun& run, Lane* me, Lane* next, StackBounds& to) {
  run.resumer = me;
  run.current = next;
  if (next == nullptr) {
    to = run.host_stack;
    return std::exchange(run.scheduler, nullptr);
  }
  to = next->stack();  // its threadIdx: restored by the thread itself (emulator.hpp)
  return std::exchange(next->context, nullptr);
}

// Suspends `me` (at a barrier or a warp operation) until its barrier opens or its warp
// operation completes.
void suspend(BlockRun& run, Lane* me) {
  Lane* const next = next_after(run, me);
  if (next == me) return;  // its warp operation completed at once (the warp's only live lane)
  StackBounds to;
  const fc::fcontext_t target = hand_over(run, me, next, to);
  start_switch(&me->fake_stack, to);
  const fc::transfer_t from = jump(target);
  asan_finish_switch(me->fake_stack);
  park(run, from.fctx);
  if (run.aborting) throw LaneAborted{};
}

// A barrier or warp operation reached where the emulator runs the block's threads as a loop.
[[noreturn]] void not_in_fibers(const char* what) {
  const BlockRun* run = t_run;
  if (run != nullptr && !run->fibers && run->kernel != nullptr)
    throw Error(std::string("CUDA kernel '") + run->kernel->name + "': " + what +
                " reached, but the emulator found no __syncthreads, __syncwarp or *_sync( in "
                "its source, the headers it includes or its -D options, and runs its threads as "
                "a loop; name the operation in one of them");
  throw Error(std::string(what) + " outside a block of the emulator");
}

void hook_syncthreads() {
  BlockRun* run = t_run;
  if (run == nullptr || !run->fibers || run->current == nullptr) not_in_fibers("__syncthreads()");
  Lane* me = run->current;
  me->waiting_round = run->round;
  ++run->n_waiting;
  suspend(*run, me);
}

cunumpy_emulator::BlockValues* hook_block_exchange(unsigned long long value) {
  BlockRun* run = t_run;
  if (run == nullptr || !run->fibers || run->current == nullptr) not_in_fibers("a block reduction");
  if (!run->block_values) run->block_values = std::make_unique<cunumpy_emulator::BlockValues>();
  run->block_values->values[run->current - run->lanes.data()] = value;
  hook_syncthreads();
  return run->block_values.get();
}

// The block's cunumpy_block_sum_to storage: reset at its first call (the serial), with room
// for `calls` calls per thread.
void hook_block_sums(unsigned calls) {
  BlockRun* run = t_run;
  if (run == nullptr) throw Error("cunumpy_block_sum_to outside a block of the emulator");
  cunumpy_emulator::BlockSums& st = run->sums;
  if (st.serial != run->serial) {
    st.serial = run->serial;
    run->sum_calls.assign(run->threads, 0);
    std::fill(run->sum_counts.begin(), run->sum_counts.end(), 0);
  }
  while (run->sum_values.size() < calls) {
    run->sum_values.push_back(std::make_unique<cunumpy_emulator::BlockSum>());
    run->sum_counts.push_back(0);
  }
  run->sum_pointers.clear();
  for (const auto& v : run->sum_values) run->sum_pointers.push_back(v.get());
  st.calls = run->sum_calls.data();
  st.counts = run->sum_counts.data();
  st.sums = run->sum_pointers.data();
  st.capacity = run->sum_values.size();
}

// After a block: every cunumpy_block_sum_to it began was completed by all its threads.
void check_block_sums(BlockRun& run) {
  if (run.sums.serial != run.serial) return;
  const auto threads = static_cast<int>(run.threads);
  for (std::size_t k = 0; k < run.sum_counts.size(); ++k) {
    const int count = run.sum_counts[k];
    if (count == 0 || count == threads) continue;
    std::vector<unsigned> missing;
    for (std::size_t t = 0; t < run.sum_calls.size(); ++t)
      if (run.sum_calls[t] <= k) missing.push_back(static_cast<unsigned>(t));
    throw Error("CUDA kernel '" + run.kernel->name + "': cunumpy_block_sum_to call " +
                std::to_string(k + 1) + " of block " + block_name(run.block) + " was made by " +
                std::to_string(count) + " of its " + std::to_string(threads) +
                " threads (threads " + ranges(missing) +
                " did not make it), so the block's sum was never added; every thread of the "
                "block calls it, as often (threads without a value pass 0)");
  }
}

unsigned long long hook_warp(int op, unsigned mask, unsigned long long value, int arg, int width) {
  BlockRun* run = t_run;
  if (run == nullptr || !run->fibers || run->current == nullptr) not_in_fibers("a warp operation");
  Lane* me = run->current;
  me->at_warp = true;
  ++run->n_warp;
  me->op = op;
  me->mask = mask;
  me->value = value;
  me->arg = arg;
  me->width = width;
  suspend(*run, me);
  return me->result;
}

unsigned hook_active_mask() {
  BlockRun* run = t_run;
  if (run == nullptr || run->lanes.empty() || run->current == nullptr) return 0xffffffffu;
  const auto me = static_cast<std::size_t>(run->current - run->lanes.data());
  const std::size_t base = me / 32 * 32;
  unsigned bits = 0;
  for (std::size_t l = base; l < std::min(base + 32, run->lanes.size()); ++l)
    if (!run->lanes[l].done) bits |= 1u << (l - base);
  return bits;
}

void* hook_dynamic_shared() {
  return t_run != nullptr ? t_run->shared.data() : nullptr;
}

// `thread` is the trapping thread's threadIdx (passed by value: the block loop keeps it in a
// register).
[[noreturn]] void hook_trap(const char* what, uint3 thread) {
  if (t_run != nullptr && !t_run->failed_thread) t_run->failed_thread = thread;
  throw Error(std::string("CUDA kernel trapped: ") + what);
}

// Atomic counters alive in the process, and the calling thread's.
std::atomic<int> g_atomic_counters{0};
thread_local AtomicCounters t_atomic_counters;

// An atomic's address: global memory when it lies in the emulated device's memory or in a loaded
// object's data (a module-scope variable); else shared memory (__shared__ variables are thread
// locals of the host thread, dynamic shared memory a host allocation) or a local variable.
void hook_count_atomic(const void* address) {
  BlockRun* run = t_run;
  if (run == nullptr) return;
  const std::uintptr_t page = reinterpret_cast<std::uintptr_t>(address) >> 12;
  BlockRun::Page& slot = run->atomic_pages[page % run->atomic_pages.size()];
  if (slot.page != page) {
    slot.page = page;
    Dl_info info{};
    slot.global = emulated_arena_contains(address) || dladdr(address, &info) != 0;
  }
  ++(slot.global ? run->atomics_global : run->atomics_shared);
}

void hook_region_state(std::size_t bytes) {
  BlockRun* run = t_run;
  run->region_state.resize((bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
  run->regions.state = reinterpret_cast<unsigned char*>(run->region_state.data());
  run->regions.state_capacity = run->region_state.size() * sizeof(std::max_align_t);
}

// The threads of a block run in regions met different synchronisations, or some returned while
// others wait (a barrier or warp operation under a condition that differs between them).
[[noreturn]] void hook_region_divergence(const cunumpy_emulator::RegionRun* regions,
                                         unsigned threads) {
  BlockRun* run = t_run;
  const std::span<const long> nexts(regions->nexts, threads);
  const long first = *std::find_if(nexts.begin(), nexts.end(), [](long n) { return n >= 0; });
  const auto arrived = std::count_if(nexts.begin(), nexts.end(), [](long n) { return n >= 0; });
  const bool elsewhere =
      std::any_of(nexts.begin(), nexts.end(), [&](long n) { return n >= 0 && n != first; });
  throw Error(
      "CUDA kernel '" + run->kernel->name + "': " + std::to_string(arrived) + " of the " +
      std::to_string(threads) + " threads of block " + block_name(run->block) + " reached " +
      regions->what +
      (elsewhere ? ", some at another one of its synchronisations" : ", the others returned") +
      "; every thread of a block reaches the same barriers, and every lane of a warp the "
      "same warp operations (the emulator splits this kernel at them: a loop around one "
      "runs as often in every thread)");
}

const cunumpy_emulator::Hooks kHooks{hook_syncthreads,  hook_dynamic_shared,   hook_trap,
                                     hook_warp,         hook_active_mask,      hook_block_exchange,
                                     hook_block_sums,   &g_atomic_counters,    hook_count_atomic,
                                     hook_region_state, hook_region_divergence};

// Completes the warp operation every live lane of the warp at `base` has reached (`released`:
// how many lanes it frees); returns whether it did.  A warp whose lanes wait at different warp
// operations is an error (run.failure).
bool resolve_warp(BlockRun& run, std::size_t base, std::size_t& released) {
  using namespace cunumpy_emulator;
  std::span<Lane> lanes = run.lanes;
  const std::size_t end = std::min(base + 32, lanes.size());
  int op = -1;
  for (std::size_t l = base; l < end; ++l) {
    if (lanes[l].done) continue;
    if (!lanes[l].at_warp) return false;
    if (op == -1) op = lanes[l].op;
    if (lanes[l].op != op) {
      run.failure = std::make_exception_ptr(
          Error("CUDA kernel '" + run.kernel->name + "': the lanes of warp " +
                std::to_string(base / 32) + " of block " + block_name(run.block) +
                " wait at different warp operations; every lane of a mask must "
                "reach the same one"));
      return false;
    }
  }
  if (op == -1) return false;  // no live lane
  auto live = [&](std::size_t l) { return l < end && !lanes[l].done; };
  unsigned ballot = 0, alive = 0;
  bool any = false, every = true;
  for (std::size_t l = base; l < end; ++l)
    if (live(l)) {
      alive |= 1u << (l - base);
      const bool p = lanes[l].value != 0;
      if (p) ballot |= 1u << (l - base);
      any = any || p;
      every = every && p;
    }
  WarpValues* gathered = nullptr;
  if (op == warp_gather) {
    if (!run.warp_values) run.warp_values = std::make_unique<WarpValues[]>(32);
    gathered = &run.warp_values[base / 32];
    for (std::size_t l = base; l < end; ++l)
      gathered->values[l - base] = live(l) ? lanes[l].value : 0;
    gathered->live = alive;
    gathered->ready = 0;
  }
  released = 0;
  for (std::size_t l = base; l < end; ++l) {
    Lane& me = lanes[l];
    if (me.done) continue;
    const long long lane = static_cast<long long>(l - base), width = me.width > 0 ? me.width : 32;
    const long long segment = lane / width * width;
    long long src = lane;
    switch (me.op) {
      case warp_shfl:
        src = segment + ((me.arg % width) + width) % width;
        break;
      case warp_shfl_up:
        src = lane - me.arg >= segment ? lane - me.arg : lane;
        break;
      case warp_shfl_down:
        src = lane + me.arg < segment + width ? lane + me.arg : lane;
        break;
      case warp_shfl_xor:
        src = (lane ^ me.arg) < segment + width ? lane ^ me.arg : lane;
        break;
      default:
        break;
    }
    switch (me.op) {
      case warp_ballot:
        me.result = ballot & me.mask;
        break;
      case warp_any:
        me.result = any;
        break;
      case warp_all:
        me.result = every;
        break;
      case warp_sync:
        me.result = 0;
        break;
      case warp_gather:
        me.result = reinterpret_cast<unsigned long long>(gathered);
        break;
      default: {  // a shuffle; an exited or missing source lane gives the lane's own value
        const std::size_t from = base + static_cast<std::size_t>(src);
        me.result = live(from) ? lanes[from].value : me.value;
      }
    }
    me.at_warp = false;
    ++released;
  }
  return true;
}

// Completes the warp operations of every warp whose live lanes have all reached one; returns
// whether any did.
bool resolve_warps(BlockRun& run) {
  bool resolved = false;
  for (std::size_t base = 0; base < run.lanes.size() && !run.failure; base += 32) {
    std::size_t released = 0;
    if (resolve_warp(run, base, released)) resolved = true;
  }
  return resolved;
}

// The threads of a block are fibers kept from block to block and launch to launch, one pool
// per host thread (a block has at most 1024 threads): each runs the kernel of the block it is
// given, then waits to be given the next.  Creating 256 fibers per block cost a tenth of a
// barrier-heavy launch.
void lane_body(Lane& lane) {
  BlockRun* run = t_run;
  for (;;) {
    if (!run->aborting && !lane.retire) {
      try {
        run->kernel->entry(run->args, &lane.thread);
      } catch (const LaneAborted&) {
      } catch (...) {
        if (!run->failure) {
          run->failure = std::current_exception();
          run->failed_thread = lane.thread;
        }
      }
    }
    lane.done = true;
    ++run->n_done;
    if (lane.retire) return;
    StackBounds to;
    const fc::fcontext_t target = hand_over(*run, &lane, next_after(*run, &lane), to);
    start_switch(&lane.fake_stack, to);
    const fc::transfer_t from = jump(target);  // until a block takes this thread again
    asan_finish_switch(lane.fake_stack);
    run = t_run;
    park(*run, from.fctx);
  }
}

// A lane's context starts here, taken by the block run that hands over to it first.  It never
// returns (a context function must not): retired, it switches back for good.
void lane_entry(fc::transfer_t from) {
  asan_finish_switch(nullptr);
  Lane& lane = *t_run->current;
  park(*t_run, from.fctx);
  lane_body(lane);
  StackBounds to;
  const fc::fcontext_t target = hand_over(*t_run, &lane, nullptr, to);
  start_switch(nullptr, to);  // this stack ends here
  jump(target);
  std::abort();  // not reached: nothing resumes a retired lane
}

// A fiber's stack: 64 KiB, four times that when the kernels are sanitized (AddressSanitizer's
// redzones around every local array).
#if defined(CUNUMPY_KERNEL_SANITIZE)
constexpr std::size_t kFiberStack = 256 * 1024;
#else
constexpr std::size_t kFiberStack = 64 * 1024;
#endif

struct LanePool {
  ctx::pooled_fixedsize_stack stacks{kFiberStack + 448};  // see emulate_launch
  std::unique_ptr<Lane[]> lanes = std::make_unique<Lane[]>(1024);
  std::size_t created = 0;

  void grow(std::size_t n) {
    for (; created < n; ++created) {
      Lane& lane = lanes[created];
      lane.stack_context = stacks.allocate();
      lane.tsan_fiber = tsan_create_fiber();
      lane.context = make_context(lane.stack_context.sp, lane.stack_context.size, lane_entry);
    }
  }
  // At the host thread's end every lane leaves its kernel loop and switches back for good
  // (annotated switches); then its stack goes back to the pool.
  ~LanePool() {
    BlockRun run;
    run.failure = std::make_exception_ptr(Error("retired"));  // hand_over: back to here
    run.host_stack = host_thread_stack();
    BlockRun* previous = t_run;
    t_run = &run;
    run.lanes = std::span<Lane>(lanes.get(), created);
    for (std::size_t i = 0; i < created; ++i) {
      Lane& lane = lanes[i];
      if (lane.context != nullptr) {
        lane.retire = true;
        run.resumer = nullptr;
        run.current = &lane;
        start_switch(&run.host_fake_stack, lane.stack());
        jump(std::exchange(lane.context, nullptr));  // (its last context is never resumed)
        asan_finish_switch(run.host_fake_stack);
      }
      tsan_destroy_fiber(lane.tsan_fiber);
      stacks.deallocate(lane.stack_context);
    }
    t_run = previous;
  }
};

LanePool& lane_pool() {
  static thread_local LanePool pool;
  return pool;
}

// Every thread of the block has arrived at the barrier: it opens (a block exchange's values are
// complete: the first thread back computes the results).
void open_barrier(BlockRun& run) {
  ++run.round;
  run.n_waiting = 0;
  if (run.block_values) {
    run.block_values->ready = 0;
    run.block_values->threads = static_cast<int>(run.lanes.size());
  }
}

void run_block(EmulatedKernel& k, const cunumpy_emulator::Index& index, const Dim3& block,
               void** args, BlockRun& run) {
  const long long n = block.product();
  run.kernel = &k;
  run.block = index.block;
  run.serial = index.serial;
  run.threads = static_cast<std::size_t>(n);
  if (!k.barriers || k.regions != nullptr) {  // the threads one after the other (by regions)
    try {
      if (k.regions != nullptr) {
        if (run.region_values.size() < static_cast<std::size_t>(n)) {
          const auto size = static_cast<std::size_t>(n);
          run.region_values.resize(size);
          run.region_results.resize(size);
          run.region_args.resize(size);
          run.region_widths.resize(size);
          run.region_nexts.resize(size);
          run.regions.nexts = run.region_nexts.data();
          run.regions.values = run.region_values.data();
          run.regions.results = run.region_results.data();
          run.regions.args = run.region_args.data();
          run.regions.widths = run.region_widths.data();
        }
        k.regions(args);
      } else {
        k.block(args);
      }
    } catch (...) {  // the thread that threw: the one the loop was at
      if (!run.failed_thread) run.failed_thread = k.thread();
      throw;
    }
    check_block_sums(run);
    return;
  }
  run.fibers = true;
  run.aborting = false;
  run.args = args;
  // Read once per host thread (for the main thread glibc reads /proc/self/maps to find it).
  static thread_local const StackBounds host_stack = host_thread_stack();
  run.host_stack = host_stack;
  LanePool& pool = lane_pool();
  pool.grow(static_cast<std::size_t>(n));
  run.lanes = std::span<Lane>(pool.lanes.get(), static_cast<std::size_t>(n));
  std::span<Lane> lanes = run.lanes;
  uint3 thread{0, 0, 0};  // counted on, x fastest, without divisions
  for (long long t = 0; t < n; ++t) {
    Lane& lane = lanes[static_cast<std::size_t>(t)];
    lane.thread = thread;
    lane.done = lane.at_warp = false;
    lane.waiting_round = 0;
    if (++thread.x == block.x) {
      thread.x = 0;
      if (++thread.y == block.y) {
        thread.y = 0;
        ++thread.z;
      }
    }
  }
  run.round = 1;
  run.n_waiting = run.n_done = run.n_warp = 0;
  // One thread from the scheduler; it runs the round on (or returns at once).
  auto resume_from_scheduler = [&](Lane* first) {
    run.resumer = nullptr;
    run.current = first;
    start_switch(&run.host_fake_stack, first->stack());
    const fc::transfer_t from = jump(std::exchange(first->context, nullptr));
    asan_finish_switch(run.host_fake_stack);
    park(run, from.fctx);
  };
  // After a failure every thread not done yet finishes: a suspended one unwinds from its
  // barrier, one that never ran skips the kernel.  No thread is left suspended inside the kernel.
  auto abort_lanes = [&] {
    run.aborting = true;
    for (Lane& lane : lanes)
      if (!lane.done) resume_from_scheduler(&lane);
  };
  for (;;) {
    if (Lane* first = next_runnable(run, lanes.data())) resume_from_scheduler(first);  // one round
    run.current = nullptr;
    if (run.failure) {
      abort_lanes();
      break;
    }
    if (run.n_warp > 0) {
      const bool resolved = resolve_warps(run);
      run.n_warp = 0;
      for (const Lane& lane : lanes) run.n_warp += lane.at_warp ? 1 : 0;
      if (resolved) continue;
    }
    if (run.failure) {
      abort_lanes();
      break;
    }
    if (run.n_done == lanes.size()) break;
    if (run.n_waiting == lanes.size()) {  // all arrived: the barrier opens
      open_barrier(run);
      continue;
    }
    // Some returned or wait at a warp operation: the lists for the report.
    std::vector<unsigned> waiting, done, warp;
    for (long long t = 0; t < n; ++t) {
      const Lane& lane = lanes[static_cast<std::size_t>(t)];
      if (is_waiting(run, lane)) waiting.push_back(static_cast<unsigned>(t));
      if (lane.done) done.push_back(static_cast<unsigned>(t));
      if (lane.at_warp) warp.push_back(static_cast<unsigned>(t));
    }
    if (!warp.empty()) {
      run.failure = std::make_exception_ptr(
          Error("CUDA kernel '" + k.name + "': in block " + block_name(index.block) + " threads " +
                ranges(warp) + " wait at a warp operation that lanes of their warp never reach (" +
                (waiting.empty() ? "they returned"
                                 : "threads " + ranges(waiting) + " wait at __syncthreads()") +
                "); make every lane in the mask reach the same warp operations"));
      abort_lanes();
      break;
    }
    if (!done.empty()) {
      run.failure = std::make_exception_ptr(
          Error("CUDA kernel '" + k.name + "': a barrier that not every thread of block " +
                block_name(index.block) + " reaches: threads " + ranges(waiting) +
                " wait at __syncthreads(), threads " + ranges(done) +
                " returned without reaching it (on a GPU this hangs or corrupts shared memory); "
                "make every thread of the "
                "block reach each __syncthreads()"));
      abort_lanes();
      break;
    }
    open_barrier(run);  // all arrived: the barrier opens
  }
  run.fibers = false;
  run.lanes = {};
  if (!run.failure) check_block_sums(run);
}

// ---- debug mode: a read or write past an array's end -------------------------------------

// In debug mode an emulated device array ends at a guard page (core's emulated arena).  A
// kernel's load or store there faults; on a host thread that runs a block, the handler throws
// an IndexError from the faulting instruction (the kernels are compiled with
// -fnon-call-exceptions), which reaches the launch's report with the kernel, the block and the
// thread.  Any other fault goes to the handler there was before, or kills the process as it
// would have.
#if !defined(CUNUMPY_KERNEL_SANITIZE)
struct sigaction g_previous_segv {};

[[noreturn]] void fault_past_the_end(void* address, const void* start, std::size_t bytes,
                                     bool write) {
  BlockRun* run = t_run;
  if (!run->failed_thread) run->failed_thread = run->kernel->thread();
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  const auto begin = reinterpret_cast<std::uintptr_t>(start);
  char hex[32];
  std::snprintf(hex, sizeof hex, "%#zx", static_cast<std::size_t>(begin));
  throw IndexError(std::string(write ? "wrote" : "read") + " byte " + std::to_string(at - begin) +
                   " of an emulated device array of " + std::to_string(bytes) + " bytes (at " +
                   hex +
                   "), past its end, through a pointer (the debug "
                   "mode's guard page after the array); index within the array's size");
}

void on_segv(int signal, siginfo_t* info, void* context) {
  const void* start = nullptr;
  std::size_t bytes = 0;
  BlockRun* run = t_run;
  if (run != nullptr && run->kernel != nullptr &&
      emulated_arena::guarded_by(info->si_addr, start, bytes)) {
    bool write = false;
#if defined(__x86_64__)
    write = (static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#endif
    fault_past_the_end(info->si_addr, start, bytes, write);
  }
  if ((g_previous_segv.sa_flags & SA_SIGINFO) != 0 && g_previous_segv.sa_sigaction != nullptr) {
    g_previous_segv.sa_sigaction(signal, info, context);
    return;
  }
  if (g_previous_segv.sa_handler != SIG_DFL && g_previous_segv.sa_handler != SIG_IGN &&
      g_previous_segv.sa_handler != nullptr) {
    g_previous_segv.sa_handler(signal);
    return;
  }
  ::signal(SIGSEGV, SIG_DFL);  // the fault repeats when the handler returns: the default action
}

#endif

// Once there is a guarded allocation.  SA_NODEFER: the handler leaves by an exception, not by
// returning, so SIGSEGV must not stay blocked.  Not in a sanitized build (AddressSanitizer
// checks the kernels' accesses itself and owns SIGSEGV).
void install_fault_handler() {
#if !defined(CUNUMPY_KERNEL_SANITIZE)
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_previous_segv);
  });
#endif
}

}  // namespace

const cunumpy_emulator::Hooks& emulator_hooks() noexcept {
  return kHooks;
}

namespace {
std::string dims(const Dim3& d) {
  return dims_text(d.x, d.y, d.z);
}

// The failure of a launch, as the caller sees it (at the launch or at a later synchronize()):
// the same exception type, its message led by the kernel, the launch's grid and block, the
// failing block and, where known, thread.
std::exception_ptr in_launch(std::exception_ptr failure, const EmulatedKernel& k, const Dim3& grid,
                             const Dim3& block, const uint3& where,
                             const std::optional<uint3>& thread) {
  std::string context = "CUDA kernel '" + k.name + "' launched with grid " + dims(grid) +
                        " and block " + dims(block) + ", in block " + block_name(where);
  if (thread) context += ", thread " + block_name(*thread);
  const std::string own = "CUDA kernel '" + k.name + "': ";  // the engine's own reports
  auto message = [&](const std::exception& e) {
    std::string what = e.what();
    if (what.rfind(own, 0) == 0) what.erase(0, own.size());
    return context + ": " + what;
  };
  try {
    std::rethrow_exception(failure);
  } catch (const IndexError& e) {
    return std::make_exception_ptr(IndexError(message(e)));
  } catch (const ValueError& e) {
    return std::make_exception_ptr(ValueError(message(e)));
  } catch (const TypeError& e) {
    return std::make_exception_ptr(TypeError(message(e)));
  } catch (const CudaError& e) {
    return std::make_exception_ptr(CudaError(message(e), e.code()));
  } catch (const Error& e) {
    return std::make_exception_ptr(Error(message(e)));
  } catch (const std::exception& e) {
    return std::make_exception_ptr(Error(message(e)));
  } catch (...) {
    return std::make_exception_ptr(Error(context + ": an exception that is not a std::exception"));
  }
}
}  // namespace

AtomicCounters atomic_counters_now() {
  return t_atomic_counters;
}

void emulate_launch(EmulatedKernel& k, const Dim3& grid, const Dim3& block, void** args,
                    std::size_t shared_mem, const AtomicCounters& counters) {
  std::atomic<long long> atomics_global{0}, atomics_shared{0};
  if (emulated_arena::any_guarded()) install_fault_handler();
  const long long blocks = grid.product();
  int host_threads = 1;
#if defined(_OPENMP)
  host_threads = omp_get_max_threads();
#endif
  const long long chunk = std::clamp<long long>(blocks / (8LL * host_threads), 1, 64);
  const bool one_axis = grid.y == 1 && grid.z == 1;
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
#pragma omp parallel
  {
    BlockRun run;
    run.shared.assign(std::max<std::size_t>(shared_mem, 16), 0);
    t_run = &run;
    cunumpy_emulator::Index index{};  // this host thread's block, set in the kernel's library
    index.block_dim = dim3(static_cast<unsigned>(block.x), static_cast<unsigned>(block.y),
                           static_cast<unsigned>(block.z));
    index.grid_dim = dim3(static_cast<unsigned>(grid.x), static_cast<unsigned>(grid.y),
                          static_cast<unsigned>(grid.z));
    // Fiber stacks (LanePool) are 64 KiB each; the extra 448 bytes stagger the stacks' tops
    // across cache sets: with a stride of exactly 64 KiB every switch to the next thread would
    // miss in the same few sets.
    // Runs of consecutive blocks per host thread (each thread then streams through memory, which
    // the prefetchers follow), small enough that uneven blocks still balance.
#pragma omp for schedule(dynamic, chunk)
    for (long long b = 0; b < blocks; ++b) {
      if (failed.load(std::memory_order_relaxed)) continue;
      if (one_axis)  // no divisions (three cost a tenth of a small block's time)
        index.block = {static_cast<unsigned>(b), 0u, 0u};
      else
        index.block = {static_cast<unsigned>(b % grid.x),
                       static_cast<unsigned>((b / grid.x) % grid.y),
                       static_cast<unsigned>(b / (grid.x * grid.y))};
      index.serial = ++t_blocks;
      index.sums = &run.sums;
      index.regions = &run.regions;
      try {
        k.set_index(&index);
        run_block(k, index, block, args, run);
      } catch (...) {
        if (!run.failure) run.failure = std::current_exception();
      }
      if (run.failure) {
#pragma omp critical(cunumpy_emulator_failure)
        {
          if (!failure)
            failure = in_launch(run.failure, k, grid, block, index.block, run.failed_thread);
        }
        failed.store(true, std::memory_order_relaxed);
        run.failure = nullptr;
        run.failed_thread.reset();
      }
    }
    t_run = nullptr;
    atomics_global.fetch_add(run.atomics_global, std::memory_order_relaxed);
    atomics_shared.fetch_add(run.atomics_shared, std::memory_order_relaxed);
  }
  for (const auto& c : counters) {
    c->global.fetch_add(atomics_global.load(), std::memory_order_relaxed);
    c->shared.fetch_add(atomics_shared.load(), std::memory_order_relaxed);
    c->launches.fetch_add(1, std::memory_order_relaxed);
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace cunumpy::detail

namespace cunumpy {

AtomicCounter::AtomicCounter() : state_(std::make_shared<State>()) {
  detail::t_atomic_counters.push_back(state_);
  detail::g_atomic_counters.fetch_add(1, std::memory_order_relaxed);
}

AtomicCounter::~AtomicCounter() {
  auto& mine = detail::t_atomic_counters;
  const auto at = std::find(mine.begin(), mine.end(), state_);
  if (at != mine.end()) mine.erase(at);
  detail::g_atomic_counters.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace cunumpy
