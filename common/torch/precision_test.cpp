#include "torch/precision.h"

#include <ATen/Context.h>
#include <gtest/gtest.h>

namespace ca {
namespace {

// LibTorch's own defaults are what PyTorch's users get: the mode named pytorch must be exactly them. A fresh Context
// holds them whatever this process has set since.
TEST(PrecisionTest, PytorchModeIsLibTorchsDefault) {
  at::Context defaults;
  EXPECT_FALSE(defaults.allowTF32CuBLAS());
  EXPECT_EQ(defaults.float32MatmulPrecision(), at::Float32MatmulPrecision::HIGHEST);
  EXPECT_TRUE(defaults.allowTF32CuDNN());
  Tf32Scope scope(Tf32Mode::pytorch);
  EXPECT_EQ(at::globalContext().allowTF32CuBLAS(), defaults.allowTF32CuBLAS());
  EXPECT_EQ(at::globalContext().float32MatmulPrecision(), defaults.float32MatmulPrecision());
  EXPECT_EQ(at::globalContext().allowTF32CuDNN(), defaults.allowTF32CuDNN());
  EXPECT_EQ(current_tf32_mode(), "pytorch");
}

TEST(PrecisionTest, EachModeSetsBothFlagsAndNamesItself) {
  struct Case {
    Tf32Mode mode;
    bool cublas, cudnn;
  };
  for (const Case& c :
       {Case{Tf32Mode::none, false, false}, Case{Tf32Mode::pytorch, false, true}, Case{Tf32Mode::all, true, true}}) {
    Tf32Scope scope(c.mode);
    EXPECT_EQ(at::globalContext().allowTF32CuBLAS(), c.cublas) << tf32_mode_name(c.mode);
    EXPECT_EQ(at::globalContext().allowTF32CuDNN(), c.cudnn) << tf32_mode_name(c.mode);
    EXPECT_EQ(current_tf32_mode(), tf32_mode_name(c.mode));
  }
}

TEST(PrecisionTest, ScopesNestAndRestoreTheOuterMode) {
  Tf32Scope outer(Tf32Mode::pytorch);
  {
    Tf32Scope strict(Tf32Mode::none);
    {
      Tf32Scope timed(Tf32Mode::all);
      EXPECT_EQ(current_tf32_mode(), "all");
    }
    EXPECT_EQ(current_tf32_mode(), "none");
  }
  EXPECT_EQ(current_tf32_mode(), "pytorch");
}

TEST(PrecisionTest, SetModeStaysUntilSetAgain) {
  Tf32Scope outer(Tf32Mode::all);  // puts back what the process had
  set_tf32_mode(Tf32Mode::none);
  EXPECT_EQ(current_tf32_mode(), "none");
  set_tf32_mode(Tf32Mode::pytorch);
  EXPECT_EQ(current_tf32_mode(), "pytorch");
}

TEST(PrecisionTest, ModeNamesRoundTripAndUnknownNamesAreRefused) {
  for (Tf32Mode mode : {Tf32Mode::none, Tf32Mode::pytorch, Tf32Mode::all}) {
    EXPECT_EQ(parse_tf32_mode(tf32_mode_name(mode)), mode);
  }
  EXPECT_EQ(parse_tf32_mode("fp32"), std::nullopt);
  EXPECT_EQ(parse_tf32_mode(""), std::nullopt);
}

}  // namespace
}  // namespace ca
