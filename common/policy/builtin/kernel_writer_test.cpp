// The kernel writer: coverage and reasons from the IR, and kernels that pass the real ca-verify on the cpu backend
// (and compile with nvcc for sm_90 where the CUDA toolkit is installed).
#include "policy/builtin/kernel_writer.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "util/subprocess.h"

namespace ca {
namespace {

namespace fs = std::filesystem;

Program program_of(const std::string& text) {
  auto program = parse_program(Json::parse(text));
  if (!program) throw std::runtime_error(program.error());
  return *program;
}

// A temporary directory removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    char pattern[] = "/tmp/ca-builtin-XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TempDir() { fs::remove_all(path); }
};

// Runs build/bin/ca-verify on one candidate per program and returns each verify record.
std::vector<Json> verify_written(const std::vector<std::pair<std::string, std::string>>& tasks, int variant,
                                 Backend backend = Backend::cpu) {
  const bool cuda = backend == Backend::cuda;
  TempDir dir;
  std::ofstream candidates(dir.path / "candidates.jsonl");
  for (const auto& [name, text] : tasks) {
    auto written = write_kernel(program_of(text), backend, variant);
    EXPECT_TRUE(written.has_value()) << name << ": " << (written ? "" : written.error()[0].reason);
    if (!written) continue;
    Json task = {{"kind", "task"}, {"id", name}, {"source", "hand"},
                 {"level", 1},     {"seed", 7},  {"program", Json::parse(text)}};
    if (const char* dump = std::getenv("CA_BUILTIN_DUMP"); dump != nullptr) {  // for reading a failing kernel
      for (const auto& [path, source] : written->files)
        std::ofstream(fs::path(dump) / (name + "." + std::to_string(variant) + (cuda ? ".cu" : ".cpp"))) << source;
    }
    Json files = Json::object();
    for (const auto& [path, source] : written->files) files[path] = source;
    Json candidate = {
        {"kind", "candidate"}, {"id", name}, {"task_id", name}, {"task", task}, {"backend", cuda ? "cuda" : "cpu"},
        {"files", files}};
    candidates << candidate.dump() << "\n";
  }
  candidates.close();
  SubprocessOptions options;
  options.timeout = std::chrono::minutes(20);
  auto result = run_subprocess({std::string(CA_BIN_DIR) + "/ca-verify", "-q", "--trials", "2", "-j", cuda ? "8" : "1",
                                (dir.path / "candidates.jsonl").string()},
                               options);
  EXPECT_TRUE(result.has_value());
  std::vector<Json> verdicts;
  if (!result) return verdicts;
  std::istringstream lines(result->out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) verdicts.push_back(Json::parse(line));
  }
  EXPECT_EQ(verdicts.size(), tasks.size()) << result->err;
  return verdicts;
}

