// The compiled baseline: one real compile through the bridge (about a minute
// on CPU), shared by every test here, and one real batch of three programs;
// the failure paths use stand-in "pythons" (shell scripts) that fail, hang, or
// copy that one package. CA_TEST_DEVICE=cuda runs them all on the GPU.
#include "torch/compiled.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <torch/version.h>

#include "ir/fingerprint.h"
#include "torch/interpreter.h"
#include "torch/tensors.h"
#include "util/atomic_file.h"
#include "util/sha256.h"
#include "util/subprocess.h"

namespace ca {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* k_program = R"({
  "inputs": [{"name": "x", "dtype": "float32", "shape": [8, 16]}],
  "params": [{"name": "w", "dtype": "float32", "shape": [16, 4]}],
  "nodes": [{"op": "aten::mm", "args": ["%x", "%w"], "out": ["t0"]},
            {"op": "aten::relu", "args": ["%t0"], "out": ["t1"]}],
  "outputs": ["t1"]})";

Program parse(const std::string& text) {
  auto program = parse_program(Json::parse(text));
  EXPECT_TRUE(program) << program.error();
  return *program;
}

at::Device test_device() {
  const char* name = std::getenv("CA_TEST_DEVICE");
  return at::Device(name != nullptr ? name : "cpu");
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// std::filesystem is avoided as in compiled.cpp (the wheel's libtorch.so
// exports an older one).
off_t file_size(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 ? info.st_size : -1;
}

void copy_file(const std::string& from, const std::string& to) {
  auto contents = read_file(from);
  ASSERT_TRUE(contents) << contents.error();
  ASSERT_TRUE(write_file_atomic(to, *contents));
}

// The files a cache directory holds, lock files left out (they stay by design).
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* stream = ::opendir(dir.c_str());
  EXPECT_NE(stream, nullptr) << dir;
  while (dirent* entry = stream == nullptr ? nullptr : ::readdir(stream)) {
    std::string name = entry->d_name;
    if (name != "." && name != ".." && !name.ends_with(".lock")) names.push_back(name);
  }
  if (stream != nullptr) ::closedir(stream);
  std::ranges::sort(names);
  return names;
}

// A stand-in for Python, called as `python BRIDGE --batch LIST --device ...`.
std::string fake_python(const std::string& dir, const std::string& name, const std::string& body) {
  std::string path = dir + "/" + name;
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  ::chmod(path.c_str(), 0700);
  return path;
}

