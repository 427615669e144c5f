#pragma once
// The hybrid model's rule choices (docs/angio.md, "Rules"), in a header of its own without
// standard-library includes so that the cuda kernel can share them.

namespace simkit::angio {

// What happens when a tip moves onto an occupied node (docs/angio.md, "Anastomosis"). A tip that
// fuses stops; one that passes moves onto the node and carries on.
enum class AnastomosisRule : unsigned char {
  Other,        // fuse with another sprout's node (active or not) or the parent vessel; pass over its own trail
  OtherActive,  // fuse only with a node of another sprout whose tip is still active; pass otherwise (Angio_TDA)
  Any,          // fuse with every occupied node, the tip's own trail included (simkit's earlier default)
  Window,       // as Other, but also fuse with its own trail older than its last N positions (Pillay et al.)
};
// Where c is consumed and f produced (step 4): at every node of the network (A&C: n = 1 on the
// vessels) or only at the nodes of the active tips (Angio_TDA).
enum class Uptake : unsigned char { Trail, Tip };
// Where a branch's new tip goes: a free neighbour drawn with the move weights P1..P6 restricted to
// free nodes, or one drawn uniformly among the free neighbours.
enum class DaughterPlacement : unsigned char { Weights, Uniform };

// How a tip's move probabilities come from c and f: A&C's central-difference coefficients P0..P6
// of the continuous model (negative ones clipped to 0, moves out of the domain excluded), or the
// one-sided differences of Angio_TDA (Nardini et al. 2021; docs/angio.md).
enum class MoveWeights : unsigned char { Central, OneSided };

// Kinds of anastomosis, by what the fusing tip met: its own sprout's trail, its parent's or its
// daughter's sprout within psi of the branch that made the daughter, any other sprout, or the
// parent vessel.
enum class FusionKind : unsigned char { Own = 0, ParentDaughter = 1, Sprout = 2, Vessel = 3 };
constexpr int kFusionKinds = 4;
// "own", "parent_daughter", "sprout", "vessel" (CSV columns and JSON keys).
constexpr const char* kFusionKindNames[kFusionKinds] = {"own", "parent_daughter", "sprout", "vessel"};

// What made a segment: an initial sprout, a move onto a free node, a pass (a move onto an occupied
// node that did not fuse: the tip carries on), a branch (a new tip on a free neighbour), or an
// anastomosis (the segment ends on an occupied node and its tip stops), one value per FusionKind.
enum class SegmentKind : unsigned char {
  Sprout = 0,
  Move = 1,
  Pass = 2,
  Branch = 3,
  FuseOwn = 4,
  FuseParentDaughter = 5,
  FuseSprout = 6,
  FuseVessel = 7
};
constexpr int kFuseBase = 4;
constexpr bool is_fusion(SegmentKind k) { return static_cast<int>(k) >= kFuseBase; }
constexpr FusionKind fusion_kind(SegmentKind k) { return static_cast<FusionKind>(static_cast<int>(k) - kFuseBase); }
constexpr SegmentKind fusion_segment(int kind) { return static_cast<SegmentKind>(kFuseBase + kind); }

}  // namespace simkit::angio