// One program per pattern, each with broadcasting, scalar args and fusion where the pattern has them.
const std::vector<std::pair<std::string, std::string>> k_pattern_tasks = {
    {"elementwise_chain",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[64,33,17]},{"name":"y","dtype":"float32","shape":[33,1]}],
         "nodes":[{"op":"aten::mul.Tensor","args":["%x","%y"],"out":["a"]},
                  {"op":"aten::leaky_relu","args":["%a",0.2],"out":["b"]},
                  {"op":"aten::gelu","args":["%b"],"kwargs":{"approximate":"tanh"},"out":["c"]},
                  {"op":"aten::add.Scalar","args":["%c",1.5],"kwargs":{"alpha":2},"out":["d"]},
                  {"op":"aten::hardtanh","args":["%d",-1.0,4.0],"out":["e"]}],
         "outputs":["e"]})"},
    {"softmax_sum",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[16,40,24]}],
         "nodes":[{"op":"aten::exp","args":["%x"],"out":["e"]},
                  {"op":"aten::softmax.int","args":["%e",1],"out":["s"]},
                  {"op":"aten::sum.dim_IntList","args":["%s",[0,2]],"kwargs":{"keepdim":true},"out":["r"]},
                  {"op":"aten::log_softmax.int","args":["%x",-1],"out":["l"]},
                  {"op":"aten::mul.Tensor","args":["%l","%r"],"out":["y"]}],
         "outputs":["y","r"]})"},
    {"reductions",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[12,30,20]}],
         "nodes":[{"op":"aten::logsumexp","args":["%x",[1]],"out":["a"]},
                  {"op":"aten::amax","args":["%x",[2]],"kwargs":{"keepdim":true},"out":["b"]},
                  {"op":"aten::linalg_vector_norm","args":["%x",2,[1,2]],"out":["c"]},
                  {"op":"aten::var.correction","args":["%x",[0]],"out":["v"]},
                  {"op":"aten::mean.dim","args":["%b",[1]],"out":["m"]},
                  {"op":"aten::add.Tensor","args":["%a","%m"],"out":["y"]}],
         "outputs":["y","c","v"]})"},
    {"norms",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[4,8,6,5]}],
         "params":[{"name":"g","dtype":"float32","shape":[5]},{"name":"w","dtype":"float32","shape":[8]},
                   {"name":"b","dtype":"float32","shape":[8],"init":{"uniform":[-0.5,0.5]}},
                   {"name":"rm","dtype":"float32","shape":[8],"init":{"uniform":[-0.2,0.2]}},
                   {"name":"rv","dtype":"float32","shape":[8],"init":{"uniform":[0.5,1.5]}}],
         "nodes":[{"op":"aten::layer_norm","args":["%x",[5],"%g",null,1e-5],"out":["l"]},
                  {"op":"aten::group_norm","args":["%l",4,"%w","%b",1e-5],"out":["gn"]},
                  {"op":"aten::batch_norm","args":["%gn","%w","%b","%rm","%rv",false,0.1,1e-5,false],"out":["bn"]},
                  {"op":"aten::rms_norm","args":["%bn",[6,5],null,null],"out":["r"]},
                  {"op":"aten::instance_norm","args":["%r",null,null,null,null,true,0.1,1e-5,false],"out":["i"]},
                  {"op":"aten::batch_norm","args":["%i","%w",null,null,null,true,0.1,1e-5,false],"out":["y"]}],
         "outputs":["y"]})"},
    {"linear_epilogue",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[3,37,70]}],
         "params":[{"name":"w","dtype":"float32","shape":[45,70]},{"name":"b","dtype":"float32","shape":[45]}],
         "nodes":[{"op":"aten::linear","args":["%x","%w","%b"],"out":["t"]},
                  {"op":"aten::silu","args":["%t"],"out":["s"]},
                  {"op":"aten::mul.Scalar","args":["%s",0.5],"out":["y"]}],
         "outputs":["y"]})"},
    {"matmuls",
     R"({"inputs":[{"name":"a","dtype":"float32","shape":[5,19,23]},{"name":"b","dtype":"float32","shape":[23,31]},
                   {"name":"c","dtype":"float32","shape":[5,23,13]},{"name":"d","dtype":"float32","shape":[19,13]},
                   {"name":"e","dtype":"float32","shape":[19,1]},{"name":"m1","dtype":"float32","shape":[19,23]},
                   {"name":"m2","dtype":"float32","shape":[23,13]}],
         "nodes":[{"op":"aten::matmul","args":["%a","%b"],"out":["ab"]},
                  {"op":"aten::bmm","args":["%a","%c"],"out":["ac"]},
                  {"op":"aten::transpose.int","args":["%ab",1,2],"out":["abt"]},
                  {"op":"aten::baddbmm","args":["%e","%ab","%abt"],"kwargs":{"beta":0.5,"alpha":0.25},"out":["g"]},
                  {"op":"aten::sum.dim_IntList","args":["%g",[2]],"out":["gs"]},
                  {"op":"aten::addmm","args":["%d","%m1","%m2"],"kwargs":{"alpha":-1.5},"out":["bad"]},
                  {"op":"aten::relu","args":["%ac"],"out":["y"]}],
         "outputs":["y","gs","bad"]})"},
    {"views_and_more_pointwise",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[6,10,8]},{"name":"s","dtype":"float32","shape":[10]}],
         "params":[{"name":"a","dtype":"float32","shape":[10]}],
         "nodes":[{"op":"aten::glu","args":["%x",-1],"out":["g"]},
                  {"op":"aten::prelu","args":["%g","%a"],"out":["p"]},
                  {"op":"aten::renorm","args":["%p",2,1,1.5],"out":["r"]},
                  {"op":"aten::movedim.int","args":["%r",1,2],"out":["m"]},
                  {"op":"aten::remainder.Scalar","args":["%m",0.7],"out":["q"]},
                  {"op":"aten::logaddexp","args":["%q","%m"],"out":["l"]},
                  {"op":"aten::expand","args":["%s",[4,10]],"out":["e"]},
                  {"op":"aten::log_sigmoid","args":["%e"],"out":["ls"]},
                  {"op":"aten::div.Scalar_mode","args":["%l",1.5],"kwargs":{"rounding_mode":"floor"},"out":["dv"]},
                  {"op":"aten::mul.Tensor","args":["%l","%ls"],"out":["y"]}],
         "outputs":["y","ls","dv"]})"},
    {"vector_products",
     R"({"inputs":[{"name":"m","dtype":"float32","shape":[24,40]},{"name":"v","dtype":"float32","shape":[40]},
                   {"name":"c","dtype":"float32","shape":[24]}],
         "nodes":[{"op":"aten::mv","args":["%m","%v"],"out":["mv"]},
                  {"op":"aten::addmv","args":["%c","%m","%v"],"kwargs":{"beta":0.5},"out":["am"]},
                  {"op":"aten::dot","args":["%v","%v"],"out":["d"]},
                  {"op":"aten::outer","args":["%mv","%am"],"out":["o"]},
                  {"op":"aten::add.Tensor","args":["%o","%d"],"out":["y"]},
                  {"op":"aten::tril","args":["%m",3],"out":["lo"]},
                  {"op":"aten::t","args":["%m"],"out":["mt"]},
                  {"op":"aten::triu","args":["%mt"],"out":["up"]},
                  {"op":"aten::mm","args":["%lo","%up"],"out":["p"]},
                  {"op":"aten::tril","args":["%p",-1],"out":["pl"]}],
         "outputs":["y","pl"]})"},
    {"convolutions",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[2,4,9,11]},{"name":"v","dtype":"float32","shape":[2,3,5,4,6]},
                   {"name":"s","dtype":"float32","shape":[3,4,13]}],
         "params":[{"name":"w","dtype":"float32","shape":[6,2,3,2]},{"name":"b","dtype":"float32","shape":[6]},
                   {"name":"wt","dtype":"float32","shape":[6,2,3,3]},{"name":"bt","dtype":"float32","shape":[4]},
                   {"name":"w3","dtype":"float32","shape":[5,3,2,3,2]},{"name":"wt3","dtype":"float32","shape":[3,2,2,2,3]},
                   {"name":"w1","dtype":"float32","shape":[5,4,3]},{"name":"wt1","dtype":"float32","shape":[4,6,4]}],
         "nodes":[{"op":"aten::conv2d","args":["%x","%w","%b",[2,1],[1,2],[1,2],2],"out":["c"]},
                  {"op":"aten::relu","args":["%c"],"out":["y"]},
                  {"op":"aten::conv_transpose2d.input","args":["%c","%wt","%bt",[2,3],[1,0],[1,2],2,[1,1]],"out":["t"]},
                  {"op":"aten::conv3d","args":["%v","%w3",null,1,[1,0,1],[2,1,1]],"out":["c3"]},
                  {"op":"aten::conv_transpose3d.input","args":["%v","%wt3",null,[2,1,2],[0,1,1],[1,0,0]],"out":["t3"]},
                  {"op":"aten::conv1d","args":["%s","%w1",null,[2],[1]],"out":["c1"]},
                  {"op":"aten::conv_transpose1d","args":["%s","%wt1",null,[3],[2],[1],1,[2]],"out":["t1"]},
                  {"op":"aten::conv2d.padding","args":["%x","%w",null,1,"same",2,2],"out":["cs"]}],
         "outputs":["y","t","c3","t3","c1","t1","cs"]})"},
    {"pooling",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[2,3,10,9]},{"name":"v","dtype":"float32","shape":[2,2,7,6,9]},
                   {"name":"s","dtype":"float32","shape":[2,3,17]}],
         "nodes":[{"op":"aten::max_pool2d","args":["%x",[3,2],[2,2],[1,1],[1,2],true],"out":["m"]},
                  {"op":"aten::avg_pool2d","args":["%x",[3,3],[2,2],[1,1],true,false],"out":["a"]},
                  {"op":"aten::avg_pool3d","args":["%v",[3,2,3],[2,2,2],[1,1,1]],"out":["a3"]},
                  {"op":"aten::avg_pool3d","args":["%v",[2,2,2],[],0,false,true,3],"out":["d3"]},
                  {"op":"aten::max_pool3d","args":["%v",[2,3,2],[1,2,3],[1,1,0],[2,1,1]],"out":["m3"]},
                  {"op":"aten::max_pool1d","args":["%s",[4],[3],[2],[2]],"out":["m1"]},
                  {"op":"aten::avg_pool1d","args":["%s",[5],[2],[2]],"out":["a1"]},
                  {"op":"aten::adaptive_avg_pool2d","args":["%x",[4,3]],"out":["g"]},
                  {"op":"aten::adaptive_avg_pool3d","args":["%v",[1,1,1]],"out":["g3"]},
                  {"op":"aten::tanh","args":["%m"],"out":["y"]}],
         "outputs":["y","a","a3","d3","m3","m1","a1","g","g3"]})"},
    {"scans_and_eval_batch_norm",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[4,6,10]}],
         "params":[{"name":"w","dtype":"float32","shape":[6]},{"name":"b","dtype":"float32","shape":[6]},
                   {"name":"rm","dtype":"float32","shape":[6],"init":{"uniform":[-0.2,0.2]}},
                   {"name":"rv","dtype":"float32","shape":[6],"init":{"uniform":[0.5,1.5]}},
                   {"name":"batches","dtype":"int64","shape":[]}],
         "nodes":[{"op":"aten::_native_batch_norm_legit_no_training","args":["%x","%w","%b","%rm","%rv",0.1,1e-5],
                   "out":["bn","bn_mean","bn_invstd"]},
                  {"op":"aten::cumsum","args":["%bn",2],"out":["cs"]},
                  {"op":"aten::mul.Scalar","args":["%x",0.3],"out":["xs"]},
                  {"op":"aten::cumprod","args":["%xs",1],"out":["cp"]},
                  {"op":"aten::sigmoid","args":["%cs"],"out":["y"]}],
         "outputs":["y","cp"]})"},
    // KernelBench's reverse cumsum (L1-91) is flip, cumsum, flip.
    {"flip_slice_select",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[4,6,10]}],
         "nodes":[{"op":"aten::flip","args":["%x",[2]],"out":["f"]},
                  {"op":"aten::cumsum","args":["%f",2],"out":["cs"]},
                  {"op":"aten::flip","args":["%cs",[-1]],"out":["rev"]},
                  {"op":"aten::flip","args":["%x",[0,1]],"out":["f01"]},
                  {"op":"aten::slice.Tensor","args":["%f01",2,-7,null,2],"out":["s"]},
                  {"op":"aten::select.int","args":["%s",1,-2],"out":["sel"]},
                  {"op":"aten::tanh","args":["%sel"],"out":["y"]},
                  {"op":"aten::slice.Tensor","args":["%x",0,1,100],"out":["tail"]},
                  {"op":"aten::sum.dim_IntList","args":["%tail",[1]],"out":["ts"]}],
         "outputs":["rev","y","ts"]})"},
    // KernelBench's exclusive cumsum (L1-92) is cat(zeros_like(select ... unsqueeze), x), sliced, then cumsum.
    {"cat_stack_fill",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[4,6,10]},{"name":"h","dtype":"float32","shape":[4,3,10]},
                   {"name":"m","dtype":"float32","shape":[3,5]},{"name":"n","dtype":"float32","shape":[4,5]}],
         "params":[{"name":"w","dtype":"float32","shape":[5,2]}],
         "nodes":[{"op":"aten::select.int","args":["%x",1,0],"out":["first"]},
                  {"op":"aten::unsqueeze","args":["%first",1],"out":["u"]},
                  {"op":"aten::zeros_like","args":["%u"],"out":["z"]},
                  {"op":"aten::cat","args":[["%z","%x"],1],"out":["c"]},
                  {"op":"aten::slice.Tensor","args":["%c",0,null,-1],"out":["head"]},
                  {"op":"aten::cumsum","args":["%head",1],"out":["ex"]},
                  {"op":"aten::tanh","args":["%h"],"out":["th"]},
                  {"op":"aten::cat","args":[["%x","%th","%x"],-2],"out":["c3"]},
                  {"op":"aten::mul.Scalar","args":["%x",2.0],"out":["x2"]},
                  {"op":"aten::ones_like","args":["%x"],"out":["one"]},
                  {"op":"aten::stack","args":[["%x","%x2","%one"],-1],"out":["st"]},
                  {"op":"aten::full_like","args":["%h",0.5],"out":["half"]},
                  {"op":"aten::stack","args":[["%h","%half"]],"out":["st0"]},
                  {"op":"aten::concat","args":[["%m","%n"]],"out":["mn"]},
                  {"op":"aten::mm","args":["%mn","%w"],"out":["p"]},
                  {"op":"aten::relu","args":["%p"],"out":["y"]}],
         "outputs":["ex","c3","st","st0","y"]})"},
    // The stack family (each part brought to a rank, then a cat), narrow, flipud/fliplr and aliases.
    {"stacks_and_aliases",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[4,6]},{"name":"y","dtype":"float32","shape":[4,6]},
                   {"name":"v","dtype":"float32","shape":[6]}],
         "nodes":[{"op":"aten::flipud","args":["%x"],"out":["ud"]},
                  {"op":"aten::fliplr","args":["%ud"],"out":["lr"]},
                  {"op":"aten::narrow","args":["%lr",1,-4,3],"out":["n"]},
                  {"op":"aten::narrow_copy","args":["%x",0,1,2],"out":["nc"]},
                  {"op":"aten::hstack","args":[["%x","%n"]],"out":["h"]},
                  {"op":"aten::hstack","args":[["%v","%v"]],"out":["hv"]},
                  {"op":"aten::vstack","args":[["%x","%v","%nc"]],"out":["vs"]},
                  {"op":"aten::row_stack","args":[["%v","%y"]],"out":["rs"]},
                  {"op":"aten::dstack","args":[["%x","%y"]],"out":["ds"]},
                  {"op":"aten::column_stack","args":[["%v","%v"]],"out":["cs"]},
                  {"op":"aten::atleast_3d","args":["%v"],"out":["a3"]},
                  {"op":"aten::broadcast_to","args":["%a3",[2,6,3]],"out":["bt"]},
                  {"op":"aten::logaddexp2","args":["%x","%y"],"out":["la"]},
                  {"op":"aten::absolute","args":["%y"],"out":["ab"]},
                  {"op":"aten::xlogy.Scalar_Other","args":["%ab",2.5],"out":["xl"]},
                  {"op":"aten::clip","args":["%xl",-0.5,0.5],"out":["cl"]},
                  {"op":"aten::positive","args":["%cl"],"out":["po"]},
                  {"op":"aten::fix","args":["%h"],"out":["fx"]},
                  {"op":"aten::special_log_softmax","args":["%la",1],"out":["ls"]},
                  {"op":"aten::add.Tensor","args":["%ls","%po"],"out":["out"]}],
         "outputs":["out","fx","hv","vs","rs","ds","cs","bt"]})"},
    // Windows over an input without a batch dim (PyTorch's unbatched [C, *spatial]), and linear with a 1-d weight.
    {"unbatched_windows_and_vector_linear",
     R"({"inputs":[{"name":"s","dtype":"float32","shape":[3,17]},{"name":"x","dtype":"float32","shape":[3,10,9]},
                   {"name":"v","dtype":"float32","shape":[2,7,6,9]},{"name":"z","dtype":"float32","shape":[2,5,8]}],
         "params":[{"name":"w1","dtype":"float32","shape":[4,3,3]},{"name":"w","dtype":"float32","shape":[8]},
                   {"name":"b","dtype":"float32","shape":[],"init":{"uniform":[-0.5,0.5]}}],
         "nodes":[{"op":"aten::avg_pool1d","args":["%s",[5],[2],[2]],"out":["a1"]},
                  {"op":"aten::adaptive_avg_pool1d","args":["%s",[4]],"out":["g1"]},
                  {"op":"aten::conv1d","args":["%s","%w1",null,[2],[1]],"out":["c1"]},
                  {"op":"aten::max_pool2d","args":["%x",[3,2],[2,2],[1,1],[1,1],false],"out":["m2"]},
                  {"op":"aten::avg_pool3d","args":["%v",[2,2,2]],"out":["a3"]},
                  {"op":"aten::linear","args":["%z","%w","%b"],"out":["l"]},
                  {"op":"aten::relu","args":["%l"],"out":["y"]}],
         "outputs":["a1","g1","c1","m2","a3","y"]})"},
    // A chain over one step's output that a later node's step reads must be stored after the first step: renorm's
    // scale (a reduction) then a convolution, a mean subtracted then a product.
    {"chain_after_a_step_feeds_a_step",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[2,4,9,9]},{"name":"m","dtype":"float32","shape":[6,5]}],
         "params":[{"name":"w","dtype":"float32","shape":[3,4,3,3]},{"name":"b","dtype":"float32","shape":[3]},
                   {"name":"p","dtype":"float32","shape":[5,7]}],
         "nodes":[{"op":"aten::renorm","args":["%x",2.0,1,0.5],"out":["r"]},
                  {"op":"aten::conv2d.padding","args":["%r","%w","%b",2],"kwargs":{"dilation":1,"groups":1},"out":["c"]},
                  {"op":"aten::mean.dim","args":["%m",[1],true],"out":["mu"]},
                  {"op":"aten::sub.Tensor","args":["%m","%mu"],"out":["centred"]},
                  {"op":"aten::mm","args":["%centred","%p"],"out":["y"]}],
         "outputs":["c","y"]})"},
    // scaled_dot_product_attention: plain, with a float mask, causal (also with fewer queries than keys), a scale.
    {"attention",
     R"({"inputs":[{"name":"q","dtype":"float32","shape":[2,3,8,16]},{"name":"k","dtype":"float32","shape":[2,3,10,16]},
                   {"name":"v","dtype":"float32","shape":[2,3,10,12]},{"name":"mask","dtype":"float32","shape":[8,10]}],
         "nodes":[{"op":"aten::scaled_dot_product_attention","args":["%q","%k","%v"],"out":["a"]},
                  {"op":"aten::scaled_dot_product_attention","args":["%q","%k","%v","%mask"],"out":["m"]},
                  {"op":"aten::scaled_dot_product_attention","args":["%k","%k","%k",null,0.0,true],"out":["c"]},
                  {"op":"aten::scaled_dot_product_attention","args":["%q","%k","%v",null,0.0,true],"kwargs":{"scale":0.3},
                   "out":["s"]},
                  {"op":"aten::relu","args":["%s"],"out":["y"]}],
         "outputs":["a","m","c","y"]})"},
    // Views read at computed coordinates: repeat, tile, nearest upsampling (sizes and scale factors), pixel
    // shuffle and unshuffle, diagonal.
    {"gathers",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[2,3,5]},{"name":"img","dtype":"float32","shape":[2,8,6,4]},
                   {"name":"vol","dtype":"float32","shape":[1,2,3,4,5]}],
         "nodes":[{"op":"aten::repeat","args":["%x",[2,1,3,2]],"out":["rep"]},
                  {"op":"aten::tile","args":["%x",[2]],"out":["til"]},
                  {"op":"aten::upsample_nearest1d.vec","args":["%x",null,[2.0]],"out":["u1"]},
                  {"op":"aten::upsample_nearest1d.vec","args":["%x",[7],null],"out":["u1s"]},
                  {"op":"aten::upsample_nearest2d","args":["%img",[9,10]],"out":["u2"]},
                  {"op":"aten::upsample_nearest2d.vec","args":["%img",null,[1.5,2.5]],"out":["u2f"]},
                  {"op":"aten::upsample_nearest3d.vec","args":["%vol",null,[2.0,1.0,0.5]],"out":["u3"]},
                  {"op":"aten::pixel_shuffle","args":["%img",2],"out":["ps"]},
                  {"op":"aten::pixel_unshuffle","args":["%img",2],"out":["pu"]},
                  {"op":"aten::diagonal","args":["%img",1,2,3],"out":["dg"]},
                  {"op":"aten::diagonal_copy","args":["%img",-2,-1,1],"out":["dn"]},
                  {"op":"aten::sigmoid","args":["%ps"],"out":["y"]}],
         "outputs":["rep","til","u1","u1s","u2","u2f","u3","y","pu","dg","dn"]})"},
    // torch.linalg's norms: vector norms over all dims, one dim, two dims (Frobenius), and the matrix norms ord +-1
    // and +-inf (a sum along one dim, then its max or min), dims in either order, keepdim or not.
    {"linalg_norms",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[3,4,5]}],
         "nodes":[{"op":"aten::linalg_norm","args":["%x"],"out":["all"]},
                  {"op":"aten::linalg_norm","args":["%x",{"float":"inf"},[1,2]],"out":["mi"]},
                  {"op":"aten::linalg_norm","args":["%x",-1,[2,1],true],"out":["m1"]},
                  {"op":"aten::linalg_norm.ord_str","args":["%x","fro",[0,1]],"out":["fro"]},
                  {"op":"aten::linalg_norm","args":["%x",3,[1]],"out":["v3"]},
                  {"op":"aten::linalg_matrix_norm","args":["%x",1],"out":["c1"]},
                  {"op":"aten::linalg_matrix_norm","args":["%x",{"float":"-inf"},[0,2],true],"out":["ri"]},
                  {"op":"aten::linalg_matrix_norm.str_ord","args":["%x"],"out":["mf"]}],
         "outputs":["all","mi","m1","fro","v3","c1","ri","mf"]})"},
    // Interpolating upsampling: linear in 1 to 3 dims and bicubic, by size and by scale factor, up and down, with
    // half-pixel centres and with align_corners (bicubic's outer taps clamped at the edges).
    {"interpolations",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[2,3,5]},{"name":"img","dtype":"float32","shape":[2,3,6,4]},
                   {"name":"vol","dtype":"float32","shape":[1,2,3,4,5]}],
         "nodes":[{"op":"aten::upsample_linear1d.vec","args":["%x",null,false,[2.0]],"out":["l1"]},
                  {"op":"aten::upsample_linear1d","args":["%x",[7],true],"out":["l1a"]},
                  {"op":"aten::upsample_bilinear2d","args":["%img",[9,10],false],"out":["b2"]},
                  {"op":"aten::upsample_bilinear2d.vec","args":["%img",null,false,[1.5,0.5]],"out":["b2f"]},
                  {"op":"aten::upsample_bilinear2d.vec","args":["%img",[3,7],true,null],"out":["b2a"]},
                  {"op":"aten::upsample_trilinear3d.vec","args":["%vol",null,false,[2.0,1.0,0.5]],"out":["t3"]},
                  {"op":"aten::upsample_bicubic2d.vec","args":["%img",[9,10],false,null],"out":["c2"]},
                  {"op":"aten::upsample_bicubic2d","args":["%img",[4,3],true],"out":["c2a"]},
                  {"op":"aten::upsample_bicubic2d.vec","args":["%img",null,false,[2.0,1.5]],"out":["c2f"]},
                  {"op":"aten::tanh","args":["%c2f"],"out":["y"]}],
         "outputs":["l1","l1a","b2","b2f","b2a","t3","c2","c2a","y"]})"},
    // Two-operand einsums as one GEMM: KernelBench's L1-11, a batch letter, a transposed operand, attention scores,
    // an implicit output, a permuted output.
    {"einsum",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[2,3,5,8]},{"name":"w","dtype":"float32","shape":[8,6]},
                   {"name":"p","dtype":"float32","shape":[3,4,7]},{"name":"q","dtype":"float32","shape":[3,7,5]},
                   {"name":"r","dtype":"float32","shape":[9,7]},{"name":"t","dtype":"float32","shape":[5,7]},
                   {"name":"u","dtype":"float32","shape":[7,4]},{"name":"s","dtype":"float32","shape":[2,3,4,6]}],
         "nodes":[{"op":"aten::einsum","args":["bijl,lk->bijk",["%x","%w"]],"out":["e1"]},
                  {"op":"aten::einsum","args":["bij,bjk->bik",["%p","%q"]],"out":["e2"]},
                  {"op":"aten::einsum","args":["ij,kj -> ik",["%r","%t"]],"out":["e3"]},
                  {"op":"aten::einsum","args":["bhqd,bhkd->bhqk",["%s","%s"]],"out":["e4"]},
                  {"op":"aten::einsum","args":["ij,jk",["%r","%u"]],"out":["e5"]},
                  {"op":"aten::einsum","args":["bij,bjk->kbi",["%p","%q"]],"out":["e6"]},
                  {"op":"aten::relu","args":["%e6"],"out":["y"]}],
         "outputs":["e1","e2","e3","e4","e5","y"]})"},
    // Long rows: on cuda a block per unit (y's reductions, softmax and norms, var, mean over dim 0) or a split over
    // blocks (x's sum, z's amax and norm); on cpu the same loops as any reduction.
    {"long_reductions",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[3,70000]},{"name":"y","dtype":"float32","shape":[300,400]},
                   {"name":"z","dtype":"float32","shape":[131072]}],
         "nodes":[{"op":"aten::sum.dim_IntList","args":["%x",[1]],"out":["a"]},
                  {"op":"aten::var.correction","args":["%x",[1]],"out":["v"]},
                  {"op":"aten::logsumexp","args":["%y",[1]],"out":["l"]},
                  {"op":"aten::amax","args":["%z",[]],"out":["m"]},
                  {"op":"aten::linalg_vector_norm","args":["%z",1],"out":["n1"]},
                  {"op":"aten::mean.dim","args":["%y",[0]],"out":["c"]},
                  {"op":"aten::softmax.int","args":["%y",1],"out":["sm"]},
                  {"op":"aten::layer_norm","args":["%y",[400],null,null,1e-5],"out":["ln"]},
                  {"op":"aten::rms_norm","args":["%sm",[400],null,null],"out":["rn"]}],
         "outputs":["a","v","l","m","n1","c","ln","rn"]})"},
    // Integer and bool inputs as arithmetic operands beside a float32 one (KernelBench's L1-93 masked cumsum).
    {"integer_operands",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[8,16]},
                   {"name":"m","dtype":"bool","shape":[8,16],"init":{"randint":[0,2]}},
                   {"name":"k","dtype":"int64","shape":[16],"init":{"randint":[-5,5]}},
                   {"name":"h","dtype":"int32","shape":[8,1],"init":{"randint":[0,3]}}],
         "nodes":[{"op":"aten::mul.Tensor","args":["%x","%m"],"out":["xm"]},
                  {"op":"aten::cumsum","args":["%xm",1],"out":["c"]},
                  {"op":"aten::add.Tensor","args":["%c","%k"],"kwargs":{"alpha":0.5},"out":["ck"]},
                  {"op":"aten::sub.Tensor","args":["%h","%ck"],"out":["y"]}],
         "outputs":["y"]})"},
    // int64 indices: argmax/argmin over a dim or the whole tensor, max.dim's indices, indices as an operand.
    {"arg_extremes",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[6,300,5]},{"name":"w","dtype":"float32","shape":[300,5]}],
         "nodes":[{"op":"aten::argmax","args":["%x",1,true],"out":["am"]},
                  {"op":"aten::argmin","args":["%x"],"out":["an"]},
                  {"op":"aten::max.dim","args":["%x",2],"out":["mv","mi"]},
                  {"op":"aten::argmin","args":["%x",0],"out":["a0"]},
                  {"op":"aten::mul.Tensor","args":["%a0","%w"],"out":["y"]}],
         "outputs":["am","an","mv","mi","y"]})"},
    // Class-index losses: cross entropy (mean, weighted none, sum with an ignored class, over [N, C, d]) and nll.
    {"class_losses",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[8,5]},
                   {"name":"t","dtype":"int64","shape":[8],"init":{"randint":[0,5]}},
                   {"name":"z","dtype":"float32","shape":[4,3,6]},
                   {"name":"k","dtype":"int64","shape":[4,6],"init":{"randint":[0,3]}}],
         "params":[{"name":"w","dtype":"float32","shape":[5],"init":{"uniform":[0.5,1.5]}}],
         "nodes":[{"op":"aten::cross_entropy_loss","args":["%x","%t"],"out":["ce"]},
                  {"op":"aten::cross_entropy_loss","args":["%x","%t","%w",0],"out":["cw"]},
                  {"op":"aten::cross_entropy_loss","args":["%x","%t","%w",1,2],"out":["cm"]},
                  {"op":"aten::cross_entropy_loss","args":["%z","%k",null,2,1],"out":["cz"]},
                  {"op":"aten::log_softmax.int","args":["%x",1],"out":["ls"]},
                  {"op":"aten::nll_loss","args":["%ls","%t"],"out":["nl"]}],
         "outputs":["ce","cw","cm","cz","nl"]})"},
    // The convolution ops ATen's decompositions name (thnn, dilated, the generic one), logcumsumexp, and
    // cumulative_trapezoid (x 1-d along a dim, x of y's shape, a scalar dx).
    {"other_convolutions_and_logcumsumexp",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[2,3,9,8]},{"name":"v","dtype":"float32","shape":[2,2,5,6,4]},
                   {"name":"s","dtype":"float32","shape":[4,37]},{"name":"p","dtype":"float32","shape":[9]}],
         "params":[{"name":"w","dtype":"float32","shape":[4,3,3,2]},{"name":"b","dtype":"float32","shape":[4]},
                   {"name":"wt","dtype":"float32","shape":[3,2,2,2]}],
         "nodes":[{"op":"aten::thnn_conv2d","args":["%x","%w",[3,2],"%b",[2,1],[1,0]],"out":["t"]},
                  {"op":"aten::slow_conv_dilated2d","args":["%x","%w",[3,2],null,[1,1],[2,1],[2,3]],"out":["d"]},
                  {"op":"aten::convolution","args":["%x","%w","%b",[1,2],[0,1],[1,1],false,[0,0],1],"out":["g"]},
                  {"op":"aten::convolution","args":["%x","%wt",null,[2,2],[1,0],[1,1],true,[1,0],1],"out":["gt"]},
                  {"op":"aten::logcumsumexp","args":["%s",1],"out":["l"]},
                  {"op":"aten::logcumsumexp","args":["%s",0],"out":["l0"]},
                  {"op":"aten::cumulative_trapezoid.x","args":["%x","%p"],"kwargs":{"dim":2},"out":["tx"]},
                  {"op":"aten::cumulative_trapezoid.x","args":["%s","%s"],"out":["ts"]},
                  {"op":"aten::cumulative_trapezoid.dx","args":["%v"],"kwargs":{"dx":0.5,"dim":0},"out":["td"]}],
         "outputs":["t","d","g","gt","l","l0","tx","ts","td"]})"},
    // ATen has slow_conv3d for the CPU only, so no cuda task holds it (the cuda test leaves it out).
    {"slow_conv3d",
     R"({"inputs":[{"name":"v","dtype":"float32","shape":[2,2,5,6,4]}],
         "params":[{"name":"w3","dtype":"float32","shape":[3,2,2,3,2]}],
         "nodes":[{"op":"aten::slow_conv3d","args":["%v","%w3",[2,3,2],null,[1,2,1],[0,1,1]],"out":["c3"]}],
         "outputs":["c3"]})"},
    // Special functions the kernel defines where used: Bessel I0/I1 (both branches, scaled or not), digamma (the
    // reflection below 0, the recurrence, the series), lgamma, angle, ldexp, nextafter.
    {"special_functions",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[4,96]},
                   {"name":"k","dtype":"int32","shape":[96],"init":{"randint":[-4,5]}}],
         "nodes":[{"op":"aten::mul.Scalar","args":["%x",6.0],"out":["s"]},
                  {"op":"aten::i0","args":["%s"],"out":["a"]},
                  {"op":"aten::special_i0e","args":["%s"],"out":["b"]},
                  {"op":"aten::special_i1","args":["%s"],"out":["c"]},
                  {"op":"aten::special_i1e","args":["%s"],"out":["d"]},
                  {"op":"aten::digamma","args":["%s"],"out":["e"]},
                  {"op":"aten::lgamma","args":["%s"],"out":["f"]},
                  {"op":"aten::angle","args":["%x"],"out":["g"]},
                  {"op":"aten::ldexp.Tensor","args":["%x","%k"],"out":["h"]},
                  {"op":"aten::nextafter","args":["%x","%s"],"out":["n"]},
                  {"op":"aten::special_modified_bessel_i1","args":["%x"],"out":["mi"]}],
         "outputs":["a","b","c","d","e","f","g","h","n","mi"]})"},
    // Padding (constant with a crop, reflect, replicate, circular) and rot90, views read at computed coordinates.
    {"padding_and_rot90",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[2,3,5,6]},{"name":"v","dtype":"float32","shape":[3,7]}],
         "nodes":[{"op":"aten::constant_pad_nd","args":["%x",[1,2,0,-1],0.5],"out":["p1"]},
                  {"op":"aten::pad","args":["%x",[2,1,1,1],"reflect"],"out":["p2"]},
                  {"op":"aten::pad","args":["%x",[1,1,2,0],"replicate"],"out":["p3"]},
                  {"op":"aten::pad","args":["%x",[2,3,1,0],"circular"],"out":["p4"]},
                  {"op":"aten::replication_pad1d","args":["%v",[2,3]],"out":["p5"]},
                  {"op":"aten::reflection_pad2d","args":["%x",[1,2,3,1]],"out":["p6"]},
                  {"op":"aten::rot90","args":["%x",1,[2,3]],"out":["r1"]},
                  {"op":"aten::rot90","args":["%x",3,[1,3]],"out":["r3"]},
                  {"op":"aten::rot90","args":["%x",2,[0,1]],"out":["r2"]},
                  {"op":"aten::rot90","args":["%x",-1,[3,2]],"out":["rm"]}],
         "outputs":["p1","p2","p3","p4","p5","p6","r1","r3","r2","rm"]})"},
    {"losses_and_distances",
     R"({"inputs":[{"name":"p","dtype":"float32","shape":[16,24]},{"name":"t","dtype":"float32","shape":[16,24]},
                   {"name":"q","dtype":"float32","shape":[16,24],"init":{"uniform":[0.05,0.95]}},
                   {"name":"u","dtype":"float32","shape":[16,24],"init":{"uniform":[0.05,0.95]}},
                   {"name":"a","dtype":"float32","shape":[8,12]},{"name":"b","dtype":"float32","shape":[8,12]},
                   {"name":"n","dtype":"float32","shape":[8,12]},{"name":"s","dtype":"float32","shape":[8]},
                   {"name":"r","dtype":"float32","shape":[1,12]}],
         "params":[{"name":"w","dtype":"float32","shape":[24],"init":{"uniform":[0.5,1.5]}}],
         "nodes":[{"op":"aten::smooth_l1_loss","args":["%p","%t",1,0.5],"out":["l1"]},
                  {"op":"aten::huber_loss","args":["%p","%t",2,0.5],"out":["l2"]},
                  {"op":"aten::mse_loss","args":["%p","%t",0],"out":["l3"]},
                  {"op":"aten::log","args":["%q"],"out":["lq"]},
                  {"op":"aten::kl_div","args":["%lq","%u",2],"out":["l4"]},
                  {"op":"aten::triplet_margin_loss","args":["%a","%b","%n"],"out":["l5"]},
                  {"op":"aten::triplet_margin_loss","args":["%a","%b","%n",0.5,1.0,1e-6,true,0],"out":["l6"]},
                  {"op":"aten::cosine_similarity","args":["%a","%r",1],"out":["cs"]},
                  {"op":"aten::pairwise_distance","args":["%a","%n",3.0,1e-6,true],"out":["pd"]},
                  {"op":"aten::binary_cross_entropy","args":["%q","%q","%w",1],"out":["b1"]},
                  {"op":"aten::binary_cross_entropy_with_logits","args":["%p","%q",null,"%w",2],"out":["b2"]},
                  {"op":"aten::soft_margin_loss","args":["%p","%t",1],"out":["sm"]},
                  {"op":"aten::hinge_embedding_loss","args":["%p","%t",1.0,0],"out":["he"]},
                  {"op":"aten::margin_ranking_loss","args":["%a","%b","%n",0.1,1],"out":["mr"]},
                  {"op":"aten::cosine_embedding_loss","args":["%a","%b","%s",0.2,0],"out":["ce"]},
                  {"op":"aten::poisson_nll_loss","args":["%p","%q",true,true,1e-8,1],"out":["pn"]},
                  {"op":"aten::dist","args":["%p","%t",3],"out":["d"]},
                  {"op":"aten::kl_div","args":["%p","%t",0],"kwargs":{"log_target":true},"out":["l7"]},
                  {"op":"aten::broadcast_tensors","args":[["%a","%r"]],"out":["bt"]},
                  {"op":"aten::l1_loss","args":["%bt[0]","%bt[1]",0],"out":["bl"]}],
         "outputs":["l1","l2","l3","l4","l5","l6","cs","pd","b1","b2","sm","he","mr","ce","pn","d","l7","bl"]})"},
    // bool values: comparisons and tests as outputs and operands, logical ops, selects (an -inf literal among them),
    // and a bool made float32 by an op that promotes it (exp, sigmoid).
    {"comparisons_and_selects",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[6,40]},{"name":"y","dtype":"float32","shape":[40]},
                   {"name":"m","dtype":"bool","shape":[6,40],"init":{"randint":[0,2]}}],
         "nodes":[{"op":"aten::gt.Scalar","args":["%x",0.25],"out":["g"]},
                  {"op":"aten::le.Tensor","args":["%x","%y"],"out":["l"]},
                  {"op":"aten::logical_and","args":["%g","%m"],"out":["a"]},
                  {"op":"aten::logical_xor","args":["%l","%a"],"out":["xo"]},
                  {"op":"aten::where.self","args":["%xo","%x","%y"],"out":["w"]},
                  {"op":"aten::where.ScalarOther","args":["%l","%x",{"float":"-inf"}],"out":["wi"]},
                  {"op":"aten::exp","args":["%wi"],"out":["e"]},
                  {"op":"aten::signbit","args":["%x"],"out":["sb"]},
                  {"op":"aten::masked_fill.Scalar","args":["%x","%m",0.5],"out":["mf"]},
                  {"op":"aten::where.Scalar","args":["%g",1.5,-2.0],"out":["ws"]},
                  {"op":"aten::mul.Tensor","args":["%g","%x"],"out":["gx"]},
                  {"op":"aten::sum.dim_IntList","args":["%gx",[1]],"out":["gs"]},
                  {"op":"aten::eq.Tensor","args":["%g","%m"],"out":["q"]},
                  {"op":"aten::logical_not","args":["%q"],"out":["nq"]},
                  {"op":"aten::exp","args":["%l"],"out":["el"]},
                  {"op":"aten::sigmoid","args":["%m"],"out":["sm"]}],
         "outputs":["g","a","w","e","sb","mf","ws","gs","nq","g","el","sm"]})"},
};

