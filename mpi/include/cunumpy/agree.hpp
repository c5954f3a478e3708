// cunumpy/agree.hpp: a failure on one rank is an error on every rank, not a hang.
//
//   cunumpy::all_ranks<cunumpy::IoError>(comm, [&] { check_and_open(path); });
//   write_collectively();      // reached by every rank, or by none
//
// A collective step (a file's creation, a dataset's write, a checkpoint, an allocation before
// an exchange) can fail on one rank only: a full disk on its node, a bad path, a local
// argument error, memory.  The other ranks then wait in the next collective for ever.
// all_ranks(comm, f) runs f on every rank and agrees on the outcome with one small
// collective: when f threw on any rank, every rank throws E whose message names the lowest
// failing rank and its message ("on rank 1 of 4: ...", "(and 2 more ranks failed)"); else
// every rank goes on.  Every rank of `comm` must call it (it is a collective).  On one rank
// it is f() with the exception converted to E.
#pragma once

#include <exception>
#include <string>
#include <type_traits>
#include <utility>

#include <cunumpy/comm.hpp>
#include <cunumpy/errors.hpp>

namespace cunumpy {

namespace detail {
// The agreement: `failure` is this rank's message (empty: it succeeded).  Returns the agreed
// message (empty when every rank succeeded), the same on every rank.
std::string agree_on_failure(const Comm& comm, const std::string& failure);
// Marks `message` as the failure every rank has agreed on and is now unwinding with (per
// thread), so that an enclosing all_ranks passes it on instead of agreeing a second time.
void set_agreed(const std::string& message);
bool is_agreed(const char* message) noexcept;
}  // namespace detail

// Runs f() on every rank; throws E on every rank when it threw on any (see above).  Calls
// nest: an agreed failure from an inner call (f may make collective calls that agree
// themselves, such as h5::write_dataset) passes through an outer one as it is.
template <typename E = Error, typename F>
void all_ranks(const Comm& comm, F&& f) {
  static_assert(std::is_base_of_v<std::exception, E>, "all_ranks: E must be an exception type");
  std::string failure;
  try {
    std::forward<F>(f)();
  } catch (const std::exception& e) {
    if (detail::is_agreed(e.what())) throw;  // every rank is unwinding with it already
    failure = e.what();
    if (failure.empty()) failure = "an exception without a message";
  } catch (...) {
    failure = "an unknown exception";
  }
  const std::string agreed = detail::agree_on_failure(comm, failure);
  if (agreed.empty()) return;
  detail::set_agreed(agreed);
  throw E(agreed);
}

// The same for a failure found without an exception: `failure` is this rank's message (empty
// when it has none).
template <typename E = Error>
void all_ranks_agree(const Comm& comm, const std::string& failure) {
  const std::string agreed = detail::agree_on_failure(comm, failure);
  if (agreed.empty()) return;
  detail::set_agreed(agreed);
  throw E(agreed);
}

}  // namespace cunumpy
