#pragma once
// The cuda backend's resident index for IncrementalMatcher (resident_cuda.cu; docs/ddm.md,
// "Incremental matching"): both sets stay on the device, by slot, with a sorted grid index per
// side (the keys of resident_grid.hpp's GridGeometry, sorted with CUB) and a list of the slots
// changed since the index was built. A batch:
//   1. (now and then) rebuilds an index whose changed list has grown past a share of its side;
//   2. matches the changed regions' old bounds against the other side as it was;
//   3. writes the new bounds into the slots and appends them to the changed lists;
//   4. matches the changed regions' new bounds against the other side as it is now;
//   5. sorts the old and new pair keys and keeps those in one list only: lost and gained.
// Index entries of changed slots are skipped; changed slots are tested from the changed list
// instead. A pair is a 64-bit key, (group << 32) | partner slot, where group numbers the batch's
// changed regions (subscriptions, then updates) and the partner is a slot of the other side;
// pairs of two changed regions are kept on the subscription's side only.
#include <cstdint>
#include <memory>
#include <vector>

#include "ddm/resident_grid.hpp"
#include "simkit/ddm/ddm.hpp"

namespace simkit::ddm::detail {

// One side's changed regions in a batch, in the matcher's order.
template <class T>
struct DeviceBatchSide {
  std::vector<std::uint32_t> slot;
  std::vector<std::uint8_t> was_present, present;
  std::vector<T> box;  // per changed region 2 x dims values (lower bounds, then upper), meaningful if present
};

struct DeviceApplyReport {
  std::size_t tested_s = 0, tested_u = 0;  // regions tested, against the changed updates / subscriptions
  bool rebuilt = false;                    // an index was rebuilt in this batch
  double seconds = 0;
};

template <class T>
class DeviceResident {
 public:
  // Uploads both sides: per slot, present or not and its bounds (2 x dims values, as above);
  // builds the indexes. `geometry_s` / `geometry_u` are those of the host's grids.
  DeviceResident(int device, const GridGeometry& geometry_s, const GridGeometry& geometry_u,
                 const std::vector<std::uint8_t>& present_s, const std::vector<T>& boxes_s,
                 const std::vector<std::uint8_t>& present_u, const std::vector<T>& boxes_u);
  ~DeviceResident();
  DeviceResident(const DeviceResident&) = delete;
  DeviceResident& operator=(const DeviceResident&) = delete;

  // Slots each side has room for; a batch with a higher slot needs a new DeviceResident.
  std::size_t capacity_s() const;
  std::size_t capacity_u() const;

  // Applies one batch (slots below the capacities) and returns the pair keys gained and lost,
  // each sorted. A failure leaves the device state undefined: the caller discards the object.
  void apply(Rule rule, const DeviceBatchSide<T>& s, const DeviceBatchSide<T>& u, std::vector<std::uint64_t>& gained,
             std::vector<std::uint64_t>& lost, DeviceApplyReport& report);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace simkit::ddm::detail
