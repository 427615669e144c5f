#include "simkit/prolif/prolif.hpp"

namespace simkit::prolif {

std::uint64_t Result::total(std::size_t t) const {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t k = 0; k < generations; ++k)
      for (std::size_t p = 0; p < populations; ++p) sum += at(t, i, k, p);
  return sum;
}

std::vector<std::uint64_t> Result::by_generation(std::size_t t) const {
  std::vector<std::uint64_t> out(generations, 0);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t k = 0; k < generations; ++k)
      for (std::size_t p = 0; p < populations; ++p) out[k] += at(t, i, k, p);
  // Trailing generations that no cell reached carry no information.
  while (out.size() > 1 && out.back() == 0) out.pop_back();
  return out;
}

std::vector<std::uint64_t> Result::by_population(std::size_t t) const {
  std::vector<std::uint64_t> out(populations, 0);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t k = 0; k < generations; ++k)
      for (std::size_t p = 0; p < populations; ++p) out[p] += at(t, i, k, p);
  return out;
}

}  // namespace simkit::prolif