TEST(KernelWriterTest, NamesEveryUncoveredNodeWithItsReason) {
  Program program = program_of(R"({"inputs":[{"name":"x","dtype":"float32","shape":[8,16]}],
      "nodes":[{"op":"aten::relu","args":["%x"],"out":["r"]},
               {"op":"aten::roll","args":["%r",[1],[1]],"out":["c"]},
               {"op":"aten::exp","args":["%c"],"out":["e"]},
               {"op":"aten::gelu","args":["%r"],"kwargs":{"approximate":"cubic"},"out":["g"]}],
      "outputs":["e","g"]})");
  auto written = write_kernel(program, Backend::cpu, 0);
  ASSERT_FALSE(written.has_value());
  // exp reads roll's output: only the root causes are named.
  ASSERT_EQ(written.error().size(), 2u);
  EXPECT_EQ(written.error()[0].node, 1);
  EXPECT_EQ(written.error()[0].op, "aten::roll");
  EXPECT_EQ(written.error()[1].node, 3);
  EXPECT_NE(written.error()[1].reason.find("cubic"), std::string::npos);
}

TEST(KernelWriterTest, EinsumOutsideOneGemmIsUncovered) {
  for (const std::string equation : {"ii,ij->j", "ij,kl->il", "...ij,jk->...ik"}) {
    Program program = program_of(R"({"inputs":[{"name":"a","dtype":"float32","shape":[4,4]},
        {"name":"b","dtype":"float32","shape":[4,4]}],
        "nodes":[{"op":"aten::einsum","args":[")" +
                                 equation + R"(",["%a","%b"]],"out":["e"]}],"outputs":["e"]})");
    auto written = write_kernel(program, Backend::cpu, 0);
    ASSERT_FALSE(written.has_value()) << equation;
    EXPECT_NE(written.error()[0].reason.find("einsum"), std::string::npos) << written.error()[0].reason;
  }
}

