// How a tensor's values are drawn (documented in docs/IR.md). Apart from program.h so that the CUDA generator,
// which nvcc compiles as C++17 without the IR's parser, can name the distributions too.
#pragma once

namespace ca {

enum class Dist { rand, randn, uniform, normal, kaiming_uniform, ones, zeros, randint, constant, file };

}  // namespace ca
