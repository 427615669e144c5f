#pragma once
// main() of a GoogleTest binary that runs alone and under mpirun itself (dist_comm_test,
// dist_hybrid_ranks_test): MPI started first, only rank 0 prints (the others' results still decide
// mpirun's exit code), MPI ended last.
#include <gtest/gtest.h>

#include "simkit/core/dist.hpp"

int main(int argc, char** argv) {
  simkit::dist::init(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (!simkit::dist::Comm::world().root()) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int rc = RUN_ALL_TESTS();
  simkit::dist::finalize();
  return rc;
}
