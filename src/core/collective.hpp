#pragma once
// Errors in the distributed drivers (docs/scale-out.md): a step that may fail with a UserError on
// some ranks and not on others (a part of a run that meets a lineage too deep, a device too small
// on one node) is run through collectively(), so that every rank learns of the failure, throws the
// same error and leaves the driver's later collectives together: the job reports one message (the
// root's, through the CLI) instead of hanging or printing one per rank.
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "simkit/core/dist.hpp"
#include "simkit/core/error.hpp"

namespace simkit::dist {

// Calls f() on every rank of `comm` (a collective call: every rank must make it). When f throws a
// UserError (a DeviceMemoryError included) on any rank, every rank throws the error of the lowest
// such rank, of the same type, field and detail. Other exceptions pass through unchanged (the CLI
// ends the whole job on them).
template <class F>
auto collectively(const Comm& comm, F&& f) -> decltype(f()) {
  using R = decltype(f());
  if (!comm.distributed()) return f();
  std::optional<std::conditional_t<std::is_void_v<R>, int, R>> value;
  std::string field, detail;
  std::int64_t kind = 0;  // 0: no error, 1: UserError, 2: DeviceMemoryError
  try {
    if constexpr (std::is_void_v<R>) {
      f();
      value.emplace(0);
    } else {
      value.emplace(f());
    }
  } catch (const DeviceMemoryError& e) {
    kind = 2;
    field = e.field();
    detail = e.field().empty() ? std::string(e.what()) : e.detail();
  } catch (const UserError& e) {
    kind = 1;
    field = e.field();
    detail = e.field().empty() ? std::string(e.what()) : e.detail();
  }
  const std::int64_t first = comm.allreduce_min(kind != 0 ? comm.rank() : comm.size());
  if (first < comm.size()) {
    const int from = static_cast<int>(first);
    kind = comm.rank() == from ? kind : 0;
    comm.broadcast(&kind, sizeof kind, from);
    field = comm.broadcast(std::move(field), from);
    detail = comm.broadcast(std::move(detail), from);
    if (kind == 2) throw DeviceMemoryError(field, detail);
    if (field.empty()) throw UserError(detail);
    throw UserError(field, detail);
  }
  if constexpr (!std::is_void_v<R>) return std::move(*value);
}

}  // namespace simkit::dist