// The package paths of a stand-in's batch list ($3).
constexpr const char* k_list_packages = R"sh(sed -n 's/.*"package":"\([^"]*\)".*/\1/p' "$3")sh";

// A shell line printing the bridge's report for one package.
std::string report_of(const std::string& package, const std::string& torch) {
  // Echoes the default mode (pytorch) as a real bridge does, so only what a test changes is wrong.
  return R"(echo "{\"package\": \")" + package + R"(\", \"torch\": \")" + torch +
         R"(\", \"tf32\": \"pytorch\", \"tf32_flags\": {\"matmul\": false, \"cudnn\": true}}")";
}

class CompiledTest : public ::testing::Test {
 protected:
  // The one real compile: with CA_CACHE_DIR set and no cache_dir option, so
  // the default location is exercised too.
  static void SetUpTestSuite() {
    std::string pattern = "/tmp/ca-compiled-test-XXXXXX";
    s_root = ::mkdtemp(pattern.data()) == nullptr ? "" : pattern;
    ASSERT_FALSE(s_root.empty()) << "cannot create " << pattern;
    const char* old = std::getenv("CA_CACHE_DIR");
    std::string saved = old == nullptr ? "" : old;
    setenv("CA_CACHE_DIR", s_root.c_str(), 1);
    auto start = Clock::now();
    s_first = new std::expected<CompiledProgram, std::string>(
        CompiledProgram::load_or_compile(parse(k_program), test_device(), CompiledOptions{}));
    s_first_seconds = seconds_since(start);
    if (old == nullptr) unsetenv("CA_CACHE_DIR");
    if (old != nullptr) setenv("CA_CACHE_DIR", saved.c_str(), 1);
  }
  static void TearDownTestSuite() {
    delete s_first;
    if (!s_root.empty()) (void)run_subprocess({"rm", "-rf", s_root});
  }
  void SetUp() override {
    ASSERT_NE(s_first, nullptr);
    ASSERT_TRUE(*s_first) << s_first->error();
  }

  // A fresh cache directory for one test.
  static std::string dir(const std::string& name) {
    std::string path = s_root + "/" + name;
    ::mkdir(path.c_str(), 0755);
    return path;
  }
  // A python that "compiles" every package of its batch list by copying the
  // real package (`before` runs first, `each` after each copy).
  static std::string copying_python(const std::string& name = "copy.sh", const std::string& before = "",
                                    const std::string& each = "") {
    return fake_python(s_root, name,
                       before + "\nfor p in $(" + k_list_packages + "); do\n  cp '" + (*s_first)->path() +
                           "' \"$p\"\n  " + report_of("$p", TORCH_VERSION "+cpu") + "\n" + each + "\ndone");
  }

  static std::string s_root;
  static std::expected<CompiledProgram, std::string>* s_first;
  static double s_first_seconds;
};

std::string CompiledTest::s_root;
std::expected<CompiledProgram, std::string>* CompiledTest::s_first = nullptr;
double CompiledTest::s_first_seconds = 0;

TEST_F(CompiledTest, CompilesOnceAndMatchesTheInterpreter) {
  CompiledProgram& compiled = **s_first;
  std::cout << "[ compile  ] " << s_first_seconds << " s (bridge " << compiled.compile_seconds() << " s)\n";
  EXPECT_FALSE(compiled.cached());
  EXPECT_GT(compiled.compile_seconds(), 0);
  EXPECT_EQ(compiled.key().size(), 64u);
  EXPECT_EQ(compiled.path(), s_root + "/compiled/" + compiled.key() + ".pt2");
  EXPECT_EQ(entries(s_root + "/compiled"),
            (std::vector<std::string>{compiled.key() + ".json", compiled.key() + ".pt2"}));
  auto record = Json::parse(*read_file(s_root + "/compiled/" + compiled.key() + ".json"));
  EXPECT_EQ(record["sha256"], sha256_hex(*read_file(compiled.path())));
  // The bridge's own echo of the torch.backends flags it compiled under: PyTorch's defaults.
  EXPECT_EQ(record["tf32"], "pytorch");
  EXPECT_EQ(record["tf32_flags"], (Json{{"matmul", false}, {"cudnn", true}}));

  Program program = parse(k_program);
  auto interpreter = Interpreter::create(program);
  ASSERT_TRUE(interpreter) << interpreter.error();
  for (uint64_t seed : {1, 2}) {
    auto tensors = make_tensors(program, seed, test_device());
    auto expected = interpreter->run(tensors);
    ASSERT_TRUE(expected) << expected.error();
    auto outputs = compiled.run(tensors);
    ASSERT_TRUE(outputs) << outputs.error();
    ASSERT_EQ(outputs->size(), 1u);
    EXPECT_EQ((*outputs)[0].sizes(), (*expected)[0].sizes());
    EXPECT_TRUE(at::allclose((*outputs)[0], (*expected)[0], 1e-5, 1e-5)) << "seed " << seed;
    EXPECT_GT((*outputs)[0].abs().sum().item<double>(), 0) << "all zero: the comparison would prove nothing";
  }
}

TEST_F(CompiledTest, SecondLoadIsCachedAndFast) {
  CompiledOptions options;
  options.cache_dir = s_root + "/compiled";
  options.python = "/nonexistent/python";  // a compile would fail
  auto start = Clock::now();
  auto again = CompiledProgram::load_or_compile(parse(k_program), test_device(), options);
  double seconds = seconds_since(start);
  ASSERT_TRUE(again) << again.error();
  std::cout << "[ cached   ] " << seconds << " s\n";
  EXPECT_TRUE(again->cached());
  EXPECT_EQ(again->compile_seconds(), 0);
  EXPECT_EQ(again->key(), (*s_first)->key());
  EXPECT_LT(seconds, 10);
  Program program = parse(k_program);
  auto tensors = make_tensors(program, 3, test_device());
  auto outputs = again->run(tensors);
  ASSERT_TRUE(outputs) << outputs.error();
  EXPECT_TRUE(at::allclose((*outputs)[0], at::relu(at::mm(tensors[0], tensors[1])), 1e-5, 1e-5));
}

TEST_F(CompiledTest, KeyIgnoresNamesAndSeesTf32ShapesAndCpuThreads) {
  Program program = parse(k_program);
  std::string renamed = k_program;
  for (auto [from, to] : {std::pair{"\"x\"", "\"input\""}, {"%x", "%input"}})
    renamed.replace(renamed.find(from), std::string(from).size(), to);
  CompiledOptions options;
  auto text = compiled_key_text(program, test_device(), options);
  ASSERT_TRUE(text) << text.error();
  EXPECT_NE(text->find("torch " TORCH_VERSION "\n"), std::string::npos);
  EXPECT_NE(text->find("device " + test_device().str() + " "), std::string::npos);
  EXPECT_EQ(*compiled_key_text(parse(renamed), test_device(), options), *text);
  EXPECT_NE(text->find("\ntf32 pytorch\n"), std::string::npos);
  for (Tf32Mode mode : {Tf32Mode::none, Tf32Mode::all}) {
    CompiledOptions tf32 = options;
    tf32.tf32 = mode;
    EXPECT_NE(*compiled_key_text(program, test_device(), tf32), *text);
  }
  std::string reshaped = k_program;
  reshaped.replace(reshaped.find("[8, 16]"), 7, "[9, 16]");
  EXPECT_NE(*compiled_key_text(parse(reshaped), test_device(), options), *text);
  // The generated C++ fixes its OpenMP threads; cuda kernels have none.
  CompiledOptions threads = options;
  threads.num_threads = 4;
  EXPECT_NE(*compiled_key_text(program, at::kCPU, threads), *compiled_key_text(program, at::kCPU, options));
  EXPECT_NE(compiled_key_text(program, at::kCPU, threads)->find("\nthreads 4\n"), std::string::npos);
  if (test_device().is_cuda()) {
    EXPECT_EQ(*compiled_key_text(program, test_device(), threads), *text);
  }
}

TEST_F(CompiledTest, MissingPythonIsAClearError) {
  CompiledOptions options;
  options.cache_dir = dir("no-python");
  options.python = "/nonexistent/python";
  auto compiled = CompiledProgram::load_or_compile(parse(k_program), test_device(), options);
  ASSERT_FALSE(compiled);
  EXPECT_NE(compiled.error().find("cannot run the bridge (/nonexistent/python "), std::string::npos)
      << compiled.error();
  EXPECT_TRUE(entries(options.cache_dir).empty());
}

TEST_F(CompiledTest, BridgeFailureCarriesItsStderrAndLeavesNothing) {
  CompiledOptions options;
  options.cache_dir = dir("bridge-fails");
  options.python = fake_python(
      s_root, "fails.sh", "echo 'noise' >&2\necho 'compile_task.py: error: RuntimeError: no lowering' >&2\nexit 1");
  auto compiled = CompiledProgram::load_or_compile(parse(k_program), test_device(), options);
  ASSERT_FALSE(compiled);
  EXPECT_NE(compiled.error().find(
                "the bridge exited with status 1: noise; compile_task.py: error: RuntimeError: no lowering"),
            std::string::npos)
      << compiled.error();
  EXPECT_TRUE(entries(options.cache_dir).empty());
}

TEST_F(CompiledTest, TorchVersionMismatchIsRefused) {
  CompiledOptions options;
  options.cache_dir = dir("other-torch");
  options.python =
      fake_python(s_root, "old-torch.sh",
                  std::string("p=$(") + k_list_packages + ")\ntouch \"$p\"\n" + report_of("$p", "2.1.0+cu118"));
  auto compiled = CompiledProgram::load_or_compile(parse(k_program), test_device(), options);
  ASSERT_FALSE(compiled);
  EXPECT_NE(compiled.error().find("the bridge's torch is 2.1.0+cu118 but LibTorch is " TORCH_VERSION),
            std::string::npos)
      << compiled.error();
  EXPECT_TRUE(entries(options.cache_dir).empty());
}

TEST_F(CompiledTest, CompileTimeoutLeavesNothing) {
  CompiledOptions options;
  options.cache_dir = dir("slow");
  options.python = fake_python(s_root, "slow.sh", "sleep 30");
  options.timeout_s = 1;
  auto start = Clock::now();
  auto compiled = CompiledProgram::load_or_compile(parse(k_program), test_device(), options);
  ASSERT_FALSE(compiled);
  EXPECT_LT(seconds_since(start), 10);
  EXPECT_NE(compiled.error().find("did not finish within 1 s"), std::string::npos) << compiled.error();
  EXPECT_TRUE(entries(options.cache_dir).empty());
}

// A damaged package fails its checksum and is compiled again; a good one with
// a damaged record likewise.
TEST_F(CompiledTest, CorruptPackageIsCompiledAgain) {
  CompiledOptions options;
  options.cache_dir = dir("corrupt");
  options.python = copying_python();
  const std::string key = (*s_first)->key();
  std::string package = options.cache_dir + "/" + key + ".pt2";
  copy_file((*s_first)->path(), package);
  copy_file(s_root + "/compiled/" + key + ".json", options.cache_dir + "/" + key + ".json");
  ASSERT_EQ(::truncate(package.c_str(), file_size(package) / 2), 0);

  auto compiled = CompiledProgram::load_or_compile(parse(k_program), test_device(), options);
  ASSERT_TRUE(compiled) << compiled.error();
  EXPECT_FALSE(compiled->cached());
  EXPECT_EQ(file_size(package), file_size((*s_first)->path()));
  Program program = parse(k_program);
  auto tensors = make_tensors(program, 4, test_device());
  auto outputs = compiled->run(tensors);
  ASSERT_TRUE(outputs) << outputs.error();
  EXPECT_TRUE(at::allclose((*outputs)[0], at::relu(at::mm(tensors[0], tensors[1])), 1e-5, 1e-5));

  std::ofstream(options.cache_dir + "/" + key + ".json") << "{\"sha256\": \"0000\"}\n";
  auto again = CompiledProgram::load_or_compile(parse(k_program), test_device(), options);
  ASSERT_TRUE(again) << again.error();
  EXPECT_FALSE(again->cached());
  EXPECT_EQ(entries(options.cache_dir), (std::vector<std::string>{key + ".json", key + ".pt2"}));
}

TEST_F(CompiledTest, ConcurrentLoadsCompileOnce) {
  CompiledOptions options;
  options.cache_dir = dir("concurrent");
  std::string log = options.cache_dir + "/../concurrent.log";
  options.python = copying_python("copy-slowly.sh", "echo compile >> '" + log + "'\nsleep 1");
  std::optional<std::expected<CompiledProgram, std::string>> results[2];
  std::thread other(
      [&] { results[1].emplace(CompiledProgram::load_or_compile(parse(k_program), test_device(), options)); });
  results[0].emplace(CompiledProgram::load_or_compile(parse(k_program), test_device(), options));
  other.join();
  ASSERT_TRUE(*results[0]) << results[0]->error();
  ASSERT_TRUE(*results[1]) << results[1]->error();
  EXPECT_NE((*results[0])->cached(), (*results[1])->cached());
  EXPECT_EQ(*read_file(log), "compile\n");
}

TEST_F(CompiledTest, OutputCountMismatchIsAnError) {
  // Same inputs, two outputs; the stand-in hands over the one-output package.
  std::string two_outputs = k_program;
  two_outputs.replace(two_outputs.find("\"outputs\": [\"t1\"]"), 17, "\"outputs\": [\"t1\", \"t0\"]");
  CompiledOptions options;
  options.cache_dir = dir("two-outputs");
  options.python = copying_python();
  Program program = parse(two_outputs);
  auto compiled = CompiledProgram::load_or_compile(program, test_device(), options);
  ASSERT_TRUE(compiled) << compiled.error();
  auto outputs = compiled->run(make_tensors(program, 1, test_device()));
  ASSERT_FALSE(outputs);
  EXPECT_EQ(outputs.error(), "compiled program: the package returned 1 outputs, the program has 2");
}

TEST_F(CompiledTest, RunChecksItsTensors) {
  CompiledProgram& compiled = **s_first;
  Program program = parse(k_program);
  auto tensors = make_tensors(program, 1, test_device());
  auto fewer = compiled.run({tensors[0]});
  ASSERT_FALSE(fewer);
  EXPECT_EQ(fewer.error(), "compiled program: expected 2 tensors (inputs then params), got 1");
  auto shape = compiled.run({tensors[0].reshape({16, 8}), tensors[1]});
  ASSERT_FALSE(shape);
  EXPECT_EQ(shape.error(), "compiled program: tensor 0 (x): shape [16, 8], expected [8, 16]");
  auto dtype = compiled.run({tensors[0].to(at::kDouble), tensors[1]});
  ASSERT_FALSE(dtype);
  EXPECT_EQ(dtype.error(), "compiled program: tensor 0 (x): dtype Double, expected float32");
  auto strided = compiled.run({tensors[0], at::empty({4, 16}, tensors[1].options()).t()});
  ASSERT_FALSE(strided);
  EXPECT_NE(strided.error().find("tensor 1 (w): not contiguous"), std::string::npos) << strided.error();
}

// A batch of small programs, one of them broken: the good ones are compiled
// by one bridge process (a real one, behind a wrapper that logs each start),
// the broken one fails alone, and a second call finds the good ones cached.
TEST_F(CompiledTest, BatchCompilesInOneProcessAndAFailureStaysAlone) {
  const std::vector<std::string> texts = {
      R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [4, 8]}],
          "nodes": [{"op": "aten::sigmoid", "args": ["%x"], "out": ["y"]}], "outputs": ["y"]})",
      R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [4, 8]}],
          "nodes": [{"op": "aten::no_such_op", "args": ["%x"], "out": ["y"]}], "outputs": ["y"]})",
      R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [3, 5]}],
          "nodes": [{"op": "aten::neg", "args": ["%x"], "out": ["y"]}], "outputs": ["y"]})"};
  std::vector<Program> programs;
  for (const auto& text : texts) programs.push_back(parse(text));
  std::vector<const Program*> pointers;
  for (const auto& program : programs) pointers.push_back(&program);

  CompiledOptions options;
  options.cache_dir = dir("batch");
  const char* python = std::getenv("CA_PYTHON");
  std::string real = python != nullptr ? python : CA_SOURCE_DIR "/.venv/bin/python";
  std::string log = s_root + "/batch.log";
  options.python = fake_python(s_root, "logged.sh", "echo \"$2 $3\" >> '" + log + "'\nexec '" + real + "' \"$@\"");
  auto start = Clock::now();
  auto results = compile_missing(pointers, test_device(), options, 1);
  std::cout << "[ batch    ] 3 programs in " << seconds_since(start) << " s\n";
  ASSERT_EQ(results.size(), 3u);
  ASSERT_TRUE(results[0]) << results[0].error();
  EXPECT_EQ(*results[0], PackageState::compiled);
  ASSERT_TRUE(results[2]) << results[2].error();
  EXPECT_EQ(*results[2], PackageState::compiled);
  ASSERT_FALSE(results[1]);
  EXPECT_NE(results[1].error().find("compiling " + fingerprint(programs[1]) + " for "), std::string::npos)
      << results[1].error();
  EXPECT_NE(results[1].error().find("no_such_op"), std::string::npos) << results[1].error();
  // One bridge started, in the --batch form, for all three.
  auto lines = read_file(log);
  ASSERT_TRUE(lines);
  EXPECT_EQ(std::count(lines->begin(), lines->end(), '\n'), 1) << *lines;
  EXPECT_EQ(lines->find("--batch "), 0u) << *lines;
  EXPECT_EQ(entries(options.cache_dir).size(), 4u);  // two packages and their records

  options.python = "/nonexistent/python";  // a compile would fail
  auto again = compile_missing(pointers, test_device(), options, 1);
  ASSERT_TRUE(again[0] && again[2]);
  EXPECT_EQ(*again[0], PackageState::cached);
  EXPECT_EQ(*again[2], PackageState::cached);
  EXPECT_FALSE(again[1]);
  auto loaded = CompiledProgram::load_or_compile(programs[2], test_device(), options);
  ASSERT_TRUE(loaded) << loaded.error();
  EXPECT_TRUE(loaded->cached());
  auto tensors = make_tensors(programs[2], 5, test_device());
  auto outputs = loaded->run(tensors);
  ASSERT_TRUE(outputs) << outputs.error();
  EXPECT_TRUE(at::equal((*outputs)[0], at::neg(tensors[0])));
}