// KernelBench's L1-11: the product is the output as it is, so it is written there, not copied through a kernel of
// the writer's own (which on cuda would make cuBLAS plus a copy look like work; the own GEMM is used instead).
TEST(KernelWriterTest, CatAndStackOfMismatchedPartsAreUncovered) {
  Program program = program_of(R"({"inputs":[{"name":"a","dtype":"float32","shape":[2,3]},
                                             {"name":"b","dtype":"float32","shape":[3,3]}],
      "nodes":[{"op":"aten::cat","args":[["%a","%b"],1],"out":["c"]},
               {"op":"aten::stack","args":[["%a","%b"]],"out":["s"]}],"outputs":["c","s"]})");
  auto written = write_kernel(program, Backend::cpu, 0);
  ASSERT_FALSE(written.has_value());
  ASSERT_EQ(written.error().size(), 2u);
  EXPECT_EQ(written.error()[0].reason, "cat of tensors whose sizes differ off the joined dim");
  EXPECT_EQ(written.error()[1].reason, "stack of tensors of different shapes");
}

TEST(KernelWriterTest, EinsumProductIsWrittenInPlace) {
  Program program = program_of(R"({"inputs":[{"name":"x","dtype":"float32","shape":[2,3,5,8]},
      {"name":"w","dtype":"float32","shape":[8,6]}],
      "nodes":[{"op":"aten::einsum","args":["bijl,lk->bijk",["%x","%w"]],"out":["e"]}],"outputs":["e"]})");
  auto written = write_kernel(program, Backend::cuda, 0);
  ASSERT_TRUE(written.has_value()) << written.error()[0].reason;
  const std::string& source = written->files.at("kernels/kernel.cu");
  EXPECT_EQ(source.find("cublasSgemm"), std::string::npos);
  EXPECT_EQ(written->patterns, (std::vector<std::string>{"matmul"}));
}

