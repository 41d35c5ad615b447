// Each program's interpreter output must equal the direct LibTorch call on
// the same tensors, bit for bit; and every validation error must name its field.
#include "torch/interpreter.h"

#include <functional>
#include <limits>

#include <gtest/gtest.h>

#include "torch/tensors.h"

namespace ca {
namespace {

using Tensors = std::vector<at::Tensor>;

struct Case {
  const char* name;
  const char* program;
  std::function<Tensors(const Tensors&)> direct;
};

// Shorthands for the inputs the cases use.
#define F32(name, ...) R"({"name":")" name R"(","dtype":"float32","shape":[)" #__VA_ARGS__ "]}"
#define I64(name, high, ...) \
  R"({"name":")" name R"(","dtype":"int64","shape":[)" #__VA_ARGS__ R"(],"init":{"randint":[0,)" #high "]}}"

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"linear", R"({"inputs":[)" F32("x", 8, 16) R"(],"params":[)" F32("w", 32, 16) "," F32("b", 32) R"(],
         "nodes":[{"op":"aten::linear","args":["%x","%w","%b"],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::linear(t[0], t[1], t[2])}; }},
      {"linear_no_bias", R"({"inputs":[)" F32("x", 4, 16) R"(],"params":[)" F32("w", 8, 16) R"(],
         "nodes":[{"op":"aten::linear","args":["%x","%w",null],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::linear(t[0], t[1])}; }},
      // Non-finite literals (docs/IR.md): a causal mask's -inf, and a float list holding one (issue 24 item 4).
      {"masked_fill_neg_inf", R"({"inputs":[)" F32("x", 4, 4) R"(],
         "nodes":[{"op":"aten::gt.Scalar","args":["%x",0.5],"out":["m"]},
                  {"op":"aten::masked_fill.Scalar","args":["%x","%m",{"float":"-inf"}],"out":["f"]},
                  {"op":"aten::exp","args":["%f"],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) {
         return Tensors{at::exp(t[0].masked_fill(t[0] > 0.5, -std::numeric_limits<double>::infinity()))};
       }},
      {"clamp_inf_nan", R"({"inputs":[)" F32("x", 8) R"(],
         "nodes":[{"op":"aten::clamp","args":["%x",{"float":"-inf"},{"float":"inf"}],"out":["c"]},
                  {"op":"aten::nan_to_num","args":["%c",{"float":"nan"},1.0,-1.0],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) {
         const double inf = std::numeric_limits<double>::infinity();
         return Tensors{
             at::nan_to_num(at::clamp(t[0], -inf, inf), std::numeric_limits<double>::quiet_NaN(), 1.0, -1.0)};
       }},
      // An op that returns nothing (torch.export records `.to` as _assert_tensor_metadata): `out` is empty.
      {"returns_nothing", R"({"inputs":[)" F32("x", 3, 4) R"(],
         "nodes":[{"op":"aten::_assert_tensor_metadata","args":["%x"],"kwargs":{"dtype":"float32"},"out":[]},
                  {"op":"aten::relu","args":["%x"],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::relu(t[0])}; }},
      {"matmul", R"({"inputs":[)" F32("a", 2, 4, 8) "," F32("b", 8, 5) R"(],
         "nodes":[{"op":"aten::matmul","args":["%a","%b"],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::matmul(t[0], t[1])}; }},
      {"bmm", R"({"inputs":[)" F32("a", 3, 4, 8) "," F32("b", 3, 8, 5) R"(],
         "nodes":[{"op":"aten::bmm","args":["%a","%b"],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::bmm(t[0], t[1])}; }},
      {"addmm_scalars", R"({"inputs":[)" F32("c", 4, 5) "," F32("a", 4, 8) "," F32("b", 8, 5) R"(],
         "nodes":[{"op":"aten::addmm","args":["%c","%a","%b"],"kwargs":{"beta":0.5,"alpha":2},"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::addmm(t[0], t[1], t[2], 0.5, 2)}; }},
      {"conv1d", R"({"inputs":[)" F32("x", 2, 3, 32) R"(],"params":[)" F32("w", 4, 3, 5) "," F32("b", 4) R"(],
         "nodes":[{"op":"aten::conv1d","args":["%x","%w","%b",[2],[1]],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::conv1d(t[0], t[1], t[2], {2}, {1})}; }},
      {"conv2d_int_expands",
       R"({"inputs":[)" F32("x", 2, 3, 16, 16) R"(],"params":[)" F32("w", 8, 3, 3, 3) "," F32("b", 8) R"(],
         "nodes":[{"op":"aten::conv2d","args":["%x","%w","%b",1,1],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) {
         return Tensors{at::conv2d(t[0], t[1], t[2], {1, 1}, {1, 1})};
       }},
      {"conv3d_groups", R"({"inputs":[)" F32("x", 1, 4, 6, 6, 6) R"(],"params":[)" F32("w", 4, 2, 3, 3, 3) R"(],
         "nodes":[{"op":"aten::conv3d","args":["%x","%w",null],"kwargs":{"groups":2},"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) {
         return Tensors{at::conv3d(t[0], t[1], {}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 2)};
       }},
      {"conv_transpose1d", R"({"inputs":[)" F32("x", 2, 4, 10) R"(],"params":[)" F32("w", 4, 3, 3) R"(],
         "nodes":[{"op":"aten::conv_transpose1d","args":["%x","%w",null,[2]],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::conv_transpose1d(t[0], t[1], {}, {2})}; }},
      {"conv_transpose2d",
       R"({"inputs":[)" F32("x", 2, 4, 8, 8) R"(],"params":[)" F32("w", 4, 6, 3, 3) "," F32("b", 6) R"(],
         "nodes":[{"op":"aten::conv_transpose2d.input","args":["%x","%w","%b",[2,2],[1,1],[1,1]],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) {
         return Tensors{at::conv_transpose2d(t[0], t[1], t[2], {2, 2}, {1, 1}, {1, 1})};
       }},
      {"conv_transpose3d", R"({"inputs":[)" F32("x", 1, 2, 4, 4, 4) R"(],"params":[)" F32("w", 2, 3, 3, 3, 3) R"(],
         "nodes":[{"op":"aten::conv_transpose3d.input","args":["%x","%w",null,2],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) {
         return Tensors{at::conv_transpose3d(t[0], t[1], {}, {2, 2, 2})};
       }},
      {"max_pool1d", R"({"inputs":[)" F32("x", 2, 3, 16) R"(],
         "nodes":[{"op":"aten::max_pool1d","args":["%x",[3],[2],[1]],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::max_pool1d(t[0], {3}, {2}, {1})}; }},
      {"max_pool2d", R"({"inputs":[)" F32("x", 2, 3, 16, 16) R"(],
         "nodes":[{"op":"aten::max_pool2d","args":["%x",2],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) {
         return Tensors{at::max_pool2d(t[0], {2, 2})};
       }},
      {"max_pool3d_dilation", R"({"inputs":[)" F32("x", 1, 2, 9, 9, 9) R"(],
         "nodes":[{"op":"aten::max_pool3d","args":["%x",3,2,1,2],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) {
         return Tensors{at::max_pool3d(t[0], {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {2, 2, 2})};
       }},
      {"avg_pool1d", R"({"inputs":[)" F32("x", 2, 3, 16) R"(],
         "nodes":[{"op":"aten::avg_pool1d","args":["%x",[4]],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::avg_pool1d(t[0], {4})}; }},
      {"avg_pool2d", R"({"inputs":[)" F32("x", 2, 3, 16, 16) R"(],
         "nodes":[{"op":"aten::avg_pool2d","args":["%x",[3,3],[2,2],[1,1],true,false],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) {
         return Tensors{at::avg_pool2d(t[0], {3, 3}, {2, 2}, {1, 1}, true, false)};
       }},
      {"avg_pool3d", R"({"inputs":[)" F32("x", 1, 2, 8, 8, 8) R"(],
         "nodes":[{"op":"aten::avg_pool3d","args":["%x",2],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) {
         return Tensors{at::avg_pool3d(t[0], {2, 2, 2})};
       }},
      {"adaptive_avg_pool2d", R"({"inputs":[)" F32("x", 2, 3, 15, 15) R"(],
         "nodes":[{"op":"aten::adaptive_avg_pool2d","args":["%x",[4,4]],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) {
         return Tensors{at::adaptive_avg_pool2d(t[0], {4, 4})};
       }},
      {"batch_norm_eval", R"({"inputs":[)" F32("x", 4, 8, 5, 5) R"(],"params":[)" F32("g", 8) "," F32("b", 8) R"(,
         {"name":"mean","dtype":"float32","shape":[8],"init":"randn"},{"name":"var","dtype":"float32","shape":[8],"init":{"uniform":[0.5,2]}}],
         "nodes":[{"op":"aten::batch_norm","args":["%x","%g","%b","%mean","%var",false,0.1,1e-5,true],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::batch_norm(t[0], t[1], t[2], t[3], t[4], false, 0.1, 1e-5, true)}; }},
      {"layer_norm", R"({"inputs":[)" F32("x", 4, 10, 16) R"(],"params":[)" F32("g", 16) "," F32("b", 16) R"(],
         "nodes":[{"op":"aten::layer_norm","args":["%x",[16],"%g","%b",1e-5],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::layer_norm(t[0], {16}, t[1], t[2], 1e-5)}; }},
      {"group_norm", R"({"inputs":[)" F32("x", 2, 8, 6, 6) R"(],"params":[)" F32("g", 8) "," F32("b", 8) R"(],
         "nodes":[{"op":"aten::group_norm","args":["%x",4,"%g","%b"],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::group_norm(t[0], 4, t[1], t[2])}; }},
      {"instance_norm", R"({"inputs":[)" F32("x", 2, 3, 8, 8) R"(],
         "nodes":[{"op":"aten::instance_norm","args":["%x",null,null,null,null,true,0.1,1e-5,false],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::instance_norm(t[0], {}, {}, {}, {}, true, 0.1, 1e-5, false)}; }},
      {"rms_norm", R"({"inputs":[)" F32("x", 4, 32) R"(],"params":[)" F32("g", 32) R"(],
         "nodes":[{"op":"aten::rms_norm","args":["%x",[32],"%g",1e-6],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::rms_norm(t[0], {32}, t[1], 1e-6)}; }},
      {"softmax", R"({"inputs":[)" F32("x", 8, 33) R"(],
         "nodes":[{"op":"aten::softmax.int","args":["%x",-1],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::softmax(t[0], -1)}; }},
      {"log_softmax", R"({"inputs":[)" F32("x", 8, 33) R"(],
         "nodes":[{"op":"aten::log_softmax.int","args":["%x",1],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::log_softmax(t[0], 1)}; }},
      {"sum_dims", R"({"inputs":[)" F32("x", 4, 5, 6) R"(],
         "nodes":[{"op":"aten::sum.dim_IntList","args":["%x",[1,2],true],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) {
         return Tensors{at::sum(t[0], {1, 2}, true)};
       }},
      {"mean_dim", R"({"inputs":[)" F32("x", 4, 5, 6) R"(],
         "nodes":[{"op":"aten::mean.dim","args":["%x",[0]],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::mean(t[0], {0})}; }},
      {"var_correction_kwarg", R"({"inputs":[)" F32("x", 4, 50) R"(],
         "nodes":[{"op":"aten::var.correction","args":["%x",[1]],"kwargs":{"correction":0,"keepdim":true},"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::var(t[0], at::IntArrayRef{1}, c10::Scalar(0), true)}; }},
      {"max_dim_two_outputs", R"({"inputs":[)" F32("x", 6, 7) R"(],
         "nodes":[{"op":"aten::max.dim","args":["%x",1],"out":["v","i"]}],"outputs":["v","i"]})",
       [](const Tensors& t) {
         auto [v, i] = at::max(t[0], 1);
         return Tensors{v, i};
       }},
      {"amax_argmin_logsumexp", R"({"inputs":[)" F32("x", 6, 7) R"(],
         "nodes":[{"op":"aten::amax","args":["%x",[0]],"out":["a"]},{"op":"aten::argmin","args":["%x",1],"out":["b"]},
                  {"op":"aten::logsumexp","args":["%x",[1]],"out":["c"]}],"outputs":["a","b","c"]})",
       [](const Tensors& t) {
         return Tensors{at::amax(t[0], {0}), at::argmin(t[0], 1), at::logsumexp(t[0], {1})};
       }},
      {"cumsum_cumprod", R"({"inputs":[)" F32("x", 4, 9) R"(],
         "nodes":[{"op":"aten::cumsum","args":["%x",1],"out":["a"]},{"op":"aten::cumprod","args":["%x",0],"out":["b"]}],"outputs":["a","b"]})",
       [](const Tensors& t) {
         return Tensors{at::cumsum(t[0], 1), at::cumprod(t[0], 0)};
       }},
      {"add_alpha_mul_broadcast", R"({"inputs":[)" F32("x", 4, 8) "," F32("y", 8) R"(],
         "nodes":[{"op":"aten::add.Tensor","args":["%x","%y"],"kwargs":{"alpha":2.5},"out":["s"]},
                  {"op":"aten::mul.Tensor","args":["%s","%y"],"out":["m"]}],"outputs":["m"]})",
       [](const Tensors& t) { return Tensors{at::mul(at::add(t[0], t[1], 2.5), t[1])}; }},
      {"div_floor_mode_string",
       R"({"inputs":[)" F32("x", 16) R"(,{"name":"d","dtype":"float32","shape":[16],"init":{"uniform":[0.5,3]}}],
         "nodes":[{"op":"aten::div.Tensor_mode","args":["%x","%d"],"kwargs":{"rounding_mode":"floor"},"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::div(t[0], t[1], "floor")}; }},
      {"int_vs_float_scalar", R"({"inputs":[)" F32("x", 16) R"(],
         "nodes":[{"op":"aten::pow.Tensor_Scalar","args":["%x",2],"out":["a"]},{"op":"aten::mul.Scalar","args":["%x",0.5],"out":["b"]},
                  {"op":"aten::rsub.Scalar","args":["%x",1],"out":["c"]}],"outputs":["a","b","c"]})",
       [](const Tensors& t) {
         return Tensors{at::pow(t[0], c10::Scalar(int64_t(2))), at::mul(t[0], c10::Scalar(0.5)),
                        at::rsub(t[0], c10::Scalar(int64_t(1)))};
       }},
      {"clamp_scalars", R"({"inputs":[)" F32("x", 64) R"(],
         "nodes":[{"op":"aten::clamp","args":["%x",-0.5,0.5],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::clamp(t[0], -0.5, 0.5)}; }},
      {"gelu_tanh", R"({"inputs":[)" F32("x", 64) R"(],
         "nodes":[{"op":"aten::gelu","args":["%x"],"kwargs":{"approximate":"tanh"},"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::gelu(t[0], "tanh")}; }},
      {"activation_chain", R"({"inputs":[)" F32("x", 4, 64) R"(],
         "nodes":[{"op":"aten::relu","args":["%x"],"out":["a"]},{"op":"aten::leaky_relu","args":["%x",0.1],"out":["b"]},
                  {"op":"aten::hardtanh","args":["%x",-0.5,0.5],"out":["c"]},{"op":"aten::elu","args":["%x"],"out":["d"]},
                  {"op":"aten::selu","args":["%x"],"out":["e"]},{"op":"aten::silu","args":["%x"],"out":["f"]},
                  {"op":"aten::mish","args":["%x"],"out":["g"]},{"op":"aten::softplus","args":["%x",1,20],"out":["h"]},
                  {"op":"aten::sigmoid","args":["%x"],"out":["i"]},{"op":"aten::tanh","args":["%x"],"out":["j"]},
                  {"op":"aten::hardswish","args":["%x"],"out":["k"]},{"op":"aten::hardsigmoid","args":["%x"],"out":["l"]}],
         "outputs":["a","b","c","d","e","f","g","h","i","j","k","l"]})",
       [](const Tensors& t) {
         const auto& x = t[0];
         return Tensors{at::relu(x),
                        at::leaky_relu(x, 0.1),
                        at::hardtanh(x, -0.5, 0.5),
                        at::elu(x),
                        at::selu(x),
                        at::silu(x),
                        at::mish(x),
                        at::softplus(x, 1, 20),
                        at::sigmoid(x),
                        at::tanh(x),
                        at::hardswish(x),
                        at::hardsigmoid(x)};
       }},
      {"mse_and_smooth_l1_loss", R"({"inputs":[)" F32("a", 8, 10) "," F32("b", 8, 10) R"(],
         "nodes":[{"op":"aten::mse_loss","args":["%a","%b",1],"out":["m"]},{"op":"aten::smooth_l1_loss","args":["%a","%b",2,0.5],"out":["s"]}],
         "outputs":["m","s"]})",
       [](const Tensors& t) {
         return Tensors{at::mse_loss(t[0], t[1], 1), at::smooth_l1_loss(t[0], t[1], 2, 0.5)};
       }},
      {"cross_entropy_int_target", R"({"inputs":[)" F32("x", 16, 10) "," I64("t", 10, 16) R"(],
         "nodes":[{"op":"aten::cross_entropy_loss","args":["%x","%t"],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::cross_entropy_loss(t[0], t[1])}; }},
      {"kl_div_and_bce_logits",
       R"({"inputs":[)" F32("a", 8, 10) R"(,{"name":"p","dtype":"float32","shape":[8,10],"init":"rand"}],
         "nodes":[{"op":"aten::kl_div","args":["%a","%p",1],"kwargs":{"log_target":false},"out":["k"]},
                  {"op":"aten::binary_cross_entropy_with_logits","args":["%a","%p"],"out":["b"]}],"outputs":["k","b"]})",
       [](const Tensors& t) {
         return Tensors{at::kl_div(t[0], t[1], 1, false), at::binary_cross_entropy_with_logits(t[0], t[1])};
       }},
      {"sdpa_causal", R"({"inputs":[)" F32("q", 2, 4, 16, 8) "," F32("k", 2, 4, 16, 8) "," F32("v", 2, 4, 16, 8) R"(],
         "nodes":[{"op":"aten::scaled_dot_product_attention","args":["%q","%k","%v"],"kwargs":{"is_causal":true},"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::scaled_dot_product_attention(t[0], t[1], t[2], {}, 0.0, true)}; }},
      {"cat_stack_tensor_lists", R"({"inputs":[)" F32("a", 2, 3) "," F32("b", 2, 3) R"(],
         "nodes":[{"op":"aten::cat","args":[["%a","%b"],1],"out":["c"]},{"op":"aten::stack","args":[["%a","%b","%a"]],"out":["s"]}],
         "outputs":["c","s"]})",
       [](const Tensors& t) {
         return Tensors{at::cat({t[0], t[1]}, 1), at::stack({t[0], t[1], t[0]})};
       }},
      {"split_list_element", R"({"inputs":[)" F32("x", 6, 4) R"(],
         "nodes":[{"op":"aten::split.Tensor","args":["%x",2],"out":["parts"]},
                  {"op":"aten::add.Tensor","args":["%parts[0]","%parts[2]"],"out":["y"]},
                  {"op":"aten::cat","args":["%parts"],"out":["z"]}],"outputs":["y","z"]})",
       [](const Tensors& t) {
         auto p = at::split(t[0], 2);
         return Tensors{at::add(p[0], p[2]), at::cat(p)};
       }},
      {"shape_ops", R"({"inputs":[)" F32("x", 2, 3, 4) R"(],
         "nodes":[{"op":"aten::permute","args":["%x",[2,0,1]],"out":["p"]},{"op":"aten::reshape","args":["%p",[4,6]],"out":["r"]},
                  {"op":"aten::transpose.int","args":["%r",0,1],"out":["t"]},{"op":"aten::unsqueeze","args":["%t",0],"out":["u"]},
                  {"op":"aten::flip","args":["%u",[2]],"out":["f"]},{"op":"aten::contiguous","args":["%f"],"out":["c"]}],"outputs":["c"]})",
       [](const Tensors& t) {
         return Tensors{t[0].permute({2, 0, 1}).reshape({4, 6}).transpose(0, 1).unsqueeze(0).flip({2}).contiguous()};
       }},
      {"to_dtype_and_memory_format", R"({"inputs":[)" F32("x", 2, 3, 4, 4) R"(],
         "nodes":[{"op":"aten::to.dtype","args":["%x","float64"],"out":["d"]},
                  {"op":"aten::contiguous","args":["%x"],"kwargs":{"memory_format":"channels_last"},"out":["c"]}],"outputs":["d","c"]})",
       [](const Tensors& t) {
         return Tensors{t[0].to(at::kDouble), t[0].contiguous(at::MemoryFormat::ChannelsLast)};
       }},
      {"index_select_gather", R"({"inputs":[)" F32("x", 10, 6) "," I64("i", 10, 4) R"(],
         "nodes":[{"op":"aten::index_select","args":["%x",0,"%i"],"out":["s"]}],"outputs":["s"]})",
       [](const Tensors& t) { return Tensors{at::index_select(t[0], 0, t[1])}; }},
      {"where_bool_input",
       R"({"inputs":[{"name":"m","dtype":"bool","shape":[5,5]},)" F32("a", 5, 5) "," F32("b", 5, 5) R"(],
         "nodes":[{"op":"aten::where.self","args":["%m","%a","%b"],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::where(t[0], t[1], t[2])}; }},
      {"einsum", R"({"inputs":[)" F32("a", 3, 4, 5) "," F32("b", 3, 5, 6) R"(],
         "nodes":[{"op":"aten::einsum","args":["bij,bjk->bik",["%a","%b"]],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) {
         return Tensors{at::einsum("bij,bjk->bik", {t[0], t[1]})};
       }},
      {"triu_and_zeros_like", R"({"inputs":[)" F32("x", 6, 6) R"(],
         "nodes":[{"op":"aten::triu","args":["%x",1],"out":["u"]},{"op":"aten::zeros_like","args":["%x"],"out":["z"]},
                  {"op":"aten::add.Tensor","args":["%u","%z"],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::add(at::triu(t[0], 1), at::zeros_like(t[0]))}; }},
      {"vector_norm", R"({"inputs":[)" F32("x", 4, 16) R"(],
         "nodes":[{"op":"aten::linalg_vector_norm","args":["%x",2,[1],true],"out":["y"]}],"outputs":["y"]})",
       [](const Tensors& t) { return Tensors{at::linalg_vector_norm(t[0], 2, at::IntArrayRef{1}, true)}; }},
      {"fp16_and_bf16",
       R"({"inputs":[{"name":"a","dtype":"float16","shape":[8,8]},{"name":"b","dtype":"bfloat16","shape":[8,8]}],
         "nodes":[{"op":"aten::mm","args":["%a","%a"],"out":["x"]},{"op":"aten::mul.Tensor","args":["%b","%b"],"out":["y"]}],"outputs":["x","y"]})",
       [](const Tensors& t) {
         return Tensors{at::mm(t[0], t[0]), at::mul(t[1], t[1])};
       }},
  };
  return all;
}