TEST_F(CompiledTest, JobsSplitTheMissingOnesOverBridgeProcesses) {
  std::vector<Program> programs;
  for (int rows : {2, 3, 4, 5, 6}) {
    std::string text = k_program;
    text.replace(text.find("[8, 16]"), 7, "[" + std::to_string(rows) + ", 16]");
    programs.push_back(parse(text));
  }
  std::vector<const Program*> pointers;
  for (const auto& program : programs) pointers.push_back(&program);
  CompiledOptions options;
  options.cache_dir = dir("jobs");
  std::string log = s_root + "/jobs.log";
  options.python = copying_python("copy-logged.sh", "echo start >> '" + log + "'");
  // One already cached: not in any batch.
  ASSERT_TRUE(compile_missing(std::span(pointers).subspan(0, 1), test_device(), options, 2)[0]);
  ASSERT_EQ(::unlink(log.c_str()), 0);

  auto results = compile_missing(pointers, test_device(), options, 2);
  EXPECT_EQ(*read_file(log), "start\nstart\n");
  ASSERT_EQ(results.size(), 5u);
  EXPECT_EQ(*results[0], PackageState::cached);
  for (size_t i = 1; i < 5; ++i) {
    ASSERT_TRUE(results[i]) << results[i].error();
    EXPECT_EQ(*results[i], PackageState::compiled);
  }
  EXPECT_EQ(entries(options.cache_dir).size(), 10u);
}

// Packages a bridge reported before it died count; the rest carry its stderr.
TEST_F(CompiledTest, ABridgeThatDiesKeepsWhatItReported) {
  std::vector<Program> programs = {parse(k_program), parse(k_program)};
  std::string wider = k_program;
  wider.replace(wider.find("[16, 4]"), 7, "[16, 5]");
  programs[1] = parse(wider);
  std::vector<const Program*> pointers = {&programs[0], &programs[1]};
  CompiledOptions options;
  options.cache_dir = dir("dies");
  options.python = copying_python("dies.sh", "", "echo 'Segmentation fault' >&2; exit 139");
  auto results = compile_missing(pointers, test_device(), options, 1);
  ASSERT_TRUE(results[0]) << results[0].error();
  ASSERT_FALSE(results[1]);
  EXPECT_NE(results[1].error().find("the bridge exited with status 139: Segmentation fault"), std::string::npos)
      << results[1].error();
  EXPECT_EQ(entries(options.cache_dir).size(), 2u);
}

}  // namespace
}  // namespace ca
