#pragma once
// Two kinds of failure: a UserError is bad input (a file, a flag, a value) and exits with code 2
// after one line that names where and what was expected; anything else is an internal failure
// and exits with code 1.
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace simkit {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitUser = 2;

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
  // An error about one field of a problem or of the run options, named as the library names it
  // ("grid", "t_max", "backend"): what() reads field + detail, e.g. "grid 2,2,1: ..." with detail
  // " 2,2,1: ...". Front ends name the field their own way (the CLI: "--grid 2,2,1: ...").
  UserError(std::string field, std::string detail)
      : std::runtime_error(field + detail), field_(std::move(field)), detail_(std::move(detail)) {}
  // The field, or "" for an error about no single field (a file's contents, a combination).
  const std::string& field() const noexcept { return field_; }
  // The text after the field.
  const std::string& detail() const noexcept { return detail_; }

 private:
  std::string field_, detail_;
};

// The message of `e` with every field named by `name_of`: the field the error is about, and each
// field its text refers to as `field` (in backquotes). Front ends name fields their own way: the CLI
// as flags ("--t-max"), the ddm C API as they are; what() keeps the library's names.
std::string message_naming(const UserError& e, const std::function<std::string(std::string_view)>& name_of);

// `message` made fit for one line of a terminal: control characters (newlines included) and bytes
// that are not valid UTF-8 written as \xNN, and at most `max_bytes` bytes kept (then "..."), so
// that text echoed from a garbage file can neither break the line nor flood it. Front ends print
// every error through it.
std::string printable_line(std::string_view message, std::size_t max_bytes = 1000);

// "FILE:LINE: field 'FIELD': PROBLEM" (line 0 leaves the line out; an empty field leaves it out).
[[nodiscard]] UserError input_error(std::string_view file, std::size_t line, std::string_view field,
                                    std::string_view problem);

// The problem does not fit in a device's memory: a UserError (the size of the problem, not a bug;
// exit code 2), raised by every engine, either by a check before allocating or by the CUDA error
// check when an allocation fails. The C API maps it to its out-of-memory status.
class DeviceMemoryError : public UserError {
 public:
  using UserError::UserError;
};

// A run that stopped because its caller asked it to (RunOptions::stop: the CLI on SIGINT or
// SIGTERM, Python on Ctrl-C): neither bad input nor a failure. Nothing of the run is left behind
// (its outputs are staged, docs/reliability.md); the CLI exits with 128 + the signal's number.
class Stopped : public std::runtime_error {
 public:
  Stopped() : std::runtime_error("stopped on request") {}
};

// A failure inside simkit (a CUDA call, an invariant): exit code 1.
class InternalError : public std::runtime_error {
 public:
  explicit InternalError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace simkit
