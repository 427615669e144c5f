#pragma once
// ddm files (docs/ddm.md): region sets as CSV or little-endian binary, pair lists as CSV or
// binary (streamed, so the pairs never have to fit in memory), per-region counts as CSV. Readers
// throw a UserError naming the file, the line (CSV) and the field; writers are atomic (a
// temporary file beside the target, renamed over it only when complete).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "simkit/ddm/ddm.hpp"

namespace simkit::ddm {

// The subscription set S and the update set U, with the same coordinate type and dimensions.
template <class T>
struct Regions {
  RegionSet<T> subscriptions, updates;
  int dims() const { return subscriptions.dims; }
};

// Regions of whichever coordinate type a file holds.
using AnyRegions = std::variant<Regions<std::uint32_t>, Regions<std::uint64_t>, Regions<double>>;

Coords coords_of(const AnyRegions& regions);
int dims_of(const AnyRegions& regions);
std::size_t subscription_count(const AnyRegions& regions);
std::size_t update_count(const AnyRegions& regions);

// The coordinate type of T (u32, u64, f64).
template <class T>
constexpr Coords coords_for() {
  if constexpr (std::is_same_v<T, std::uint32_t>) {
    return Coords::U32;
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    return Coords::U64;
  } else {
    static_assert(std::is_same_v<T, double>, "ddm coordinates are uint32_t, uint64_t or double");
    return Coords::F64;
  }
}

// ---- region files ----

// CSV: header `set,id,lower0,upper0,...` (one lower/upper pair per dimension, 1 to 8), then one
// region a line: `S` or `U`, a uint64 id (unique within its set), the bounds. Blank lines and
// lines whose first non-blank character is '#' are skipped anywhere; fields are trimmed; CRLF is
// fine. `coords` nullopt (auto): u64 when every bound is a plain integer (digits only), else f64.
// A forced type takes only values it holds exactly (u32/u64: digits only and in range).
// `file` is the name used in messages.
AnyRegions parse_regions_csv(std::string_view content, std::string_view file, std::optional<Coords> coords = {});
AnyRegions read_regions_csv(const std::filesystem::path& path, std::optional<Coords> coords = {});

// Binary, little-endian: magic "SKDDM1\0\0", u32 version (1), u32 coordinate type (0 u32, 1 u64,
// 2 f64), u32 dims, u32 reserved (0), u64 |S|, u64 |U|; then for S and then U: ids (u64 each),
// lower and upper (dimension-major: all of dimension 0, then dimension 1, ...). The size must match
// exactly. A forced `coords` other than the file's converts only values that fit exactly.
AnyRegions read_regions_binary(const std::filesystem::path& path, std::optional<Coords> coords = {});

// Binary when the file starts with the binary magic, else CSV.
AnyRegions read_regions(const std::filesystem::path& path, std::optional<Coords> coords = {});

template <class T>
void write_regions_csv(const std::filesystem::path& path, const Regions<T>& regions);
template <class T>
void write_regions_binary(const std::filesystem::path& path, const Regions<T>& regions);
// Binary when the name ends in ".bin", else CSV.
void write_regions(const std::filesystem::path& path, const AnyRegions& regions);

// The 8 bytes that open a binary region file, and a binary pair file.
inline constexpr std::string_view kRegionMagic{"SKDDM1\0\0", 8};
inline constexpr std::string_view kPairMagic{"SKDDMP1\0", 8};

// ---- pairs and per-region counts ----

// Writes intersecting pairs as they come, by id: CSV (header `subscription,update`, one pair a
// line) or binary (magic "SKDDMP1\0", u64 count, then count (subscription id, update id) u64
// pairs, little-endian). The data goes to a temporary file beside the target; commit() renames it
// into place, and a writer destroyed without commit() removes it. write() never throws (the sink
// may run inside a parallel region): a failed write is reported by commit().
class PairWriter {
 public:
  enum class Format { Csv, Binary };
  // `subscription_ids` and `update_ids` translate the positions in a Match into ids; they must
  // outlive the writer.
  PairWriter(const std::filesystem::path& path, Format format, std::span<const std::uint64_t> subscription_ids,
             std::span<const std::uint64_t> update_ids);
  ~PairWriter();
  PairWriter(const PairWriter&) = delete;
  PairWriter& operator=(const PairWriter&) = delete;

  void write(const Match* pairs, std::size_t count);
  std::uint64_t pairs() const;
  void commit();

  // Binary for ".bin", else CSV.
  static Format format_for(const std::filesystem::path& path);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Reads a pair file of either format (for tests and tools): (subscription id, update id) pairs.
std::vector<std::pair<std::uint64_t, std::uint64_t>> read_pairs(const std::filesystem::path& path);

// `set,id,count`: every subscription (S) then every update (U), in input order, with the number
// of regions of the other set it intersects.
void write_per_region_csv(const std::filesystem::path& path, std::span<const std::uint64_t> subscription_ids,
                          std::span<const std::uint64_t> per_subscription, std::span<const std::uint64_t> update_ids,
                          std::span<const std::uint64_t> per_update);

}  // namespace simkit::ddm
