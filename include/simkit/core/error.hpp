#pragma once
// Two kinds of failure: a UserError is bad input (a file, a flag, a value) and exits with code 2
// after one line that names where and what was expected; anything else is an internal failure
// and exits with code 1.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace simkit {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitUser = 2;

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

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

// A failure inside simkit (a CUDA call, an invariant): exit code 1.
class InternalError : public std::runtime_error {
 public:
  explicit InternalError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace simkit