// An integer or bool input is read only as an arithmetic operand beside a float32 one, where type promotion makes
// the result float32; alone (or through a view, a reduction, a product) it is refused.
TEST(KernelWriterTest, IntegerInputsOnlyBesideAFloatOperand) {
  for (const std::string node :
       {R"({"op":"aten::mul.Tensor","args":["%m","%m"],"out":["r"]})",
        R"({"op":"aten::sum","args":["%m"],"out":["r"]})", R"({"op":"aten::neg","args":["%m"],"out":["r"]})",
        R"({"op":"aten::unsqueeze","args":["%m",0],"out":["r"]})"}) {
    Program program = program_of(R"({"inputs":[{"name":"m","dtype":"int32","shape":[8],"init":{"randint":[0,4]}}],
        "nodes":[)" + node + R"(],"outputs":["r"]})");
    auto written = write_kernel(program, Backend::cpu, 0);
    ASSERT_FALSE(written.has_value()) << node;
    EXPECT_NE(written.error()[0].reason.find("int32"), std::string::npos) << written.error()[0].reason;
  }
}

TEST(KernelWriterTest, BoolValuesOnlyAsOperands) {
  for (const std::string node :
       {R"({"op":"aten::sum","args":["%g"],"out":["r"]})", R"({"op":"aten::neg","args":["%g"],"out":["r"]})",
        R"({"op":"aten::unsqueeze","args":["%g",0],"out":["r"]})",
        R"({"op":"aten::add.Tensor","args":["%g","%g"],"out":["r"]})",
        R"({"op":"aten::where.Scalar","args":["%g",1,0],"out":["r"]})",
        R"({"op":"aten::where.self","args":["%x","%x","%x"],"out":["r"]})",
        R"({"op":"aten::gt.Scalar","args":["%k",0],"out":["r"]})",
        R"({"op":"aten::masked_fill.Scalar","args":["%k","%g",1.0],"out":["r"]})"}) {
    Program program = program_of(R"({"inputs":[{"name":"x","dtype":"float32","shape":[8]},
        {"name":"k","dtype":"int32","shape":[8],"init":{"randint":[0,4]}}],
        "nodes":[{"op":"aten::gt.Scalar","args":["%x",0],"out":["g"]},)" +
                                 node + R"(],"outputs":["r"]})");
    auto written = write_kernel(program, Backend::cpu, 0);
    ASSERT_FALSE(written.has_value()) << node;
    EXPECT_EQ(written.error()[0].node, 1) << node << ": " << written.error()[0].reason;
  }
}

