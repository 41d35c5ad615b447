#include "verify/verify.h"

#include <gtest/gtest.h>

namespace ca {
namespace {

Json failed(const std::string& stage, const std::string& message) {
  return {{"ok", false}, {"stage", stage}, {"message", message}};
}

TEST(SaysOutOfMemory, ReadsCudasAndLibTorchsWordsForIt) {
  EXPECT_TRUE(says_out_of_memory("trial 1/5: cudaMalloc failed: out of memory"));
  EXPECT_TRUE(says_out_of_memory("CUDA out of memory. Tried to allocate 20.00 GiB"));
  EXPECT_TRUE(says_out_of_memory("CUDA_ERROR_OUT_OF_MEMORY"));
  EXPECT_FALSE(says_out_of_memory("trial 2/5: the candidate returned 2"));
  EXPECT_FALSE(says_out_of_memory(""));
}

TEST(ANeighbourMayCause, ATimeoutOrAnOutOfMemoryAtLoadOrInACall) {
  EXPECT_TRUE(a_neighbour_may_cause(failed("timeout", "trial 1/5 did not finish within 20 s")));
  EXPECT_TRUE(a_neighbour_may_cause(failed("load", "cudaSetDevice: out of memory")));
  EXPECT_TRUE(a_neighbour_may_cause(failed("run", "trial 3/5: CUDA error: out of memory")));
  EXPECT_TRUE(a_neighbour_may_cause(failed("launch", "trial 1/5: out of memory")));
}

TEST(ANeighbourMayCause, NotWhatTheCandidateAloneDecides) {
  EXPECT_FALSE(a_neighbour_may_cause({{"ok", true}, {"stage", ""}, {"message", ""}}));
  // A wrong answer or a refused build is the candidate's whatever its words say.
  EXPECT_FALSE(a_neighbour_may_cause(failed("compare", "trial 1/5, output 0: out of memory is no excuse")));
  EXPECT_FALSE(a_neighbour_may_cause(failed("static", "out of memory")));
  EXPECT_FALSE(a_neighbour_may_cause(failed("compile", "nvcc: out of memory")));
  EXPECT_FALSE(a_neighbour_may_cause(failed("run", "trial 2/5: crashed: killed by signal 11")));
}

}  // namespace
}  // namespace ca
