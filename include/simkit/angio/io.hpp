#pragma once
// angio files: VTK ImageData snapshots (.vti + .pvd), series.csv, checkpoints, quick-look images.
// Every writer is atomic (temporary file + rename, core/output.hpp); every reader names the file,
// line or field and what was expected in a UserError (exit code 2).
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simkit/angio/angio.hpp"

namespace simkit::angio {

// VTK XML ImageData, binary appended raw data (header_type UInt64, LittleEndian), point arrays
// "n", "f", "c" as Float32 (float) or Float64 (double); Origin 0 0 0, Spacing h h h,
// WholeExtent 0 nx-1 0 ny-1 0 nz-1. ParaView opens it directly.
template <class T>
void write_vti(const std::filesystem::path& path, const Grid& grid, const Fields<T>& fields);

// Reads n, f, c from a .vti written by write_vti or by ParaView/VTK with uncompressed data:
// appended raw or base64, or inline ascii/base64 DataArrays; Float32 or Float64; header_type
// UInt32 or UInt64. The grid comes from WholeExtent and Spacing (equal spacing required).
// Missing arrays, compressed data, size mismatches and non-finite values (named with their node
// i, j, l) are UserErrors.
struct LoadedFields {
  Grid grid;
  Fields<double> fields;
};
LoadedFields read_vti(const std::filesystem::path& path);

// ParaView collection of the snapshots: <DataSet timestep="t" file="..."/> per entry (file
// relative to the .pvd's directory).
struct SnapshotEntry {
  double t = 0;
  std::string file;
};
void write_pvd(const std::filesystem::path& path, const std::vector<SnapshotEntry>& entries);

// series.csv: header step,t,int_n,int_f,int_c,min_n,max_n,min_f,max_f,min_c,max_c, one row per
// SeriesRow, numbers with 17 significant digits (exact round trip).
void write_series_csv(const std::filesystem::path& path, const std::vector<SeriesRow>& rows);
std::vector<SeriesRow> read_series_csv(const std::filesystem::path& path);

// Problem <-> JSON (every field; doubles round-trip exactly). from_json reports unknown or
// ill-typed keys as UserErrors naming `source`.
nlohmann::json problem_to_json(const Problem& problem);
Problem problem_from_json(const nlohmann::json& json, const std::string& source);

// Checkpoint: magic line, a JSON header (problem, step, seed, simkit version, checksum), then the
// raw n, f, c arrays in the problem's precision. Restarting from it reproduces the uninterrupted
// run bit for bit (docs/angio.md). read_checkpoint verifies magic, sizes and checksum.
struct Checkpoint {
  Problem problem;
  std::int64_t step = 0;
  std::uint64_t seed = 0;
  Fields<float> fp32;                             // filled when problem.precision == Fp32
  Fields<double> fp64;                            // filled when problem.precision == Fp64
  nlohmann::json run = nlohmann::json::object();  // the writer's run settings (output cadence, force)
};
template <class T>
void write_checkpoint(const std::filesystem::path& path, const Problem& problem, std::int64_t step, std::uint64_t seed,
                      const Fields<T>& fields, const nlohmann::json& run = nlohmann::json::object());
Checkpoint read_checkpoint(const std::filesystem::path& path);

// Quick look for people: `slice.png` (the mid-plane l = nz/2 of n, f and c side by side, each with
// its own colour scale), `mip_n.png` (maximum of n along z; 3D only) and `slice.svg` (the PNGs with
// titles and colour bars labelled min/max) in `dir`. Returns the files written.
template <class T>
std::vector<std::filesystem::path> write_quicklook(const std::filesystem::path& dir, const Grid& grid,
                                                   const Fields<T>& fields);
// The same from what a distributed run gathers: n, f and c on the plane l = nz/2, and the maximum of
// n along z (unused in 2D); max_into() folds one slab's maxima (NaN kept) into `mip`.
std::vector<std::filesystem::path> write_quicklook(const std::filesystem::path& dir, const Grid& grid,
                                                   const std::array<std::vector<double>, 3>& mid_plane,
                                                   const std::vector<double>& mip_n);
void max_into(std::vector<double>& mip, const std::vector<double>& plane);

// A z-slab of a distributed run's snapshot: planes [z_first, z_last] of the global `grid` as one
// piece of a parallel image (a .vti whose extent is the piece's), from `local`, whose plane 0 is
// global plane `local_z0`; and the .pvti naming every piece (sources relative to the .pvti).
template <class T>
void write_vti_piece(const std::filesystem::path& path, const Grid& grid, int z_first, int z_last,
                     const Fields<T>& local, int local_z0);
struct VtiPiece {
  int z_first = 0, z_last = 0;
  std::string source;
};
void write_pvti(const std::filesystem::path& path, const Grid& grid, Precision precision,
                const std::vector<VtiPiece>& pieces);

}  // namespace simkit::angio