TEST(KernelWriterTest, NormsOfSingularValuesAreUncovered) {
  for (const std::string node : {R"({"op":"aten::linalg_norm","args":["%x",2,[0,1]],"out":["r"]})",
                                 R"({"op":"aten::linalg_matrix_norm","args":["%x",-2],"out":["r"]})",
                                 R"({"op":"aten::linalg_norm.ord_str","args":["%x","nuc"],"out":["r"]})",
                                 R"({"op":"aten::linalg_matrix_norm.str_ord","args":["%x","nuc"],"out":["r"]})"}) {
    Program program = program_of(R"({"inputs":[{"name":"x","dtype":"float32","shape":[4,6]}],"nodes":[)" + node +
                                 R"(],"outputs":["r"]})");
    auto written = write_kernel(program, Backend::cpu, 0);
    ASSERT_FALSE(written.has_value()) << node;
    EXPECT_NE(written.error()[0].reason.find("singular values"), std::string::npos) << written.error()[0].reason;
  }
}

TEST(KernelWriterTest, RefusesTensorsThatAreNotFloat32) {
  Program program = program_of(R"({"inputs":[{"name":"x","dtype":"float64","shape":[8]}],
      "nodes":[{"op":"aten::relu","args":["%x"],"out":["r"]}],"outputs":["r"]})");
  auto written = write_kernel(program, Backend::cpu, 0);
  ASSERT_FALSE(written.has_value());
  EXPECT_NE(written.error()[0].reason.find("float64"), std::string::npos);
}