// CA_TEST_DEVICE=cuda runs the same comparisons on the GPU (tests/gpu/run.sh).
at::Device test_device() {
  const char* name = std::getenv("CA_TEST_DEVICE");
  return at::Device(name != nullptr ? name : "cpu");
}

}  // namespace

class InterpreterMatchesLibTorch : public ::testing::TestWithParam<Case> {};

TEST_P(InterpreterMatchesLibTorch, BitForBit) {
  const Case& c = GetParam();
  auto program = parse_program(Json::parse(c.program));
  ASSERT_TRUE(program) << program.error();
  auto interpreter = Interpreter::create(*program);
  ASSERT_TRUE(interpreter) << interpreter.error();
  Tensors tensors = make_tensors(*program, 42, test_device());
  auto outputs = interpreter->run(tensors);
  ASSERT_TRUE(outputs) << outputs.error();
  Tensors expected = c.direct(tensors);
  ASSERT_EQ(outputs->size(), expected.size());
  auto shapes = interpreter->infer_shapes(test_device());
  ASSERT_TRUE(shapes) << shapes.error();
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& got = (*outputs)[i];
    EXPECT_EQ(got.scalar_type(), expected[i].scalar_type()) << "output " << i;
    EXPECT_EQ(got.sizes(), expected[i].sizes()) << "output " << i;
    EXPECT_EQ((*shapes)[i].sizes, expected[i].sizes().vec()) << "meta shape of output " << i;
    EXPECT_EQ((*shapes)[i].dtype, expected[i].scalar_type()) << "meta dtype of output " << i;
    EXPECT_TRUE(at::equal(got, expected[i])) << "output " << i << " differs from the direct call";
    // A comparison that could never fail proves nothing: outputs must vary.
    if (at::isFloatingType(got.scalar_type()) && got.numel() > 1) {
      EXPECT_GT(got.to(at::kDouble).std().item<double>(), 0.0) << "output " << i << " is constant";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Programs, InterpreterMatchesLibTorch,
                         ::testing::ValuesIn(std::vector<Case>(cases().begin(), cases().end())),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(InterpreterTest, HasAtLeastFortyComparedPrograms) {
  size_t compared = std::count_if(cases().begin(), cases().end(), [](const Case& c) { return c.direct != nullptr; });
  EXPECT_GE(compared, 40u);
}

}  // namespace ca