TEST(KernelWriterTest, VariantsDifferAndCycle) {
  Program program = program_of(k_pattern_tasks[4].second);
  auto first = write_kernel(program, Backend::cpu, 0);
  auto second = write_kernel(program, Backend::cpu, 1);
  auto again = write_kernel(program, Backend::cpu, kernel_variant_count(Backend::cpu));
  ASSERT_TRUE(first && second && again);
  EXPECT_NE(first->files, second->files);
  EXPECT_EQ(first->files, again->files);
  EXPECT_EQ(first->patterns, (std::vector<std::string>{"matmul", "elementwise"}));
}

TEST(KernelWriterTest, CudaKernelsCallCublasAndNoHostLoops) {
  auto written = write_kernel(program_of(k_pattern_tasks[4].second), Backend::cuda, 0);
  ASSERT_TRUE(written.has_value());
  const std::string& source = written->files.at("kernels/kernel.cu");
  EXPECT_NE(source.find("cublasSgemmStridedBatched"), std::string::npos);
  EXPECT_NE(source.find("ctx->stream"), std::string::npos);
  EXPECT_EQ(source.find("omp"), std::string::npos);
}

// A long reduction is not one thread's loop on cuda: x's sum (3 units of 70000) and z's amax and norm (1 of 131072)
// are split over blocks, whose partials a second kernel combines; the others get a block a unit.
TEST(KernelWriterTest, CudaLongReductionsUseBlocks) {
  const auto& task =
      *std::ranges::find(k_pattern_tasks, std::string("long_reductions"), &std::pair<std::string, std::string>::first);
  auto written = write_kernel(program_of(task.second), Backend::cuda, 0);
  ASSERT_TRUE(written.has_value());
  const std::string& source = written->files.at("kernels/kernel.cu");
  EXPECT_NE(source.find("__global__ void part0(Bufs B)"), std::string::npos);  // the sum over x's rows
  EXPECT_NE(source.find("__global__ void part3(Bufs B)"), std::string::npos);  // z's amax
  EXPECT_EQ(source.find("__global__ void part1(Bufs B)"), std::string::npos);  // var: two passes, a block a unit
  EXPECT_NE(source.find("block_reduce(q, ra, 0)"), std::string::npos);
  EXPECT_NE(source.find("m = block_reduce(m, rf, 4)"), std::string::npos);  // softmax's row max
  EXPECT_NE(source.find("s = block_reduce(s, ra, 0)"), std::string::npos);  // its sum, and layer norm's
  EXPECT_NE(source.find("B.part0 = scratch"), std::string::npos);
  auto cpu = write_kernel(program_of(task.second), Backend::cpu, 0);
  ASSERT_TRUE(cpu.has_value());
  EXPECT_EQ(cpu->files.at("kernels/kernel.cpp").find("block_reduce"), std::string::npos);
}

TEST(KernelWriterTest, EveryPatternPassesVerificationOnCpu) {
  for (int variant : {0, 1}) {
    auto verdicts = verify_written(k_pattern_tasks, variant);
    for (const Json& record : verdicts) {
      EXPECT_TRUE(record["verify"]["ok"].get<bool>())
          << "variant " << variant << " " << record["task_id"] << ": " << record["verify"].dump();
    }
  }
}

// The same on the GPU, every variant (tests/gpu/run.sh runs it with CA_TEST_DEVICE=cuda): the cuda kernels of every
// pattern, cuBLAS and the writer's own GEMM, block and split reductions.
TEST(KernelWriterTest, EveryPatternPassesVerificationOnCuda) {
  const char* device = std::getenv("CA_TEST_DEVICE");
  if (device == nullptr || std::string(device) != "cuda") GTEST_SKIP() << "CA_TEST_DEVICE=cuda runs it (a GPU)";
  std::vector<std::pair<std::string, std::string>> tasks;
  for (const auto& task : k_pattern_tasks) {
    if (task.first != "slow_conv3d") tasks.push_back(task);
  }
  for (int variant = 0; variant < kernel_variant_count(Backend::cuda); ++variant) {
    auto verdicts = verify_written(tasks, variant, Backend::cuda);
    for (const Json& record : verdicts) {
      EXPECT_TRUE(record["verify"]["ok"].get<bool>())
          << "variant " << variant << " " << record["task_id"] << ": " << record["verify"].dump();
    }
  }
}

// The covered tasks of a task file pass ca-verify (cpu) and every other task has a reason per uncovered node. CI runs
// the synthesized examples; CA_BUILTIN_TASKS names another task file (docs/BUILTIN.md's measurement over a kept
// set), CA_BUILTIN_OUT a directory to keep candidates.jsonl, verified.jsonl and coverage.json in, and CA_BUILTIN_VERIFY
// a ca-verify to use instead of the build's (a copy beside its own ca-runner, for a long run while the build changes).
TEST(KernelWriterTest, CoveredTasksOfASetPassVerification) {
  const char* tasks_env = std::getenv("CA_BUILTIN_TASKS");
  const char* out_env = std::getenv("CA_BUILTIN_OUT");
  std::string tasks_path =
      tasks_env != nullptr ? tasks_env : std::string(CA_SOURCE_DIR) + "/examples/synth/tasks.jsonl";
  TempDir temp;
  fs::path out = out_env != nullptr ? fs::path(out_env) : temp.path;
  fs::create_directories(out);
  std::ifstream in(tasks_path);
  ASSERT_TRUE(in.good()) << tasks_path;
  std::ofstream candidates(out / "candidates.jsonl");
  Json coverage = {{"tasks", 0}, {"covered", 0}, {"patterns", Json::object()}, {"uncovered_ops", Json::object()}};
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    Json task = Json::parse(line);
    coverage["tasks"] = coverage["tasks"].get<int>() + 1;
    auto program = parse_program(task["program"]);
    ASSERT_TRUE(program.has_value()) << program.error();
    auto written = write_kernel(*program, Backend::cpu, 0);
    if (!written) {
      for (const Uncovered& node : written.error()) {
        EXPECT_FALSE(node.reason.empty()) << task["id"];
        Json& count = coverage["uncovered_ops"][node.op];
        count = count.is_null() ? 1 : count.get<int>() + 1;
      }
      continue;
    }
    coverage["covered"] = coverage["covered"].get<int>() + 1;
    for (const std::string& pattern : written->patterns) {
      Json& count = coverage["patterns"][pattern];
      count = count.is_null() ? 1 : count.get<int>() + 1;
    }
    Json files = Json::object();
    for (const auto& [path, source] : written->files) files[path] = source;
    candidates << Json({{"kind", "candidate"},
                        {"id", task["id"]},
                        {"task_id", task["id"]},
                        {"task", task},
                        {"backend", "cpu"},
                        {"files", files}})
                      .dump()
               << "\n";
  }
  candidates.close();
  std::ofstream(out / "coverage.json") << coverage.dump(2) << "\n";
  ASSERT_GT(coverage["covered"].get<int>(), 0);
  SubprocessOptions options;
  options.timeout = std::chrono::hours(6);
  const char* verify_env = std::getenv("CA_BUILTIN_VERIFY");
  std::string verify = verify_env != nullptr ? verify_env : std::string(CA_BIN_DIR) + "/ca-verify";
  auto result = run_subprocess(
      {verify, "-q", "-j", "2", "-o", (out / "verified.jsonl").string(), (out / "candidates.jsonl").string()}, options);
  ASSERT_TRUE(result.has_value());
  std::ifstream verified(out / "verified.jsonl");
  int judged = 0;
  for (std::string line; std::getline(verified, line); ++judged) {
    Json record = Json::parse(line);
    EXPECT_TRUE(record["verify"]["ok"].get<bool>()) << record["task_id"] << ": " << record["verify"]["message"];
  }
  EXPECT_EQ(judged, coverage["covered"].get<int>()) << result->err;
}

TEST(KernelWriterTest, CudaSourcesCompileWithNvcc) {
  if (!fs::exists("/usr/local/cuda/bin/nvcc")) GTEST_SKIP() << "no CUDA toolkit in /usr/local/cuda";
  TempDir dir;
  for (const auto& [name, text] : k_pattern_tasks) {
    auto written = write_kernel(program_of(text), Backend::cuda, 0);
    ASSERT_TRUE(written.has_value()) << name;
    fs::path source = dir.path / (name + ".cu");
    std::ofstream(source) << written->files.at("kernels/kernel.cu");
    SubprocessOptions options;
    options.timeout = std::chrono::minutes(5);
    auto result = run_subprocess({"/usr/local/cuda/bin/nvcc", "-arch=sm_90", "-std=c++17", "-O3", "-I",
                                  std::string(CA_SOURCE_DIR) + "/kernels/include", "-c", source.string(), "-o",
                                  (dir.path / (name + ".o")).string()},
                                 options);
    ASSERT_TRUE(result.has_value());
    EXPECT_TRUE(result->ok()) << name << ":\n" << result->err;
  }
}

}  // namespace
}  // namespace ca
